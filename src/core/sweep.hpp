// YAML sweep files -> run settings and the expanded list of cases. Pure: no CUDA.
//
// Format (README.md has the full list of axes and defaults):
//   settings: {seed: 1, warmup: 10, samples: 30, mode: graph}   # optional
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

enum class TimingMode { graph, hot };
std::string_view to_string(TimingMode m);
TimingMode timing_mode_from_string(std::string_view text);  // throws std::invalid_argument

struct RunSettings {
  std::uint64_t seed = 1;
  int warmup = 10;        // untimed launches (graph replays in graph mode) before sampling
  int samples = 30;       // timed samples; the median is reported
  int graph_launches = 20;  // launches captured per graph in graph mode
  TimingMode mode = TimingMode::graph;
};

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
