// Device copy bandwidth, the roofline every row is read against: what `kvbench calibrate`
// measured and the theoretical peak from the memory clock and bus width. Its JSON form is the
// per-device cache file. Pure.
#pragma once

#include <string>

#include "core/types.hpp"

namespace kvbench {

inline constexpr int kCalibrationVersion = 1;  // bump when the measurement changes

struct Calibration {
  int version = kCalibrationVersion;
  std::string device, device_uuid;
  std::string measured_at;  // ISO 8601 UTC
  std::string kvbench_version, git_sha;
  TimingMode mode = TimingMode::graph;  // timing mode of the copies
  double buffer_bytes = 0;              // bytes per copy (source; the destination is as large)
  double memcpy_gbps = 0;               // cudaMemcpyAsync D2D, read + write bytes / median
  double copy_kernel_gbps = 0;          // 16-byte-vector copy kernel, same counting
  double memcpy_median_us = 0, copy_kernel_median_us = 0;
  double measured_peak_gbps = 0;     // the larger of the two
  double theoretical_peak_gbps = 0;  // 0: unknown
  double memory_clock_mhz = 0;
  int bus_width_bits = 0;
};

// Double data rate: two transfers per memory clock over the whole bus. GB/s = 10^9 bytes/s.
double theoretical_peak_gbps(double memory_clock_mhz, int bus_width_bits);

std::string calibration_to_json(const Calibration& c);
// Throws std::runtime_error naming `source` if the text is not a calibration of this version.
Calibration calibration_from_json(const std::string& text, const std::string& source);

// kvbench's cache folder: $KVBENCH_CACHE_DIR, else $XDG_CACHE_HOME/kvbench, else
// $HOME/.cache/kvbench, else .kvbench-cache. Null or empty arguments count as unset.
std::string cache_dir(const char* kvbench_cache_dir, const char* xdg_cache_home, const char* home);

// Where the cache for a device lives: cache_dir(...)/calibration/<uuid>.json.
std::string calibration_cache_path(const std::string& uuid, const char* kvbench_cache_dir,
                                   const char* xdg_cache_home, const char* home);

}  // namespace kvbench
