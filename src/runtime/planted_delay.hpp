// Test-only: a cache write that spins for a set time before its stores, for proving on a GPU
// that the gate finds a known slowdown (docs/gate.md, "Proof on a GPU"). `kvbench worker` uses
// it for every reshape_and_cache_flash case while KVBENCH_PLANT_DELAY_NS is set (0 included:
// the same kernel without the delay, the baseline of such an A/B); no variant of kernels/ knows
// of it, and no user-facing path reaches it.
#pragma once

#include <cstdint>

#include "runtime/runner.hpp"

namespace kvbench {

// A LaunchOverride of reshape_and_cache_flash: one wave of blocks, each spinning `delay_ns`
// (in SM clock cycles at the device's rated clock) and then copying its share of K and V to
// their slots with 16-byte vectors, so the whole launch takes the delay once at any size.
// 16-bit in and out of one dtype, no scale, no SWA, D a multiple of 8: any other case fails
// with cudaErrorNotSupported.
LaunchOverride planted_delay_launch(std::int64_t delay_ns);

}  // namespace kvbench
