#include "cli/flags.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/file_io.hpp"
#include "core/gate.hpp"
#include "core/outputs.hpp"
#include "core/sidecar.hpp"
#include "plugin/loader.hpp"

namespace kvbench::cli {

void apply(const Overrides& o, RunSettings& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.mode) s.mode = from_string<TimingMode>(*o.mode);
  if (o.l2_flush) s.l2_flush = from_string<L2Flush>(*o.l2_flush);
  if (o.warmup) s.warmup = *o.warmup;
  if (o.min_samples) s.min_samples = *o.min_samples;
  if (o.launches_per_sample) s.launches_per_sample = *o.launches_per_sample;
  if (o.min_time_s) s.min_time_s = *o.min_time_s;
  if (o.target_noise) s.target_noise = *o.target_noise;
  if (o.timeout_s) s.timeout_s = *o.timeout_s;
  if (o.rotate) s.rotate = parse_rotate(*o.rotate);
  if (o.hot_inputs) s.hot_inputs = true;
  if (o.timer) s.timer = from_string<Timer>(*o.timer);
  if (o.layer_mib) s.layer_mib = *o.layer_mib;
  if (o.context) {
    s.context = from_string<Context>(*o.context);
    s.hot_inputs = o.hot_inputs;  // the flag's context replaces the config's
  }
  try {
    resolve_context(s);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(o.context ? "--context" : "--hot-inputs") + ": " +
                                e.what());
  }
  if (s.timer == Timer::cupti && s.mode != TimingMode::graph)
    throw std::invalid_argument(std::string(o.timer ? "--timer" : "--mode") +
                                ": the cupti timer times graph replays only (mode " +
                                std::string(to_string(s.mode)) + ")");
}

CLI::Validator number_in(double lo, bool lo_inclusive, double hi) {
  std::ostringstream range;
  range << (lo_inclusive ? "[" : "(") << lo << ", " << hi << "]";
  const std::string text = range.str();
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || value.empty()) return "expected a number, got '" + value + "'";
        const bool ok = (lo_inclusive ? v >= lo : v > lo) && v <= hi;  // false for NaN
        return ok ? std::string() : "expected a number in " + text + ", got " + value;
      },
      "NUMBER in " + text);
}

CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        std::uint64_t v = 0;
        if (!parse_uint64(value, v) || v < lo || v > hi)
          return "expected an integer in " + range + ", got '" + value + "'";
        value = std::to_string(v);
        return "";
      },
      "INTEGER in " + range);
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "expected a value, got ''" : "";
      },
      "");
}

void add_timing_flags(CLI::App* cmd, Overrides& o) {
  const auto names = [](const auto& values) {
    std::vector<std::string> v;
    for (auto x : values) v.emplace_back(to_string(x));
    return v;
  };
  cmd->add_option("--mode", o.mode, "Timing mode (settings.mode)")
      ->check(CLI::IsMember(names(all_values<TimingMode>())));
  cmd->add_option("--l2-flush", o.l2_flush, "How cold mode empties L2 (settings.l2_flush)")
      ->check(CLI::IsMember(names(all_values<L2Flush>())));
  cmd->add_option("--warmup", o.warmup, "Untimed samples before sampling (settings.warmup)")
      ->transform(integer_in(1, kMaxWarmup));
  cmd->add_option("--min-samples", o.min_samples, "Timed samples, at least (settings.min_samples)")
      ->transform(integer_in(1, kMaxMinSamples));
  cmd->add_option("--min-time", o.min_time_s,
                  "Seconds of timed windows, at least (settings.min_time_s)")
      ->check(number_in(0, true, kMaxTimeoutS));
  cmd->add_option("--target-noise", o.target_noise,
                  "Stop once the median's 95% CI is within this fraction (settings.target_noise)")
      ->check(number_in(0, false, 1));
  cmd->add_option("--timeout", o.timeout_s,
                  "Wall-clock seconds of sampling per case, at most (settings.timeout_s)")
      ->check(number_in(0, false, kMaxTimeoutS));
  cmd->add_option("--launches-per-sample", o.launches_per_sample,
                  "Launches per timed window in hot and graph modes (settings.launches_per_sample)")
      ->transform(integer_in(1, kMaxLaunchesPerSample));
}

