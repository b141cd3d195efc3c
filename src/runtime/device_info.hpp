// What the metadata sidecar and the calibration say about the device: CUDA attributes, and the
// driver's version string from NVML when libnvidia-ml.so.1 can be loaded (it is opened with
// dlopen at run time, so the binary does not link it and runs without it).
#pragma once

#include "core/metadata.hpp"

namespace kvbench {

// Device 0; call after open_device(). Throws CudaError.
DeviceDetails device_details();

}  // namespace kvbench
