// The run's metadata: the JSON sidecar written next to the CSV (<csv>.json), and the helpers that
// name a device and a config file. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/stats.hpp"
#include "core/sweep.hpp"

namespace kvbench {

struct DeviceDetails {
  std::string name;
  std::string uuid;
  int compute_capability = 0;  // major * 10 + minor
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_memory_bytes = 0;
  double max_sm_clock_mhz = 0;   // cudaDevAttrClockRate
  double memory_clock_mhz = 0;   // cudaDevAttrMemoryClockRate (NVML's max memory clock if 0)
  int bus_width_bits = 0;        // cudaDevAttrGlobalMemoryBusWidth
  std::string driver_version;    // NVML's "580.159"; else the CUDA version the driver supports
  int cuda_driver_version = 0;   // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime_version = 0;  // cudaRuntimeGetVersion
};

// An empty kernel timed in one mode (the launch floor).
struct FloorEntry {
  TimingMode mode = TimingMode::graph;
  Stats stats;
  int launches_per_sample = 1;
  double sm_clock_mhz = 0;  // probed around the samples; 0: unknown
  bool clock_low = false;   // below kClockLowFraction of the maximum even after a second settle
  int attempts = 1;         // 2: the first measurement's clock read low
};

struct RunMetadata {
  std::string kvbench_version, git_sha;
  bool git_dirty = false;
  std::string host;
  std::string started_at, finished_at;  // ISO 8601 UTC; finished_at empty while running
  std::string config_path, config_fnv1a64;
  std::string csv_path;
  RunSettings settings;
  DeviceDetails device;
  Calibration calibration;
  std::vector<FloorEntry> launch_floor;
  std::size_t cases = 0, cases_done = 0, cases_failed = 0;
  std::vector<std::size_t> selected_cases;  // --case indices; empty: all
  bool blocking_kernel_timed_out = false;
  bool interrupted = false;  // SIGINT or SIGTERM ended the run before its last case
  std::string shard;         // "I/N" of --shard; empty: the whole sweep
  // One device_entry_json() per worker's device, as the workers report them. When set, the first
  // one also fills the top-level device, calibration and launch floor keys.
  std::vector<std::string> devices;
  // --plugin: a JSON array of {path, size, sha256, variants}, one per plugin; empty: none (and
  // no "plugins" key in the sidecar).
  std::string plugins;
  std::vector<std::string> variants;  // --variants; empty: the config's (no "variants" key)
};

// One device of a run as a one-line JSON object: {"device": {...}, "calibration": {...},
// "launch_floor_us": {...}}, the same keys as the sidecar's top level.
std::string device_entry_json(const DeviceDetails& d, const Calibration& c,
                              const std::vector<FloorEntry>& floor);

std::string metadata_to_json(const RunMetadata& m);  // pretty-printed, ends with a newline

// The resolved run settings as the sidecar's "settings" object records them, on one line: what
// `run` hands its workers, so that they time what the sidecar says.
std::string settings_to_json(const RunSettings& s);

// The inverse of settings_to_json. Throws std::invalid_argument naming `where` and the key that
// is missing or of the wrong type or value.
RunSettings settings_from_json(const std::string& text, const std::string& where);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes of cudaUUID_t, as nvidia-smi.
std::string format_uuid(const char* bytes16);

// FNV-1a 64 of `bytes`, as 16 lowercase hex digits.
std::string fnv1a64_hex(const std::string& bytes);

// Current time, ISO 8601 UTC ("2025-01-31T12:00:00Z").
std::string utc_now();

}  // namespace kvbench