void add_rotation_flags(CLI::App* cmd, Overrides& o) {
  cmd->add_option("--rotate", o.rotate,
                  "Independent buffer sets per case, launch i on set i mod N: N or auto "
                  "(settings.rotate; docs/measurement.md)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              parse_rotate(v);
              return "";
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
          },
          "auto|N"));
  cmd->add_flag("--hot-inputs", o.hot_inputs,
                "A producer kernel writes each set's inputs right before its launch: inputs hot "
                "in L2, caches cold (settings.hot_inputs)");
}

void add_max_tokens_flag(CLI::App* cmd, std::int64_t& max_tokens) {
  cmd->add_option("--max-tokens", max_tokens,
                  "Only cases with num_tokens up to this (default: all; numbers unchanged)")
      ->transform(integer_in(1, static_cast<std::uint64_t>(kAllTokens)));
}

void add_timer_flag(CLI::App* cmd, Overrides& o) {
  std::vector<std::string> names;
  for (Timer t : all_values<Timer>()) names.emplace_back(to_string(t));
  cmd->add_option("--timer", o.timer,
                  "What reads a graph replay's time: events around it, or each kernel's own "
                  "start and end from CUPTI (settings.timer; docs/measurement.md)")
      ->check(CLI::IsMember(names));
  std::vector<std::string> contexts;
  for (Context c : all_values<Context>()) contexts.emplace_back(to_string(c));
  cmd->add_option("--context", o.context,
                  "What runs before each timed launch, not counted (settings.context; "
                  "docs/measurement.md)")
      ->check(CLI::IsMember(contexts));
  cmd->add_option("--layer-mib", o.layer_mib,
                  "Context layer: MiB of weights its predecessor reads (settings.layer_mib)")
      ->transform(integer_in(1, kMaxLayerMib));
}

void add_gate_flags(CLI::App* cmd, GateFlags& flags, CLI::Option* needs) {
  auto* t = cmd->add_option("--threshold", flags.threshold,
                            "Slower/faster only beyond this change, in percent (default 5)");
  auto* o = cmd->add_option("--other-board-threshold", flags.other_board_threshold,
                            "The threshold of a case whose baseline ran on another board of "
                            "its model, in percent (default 8)");
  auto* j = cmd->add_option("--junit", flags.junit, "Also write a JUnit XML report here")
                ->check(non_empty());
  auto* d = cmd->add_flag("--allow-device-mismatch", flags.allow_device_mismatch,
                          "Compare rows measured on different devices");
  if (needs) {
    t->needs(needs);
    o->needs(needs);
    j->needs(needs);
    d->needs(needs);
  }
}

std::uint64_t parse_seed_flag(const std::string& text) {
  std::uint64_t v = 0;
  if (!parse_uint64(text, v))
    throw std::invalid_argument(
        "--seed: expected a non-negative integer up to "
        "18446744073709551615, got '" +
        text + "'");
  return v;
}

double parse_threshold(const std::string& given, const std::string& flag) {
  std::string text = given;
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  const double pct = std::strtod(text.c_str(), &end);
  // Decimal digits with at most one point: strtod alone also takes " 5", "0x10" and "1e1".
  const bool decimal = text.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(text.begin(), text.end(), '.') <= 1;
  if (text.empty() || !decimal || end != text.c_str() + text.size() || !(pct >= 0 && pct < 1000))
    throw std::invalid_argument(flag + ": '" + given + "' is not a percentage in [0, 1000)");
  return pct / 100.0;
}

void check_recorded_path(const std::string& flag, const std::string& path) {
  if (!plugin::plain_utf8(path))
    throw std::invalid_argument(flag + " " + plugin::plugin_text(path.c_str()) +
                                ": not UTF-8 without control characters, which the sidecar needs "
                                "to record it; rename or link the file");
}

