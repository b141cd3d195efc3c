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
};

// Limits shared by the YAML keys and the CLI flags.
inline constexpr int kMaxWarmup = 100000;
inline constexpr int kMaxMinSamples = 1000000;
// Launches enqueued behind the blocking kernel must fit the driver's launch queue (about 1024
// entries), or the host would stall before releasing it.
inline constexpr int kMaxLaunchesPerSample = 512;
inline constexpr double kMaxTimeoutS = 3600;

struct Config {
  RunSettings settings;
  std::vector<Case> cases;
};

// Axis names accepted for a kernel, in expansion order (outermost first).
const std::vector<std::string>& axis_names(Kernel k);

// Parses YAML text; `source` names it in error messages. Throws ConfigError.
Config parse_config(const std::string& text, const std::string& source);

// Reads and parses a file. Throws ConfigError (unreadable file included).
Config load_config(const std::string& path);

}  // namespace kvbench
