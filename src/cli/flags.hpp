// Flags shared by several subcommands: the timing overrides and the regression gate's.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "core/outputs.hpp"
#include "core/result_csv.hpp"
#include "core/sweep.hpp"

namespace kvbench::cli {

// Command-line values that override a config's `settings:` block.
struct Overrides {
  std::optional<std::uint64_t> seed;  // from --seed through parse_seed_flag
  std::optional<std::string> mode, l2_flush;
  std::optional<int> warmup, min_samples, launches_per_sample;
  std::optional<double> min_time_s, target_noise, timeout_s;
  std::optional<std::string> rotate;   // "auto" or N
  bool hot_inputs = false;             // --hot-inputs: sets settings.hot_inputs (never clears it)
  std::optional<std::string> timer;    // --timer events|cupti
  std::optional<std::string> context;  // --context (replaces the config's, hot_inputs included)
  std::optional<int> layer_mib;        // --layer-mib
};
// Throws std::invalid_argument when the result asks for the cupti timer outside graph mode.
void apply(const Overrides& o, RunSettings& s);

// A number in (lo, hi], or [lo, hi] when `lo_inclusive`; CLI11 prefixes the flag's name.
CLI::Validator number_in(double lo, bool lo_inclusive, double hi);

// An integer flag read as its YAML key is (YAML 1.2 core schema: "010" is 10, "0x10" 16, "0o10"
// 8), in [lo, hi], and handed on as decimal; anything else (overflow included) is refused, CLI11
// prefixing the flag's name.
CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi);

// A flag whose value may not be empty: `--devices ''` is refused, not taken as absent.
CLI::Validator non_empty();

// The timing flags of `run`, `flush-study` and `bounds`; each is range-checked here so that a
// nonsense value is refused with the flag named, as the YAML keys are.
void add_timing_flags(CLI::App* cmd, Overrides& o);

// --rotate and --hot-inputs (settings.rotate, settings.hot_inputs), on `run`.
void add_rotation_flags(CLI::App* cmd, Overrides& o);

// --timer, --context and --layer-mib (settings.timer, .context, .layer_mib), on `run`.
void add_timer_flag(CLI::App* cmd, Overrides& o);

// --max-tokens N on `list`, `run` and `bounds`: only the cases (rows) with num_tokens <= N, their
// numbers unchanged. kAllTokens (the default) keeps every case.
inline constexpr std::int64_t kAllTokens = std::int64_t{1} << 40;
void add_max_tokens_flag(CLI::App* cmd, std::int64_t& max_tokens);

// The regression gate's flags, shared by `compare` and `run --baseline`.
struct GateFlags {
  std::string baseline;
  std::string threshold = "5";
  std::string other_board_threshold = "8";  // --other-board-threshold
  std::string junit;
  bool allow_device_mismatch = false;
  std::string variants;  // compare --variants BASE,CURRENT; empty: rows matched by variant too
};

// --threshold, --junit and --allow-device-mismatch on `compare`, and on `run` where each
// needs `needs` (--baseline).
void add_gate_flags(CLI::App* cmd, GateFlags& flags, CLI::Option* needs);

// "5" and "5%" both mean 5 percent. Throws std::invalid_argument naming the flag.
double parse_threshold(const std::string& given, const std::string& flag = "--threshold");

// Gates the CSV at `current_path` against `baseline` (already read): markdown on stdout, JUnit
// if asked, one line on stderr when it fails. Returns the exit code; throws on bad input.
int gate(const ResultTable& baseline, const std::string& current_path, const GateFlags& flags);

// The lock of one output written by this process (core/outputs.hpp, OutputLock), in kvbench's
// cache folder (locks/); an output that is a device or FIFO (written in place) is not locked.
std::optional<OutputLock> lock_output(const std::string& flag, const std::string& path);

// Before `run --baseline` times anything: the baseline's sidecar (when it has one) against the
// settings the run will record (settings_to_json). Throws GateError on a timing mismatch, the one
// gate() would find after the sweep.
void check_baseline_context(const std::string& baseline, const std::string& settings_json);

// Flushes stdout; throws std::runtime_error when what was written did not reach it (/dev/full).
void check_stdout();

// Refuses, before any work, a path the sidecar records (a config, an output, a shard) that is not
// UTF-8 without control characters: JSON cannot hold it. `flag` names it ("--output").
void check_recorded_path(const std::string& flag, const std::string& path);

// --seed: a YAML 1.2 integer in [0, 2^64-1], as settings.seed. Throws naming the flag.
std::uint64_t parse_seed_flag(const std::string& text);

}  // namespace kvbench::cli
