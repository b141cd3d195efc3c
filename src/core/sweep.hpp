// YAML sweep files -> run settings and the expanded list of cases. Pure: no CUDA.
//
// Format (docs/sweeps.md has the full list of axes and defaults):
//   settings: {seed: 1, mode: graph, min_samples: 10, target_noise: 0.005}   # optional
//   sweeps:
//     - name: llama_decode
//       kernel: reshape_and_cache_flash
//       axes: {num_heads: 8, head_size: 128, num_tokens: [1, 16, 128]}
// An axis value is a scalar or a list; a sweep expands to the cartesian product of its axes.
// Order is stable: axes vary in the canonical order of axis_names(), the last one fastest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace kvbench {

// A config problem: message is "file:line:col: key.path: what was expected".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Timing settings (docs/measurement.md). Sampling is adaptive: after `warmup` untimed samples it
// takes samples until there are at least `min_samples`, their timed windows add up to at least
// `min_time_s`, and the 95% confidence interval of the median is within `target_noise` of it;
// or until `timeout_s` of wall-clock time has passed (then the row says converged=false).
struct RunSettings {
  std::uint64_t seed = 1;
  TimingMode mode = TimingMode::graph;
  int warmup = 10;                   // untimed samples before sampling
  int min_samples = 10;              // timed samples, at least
  double min_time_s = 0.01;          // sum of the timed windows (GPU time), at least; 0: no minimum
  double target_noise = 0.005;       // relative half-width of the median's 95% CI to stop at
  double timeout_s = 5;              // wall-clock limit on one case's sampling
  int launches_per_sample = 20;      // hot and graph: launches per timed window (cold: always 1)
  L2Flush l2_flush = L2Flush::read;  // how cold mode empties L2
  int rotate =
      1;  // buffer sets per case, launch i uses set i mod N; kRotateAuto: core/rotation.hpp
  bool hot_inputs = false;  // a producer kernel writes each set's inputs right before its launch
  Timer timer = Timer::events;  // what reads a replay's time; cupti: graph mode only
  // What runs before each launch; after_producer is hot_inputs (resolve_context keeps the two
  // in step).
  Context context = Context::back_to_back;
  int layer_mib = 48;  // context layer: MiB of weights its predecessor reads
};

inline constexpr int kMaxLayerMib = 65536;

// Keeps settings.hot_inputs and settings.context in step: hot_inputs is the after_producer
// context, so hot_inputs true makes a back_to_back context after_producer, and an
// after_producer context sets hot_inputs. Throws std::invalid_argument ("hot_inputs is the
// after_producer context, not cold") when hot_inputs is true beside another context.
void resolve_context(RunSettings& s);

// Limits shared by the YAML keys and the CLI flags.
inline constexpr int kMaxWarmup = 100000;
inline constexpr int kMaxMinSamples = 1000000;
// Launches enqueued behind the blocking kernel must fit the driver's launch queue (about 1024
// entries), or the host would stall before releasing it.
inline constexpr int kMaxLaunchesPerSample = 512;
inline constexpr double kMaxTimeoutS = 3600;
// `rotate: auto`: the set count is chosen per case (core/rotation.hpp).
inline constexpr int kRotateAuto = 0;
// Every set is validated and, in graph mode, launched once per replay: a bound on both.
inline constexpr int kMaxBufferSets = 4096;
// "auto" -> kRotateAuto, "N" -> N in [1, kMaxBufferSets]. Throws std::invalid_argument saying
// what was expected.
int parse_rotate(const std::string& text);
std::string rotate_text(int rotate);  // inverse of parse_rotate

// Cases a config may expand to unless --max-cases raises it (validation.yaml has under 2,000).
// The count is the product of each sweep's axis lengths, computed before anything is expanded.
inline constexpr std::uint64_t kDefaultMaxCases = 100000;
// Nesting deeper than this is refused before yaml-cpp recurses into it (configs use 4 levels).
inline constexpr int kMaxYamlDepth = 64;
// More YAML nodes (scalars, lists, mappings) than this are refused on the event stream, before
// yaml-cpp builds a node tree of them (about 500 bytes a node): shipped configs have under
// 3,000, and a 16 MiB file of a one-digit list would otherwise take gigabytes.
inline constexpr std::size_t kMaxYamlNodes = 1000000;

// A YAML 1.2 core-schema integer: decimal (leading zeros allowed: "010" is 10), 0x hex or 0o
// octal, with an optional sign. False when the text is not one or does not fit.
bool parse_int64(const std::string& text, std::int64_t& out);
// The same, non-negative, up to 2^64-1 (seeds): "-1" and "18446744073709551616" are refused.
bool parse_uint64(const std::string& text, std::uint64_t& out);

struct Config {
  RunSettings settings;
  std::vector<Case> cases;
};

// Axis names accepted for a kernel, in expansion order (outermost first).
const std::vector<std::string>& axis_names(Kernel k);

// Parses YAML text; `source` names it in error messages. Throws ConfigError for a problem with
// file:line:col and the key: duplicate keys, lists or maps used as keys, a second document,
// nesting past kMaxYamlDepth, an unclosed quote, a bad value, a case whose sizes overflow 64
// bits, or more than `max_cases` cases (naming each sweep's axes and their product).
Config parse_config(const std::string& text, const std::string& source,
                    std::uint64_t max_cases = kDefaultMaxCases);

// A config file's text, read once (a FIFO or `<(...)` included), at most 16 MiB. Throws
// ConfigError for an unreadable file, a directory, a device, or a larger file.
std::string read_config_text(const std::string& path);

// Reads (read_config_text) and parses a file. Throws ConfigError.
Config load_config(const std::string& path, std::uint64_t max_cases = kDefaultMaxCases);

}  // namespace kvbench