void check_stdout() {
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
    throw std::runtime_error("cannot write standard output");
}

namespace {

// A regular file's text, empty or not; nothing for anything else (a missing file, a FIFO, a
// device). A sidecar that is there is read, so a cut or empty one is refused, not passed over.
std::optional<std::string> regular_file_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return read_file(path);
}

// The gate's refusal of runs timed differently; `why` is "" when they agree.
void refuse_timing_mismatch(const std::string& why) {
  if (!why.empty())
    throw GateError("timing mismatch: " + why +
                    "; runs timed differently are not compared (docs/gate.md)");
}

}  // namespace

std::optional<OutputLock> lock_output(const std::string& flag, const std::string& path) {
  std::optional<OutputLock> lock;
  if (!is_special_file(path))
    lock.emplace(flag, path,
                 cache_dir(std::getenv("KVBENCH_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                           std::getenv("HOME")) +
                     "/locks");
  return lock;
}

void check_baseline_context(const std::string& baseline, const std::string& settings_json) {
  if (const std::optional<std::string> b = regular_file_text(sidecar_path(baseline)))
    refuse_timing_mismatch(
        run_context_mismatch(*b, sidecar_path(baseline), settings_json, "this run"));
}

int gate(const ResultTable& baseline, const std::string& current_path, const GateFlags& flags) {
  const GateOptions opt{parse_threshold(flags.threshold), flags.allow_device_mismatch,
                        parse_threshold(flags.other_board_threshold, "--other-board-threshold")};
  // The sidecars are read too (the timing context below).
  check_outputs({{"--junit", flags.junit}},
                {{"the baseline", flags.baseline},
                 {"the baseline's sidecar", sidecar_path(flags.baseline)},
                 {"the current CSV", current_path},
                 {"the current CSV's sidecar", sidecar_path(current_path)}});
  ResultTable current = read_results(current_path);
  ResultTable selected;  // baseline's rows of the BASE variant, under --variants
  if (!flags.variants.empty()) {
    const std::size_t comma = flags.variants.find(',');
    const std::string base_variant = flags.variants.substr(0, comma);
    const std::string current_variant = flags.variants.substr(comma + 1);
    selected = rows_of_variant(baseline, base_variant, current_variant);
    current = rows_of_variant(current, current_variant, current_variant);
  }
  // How the runs were timed beyond the rows' columns (hot inputs), when both have a sidecar.
  const std::optional<std::string> b = regular_file_text(sidecar_path(flags.baseline)),
                                   c = regular_file_text(sidecar_path(current_path));
  if (b && c)
    refuse_timing_mismatch(
        timing_context_mismatch(*b, sidecar_path(flags.baseline), *c, sidecar_path(current_path)));
  // Both runs' samples (run --save-samples), when both have them: verdicts from the samples.
  std::map<std::vector<std::string>, SampleSet> base_samples, cur_samples;
  GateOptions with_samples = opt;
  const std::optional<std::string> bs = regular_file_text(flags.baseline + kSamplesSuffix),
                                   cs = regular_file_text(current_path + kSamplesSuffix);
  if (bs && cs && flags.variants.empty()) {
    base_samples = parse_samples(*bs, flags.baseline + kSamplesSuffix);
    cur_samples = parse_samples(*cs, current_path + kSamplesSuffix);
    with_samples.baseline_samples = &base_samples;
    with_samples.current_samples = &cur_samples;
  }
  const GateReport report =
      run_gate(flags.variants.empty() ? baseline : selected, current, with_samples);
  markdown_report(report, std::cout);
  check_stdout();
  if (!flags.junit.empty()) write_file_atomic(flags.junit, junit_report(report));
  const int code = report.exit_code();
  if (code != kGatePass)
    std::fprintf(stderr, "kvbench compare: %s%s\n", report.summary().c_str(),
                 report.board_note.empty() ? "" : " (other board than the baseline's)");
  return code;
}

}  // namespace kvbench::cli
