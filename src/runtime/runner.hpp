// One case end to end: inputs -> kernel launch -> bitwise check against the CPU reference ->
// timing -> a result row. Validation always comes first; a case that fails it is not timed.
#pragma once

#include <stdexcept>
#include <string>

#include "core/csv.hpp"
#include "core/sweep.hpp"

namespace kvbench {

class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
};

// Selects device 0. Throws NoDeviceError ("no CUDA device: ...") when there is none.
DeviceInfo open_device();

// Runs one case. Never throws for problems of the case itself (unsupported dtype pair, bad
// slots, out of device memory, a failed launch): those become the row's status and reason.
Row run_case(const Case& c, const RunSettings& settings, const DeviceInfo& device);

// Throws CudaError if an earlier failure left the device unusable (a sticky error such as an
// illegal address), since no later case could run. Call after writing a failed row.
void ensure_device_usable();

// Case-specific seed: independent of the case's position in the sweep.
std::uint64_t case_seed(const Case& c, std::uint64_t run_seed);

}  // namespace kvbench
