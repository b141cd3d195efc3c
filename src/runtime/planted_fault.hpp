// Test-only: a launch that faults on the device (an illegal address), for proving that a sweep
// survives a kernel that corrupts its context. `kvbench worker` uses it for the case named by
// KVBENCH_PLANT_FAULT (docs/workers.md); no kernel of kernels/ knows of it.
#pragma once

#include "runtime/runner.hpp"

namespace kvbench {

// A LaunchOverride whose launches write 1 TiB past the output: a sticky
// cudaErrorIllegalAddress at the next synchronization.
LaunchOverride planted_fault_launch();

}  // namespace kvbench
