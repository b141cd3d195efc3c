// `kvbench calibrate`: device copy bandwidth measured with the timing engine (cudaMemcpyAsync
// device-to-device and a 16-byte-vector copy kernel, buffers of at least 4x L2 so L2 plays no
// part, read + written bytes counted), plus the theoretical peak from the memory clock and bus
// width. Cached per device (core/calibration.hpp says where); `run` reads the cache.
#pragma once

#include <string>

#include "core/calibration.hpp"
#include "core/metadata.hpp"

namespace kvbench {

// The sampling rules of the calibration copies (graph mode, tight noise target).
RunSettings calibration_settings();

// Measures now. Throws CudaError.
Calibration calibrate(const DeviceDetails& device);

struct CalibrationResult {
  Calibration calibration;
  std::string path;  // the cache file
  bool measured;     // false: read from the cache
};

// Reads the device's cache file unless `force` or it is missing, unreadable, of another version
// or another device; otherwise measures and writes it (atomically: a temp file, then rename).
// A problem with an existing cache file is one line on stderr. Throws CudaError, or
// std::runtime_error naming the path if the cache cannot be written.
CalibrationResult load_or_calibrate(const DeviceDetails& device, bool force);

}  // namespace kvbench
