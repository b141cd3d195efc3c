// What `kvbench run` hands each worker besides the config: the resolved settings (the sidecar's
// "settings" object, core/metadata.hpp) and the validation options, as one JSON object on the
// worker's command line (`kvbench worker CONFIG --setup JSON`; docs/workers.md). A run setting is
// declared once, as a flag of `run` or a key of the config; the worker only applies this.
#pragma once

#include <cstdint>
#include <string>

#include "core/sweep.hpp"

namespace kvbench::cli {

struct WorkerSetup {
  RunSettings settings;
  std::uint64_t max_cases = kDefaultMaxCases;  // --max-cases
  std::string save_tensors_dir;                // --save-tensors; empty: none
  bool save_all = false;                       // --save-tensors-all
  bool check_bounds = false;                   // --check-bounds
  // --plugin: the sidecar's "plugins" array as text (cli/plugins.hpp); empty: none. The worker
  // loads the same files and refuses any whose size or SHA-256 has changed.
  std::string plugins;
  std::vector<std::string> variants;  // --variants; empty: the config's
  bool samples = false;               // send each row's timing samples (run --save-samples, ab)
};

// {"settings": {...as the sidecar...}, "max_cases": N, "save_tensors": "DIR",
//  "save_tensors_all": false, "check_bounds": false, "plugins": [...]}, on one line.
std::string worker_setup_to_json(const WorkerSetup& s);

// The inverse; throws std::invalid_argument naming --setup and the key at fault.
WorkerSetup worker_setup_from_json(const std::string& text);

}  // namespace kvbench::cli
