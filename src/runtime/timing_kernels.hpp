// Device helpers of the timing engine: the stream-blocking kernel, the read-based L2 flush, an
// empty kernel (the launch floor) and the per-SM clock probe. Launchers return cudaError_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kvbench::timing {

// Spins until the host sets *release (host-mapped memory) or `timeout_ns` of %globaltimer time
// has passed; in the second case it sets *timed_out (host-mapped) and returns.
cudaError_t launch_blocker(const volatile int* release, volatile int* timed_out,
                           std::uint64_t timeout_ns, cudaStream_t stream);

// Reads every 16-byte word of `buf` once. The result is stored only if it equals `never`, which
// the caller makes impossible, so the loads cannot be optimized away and nothing is written.
cudaError_t launch_read_flush(const void* buf,  // [bytes]
                              std::size_t bytes, std::uint32_t never,
                              std::uint32_t* sink,  // [1]
                              int sm_count, cudaStream_t stream);

// Rewrites every 16-byte word of `buf` (bytes rounded up to whole words, which the allocation
// must hold) with itself XOR `mask`; with mask 0 the bytes stay, and the buffer ends dirty in L2,
// as a producer kernel leaves its output. `hot_inputs`' producer (docs/measurement.md).
cudaError_t launch_touch(void* buf, std::size_t bytes, std::uint32_t mask, int sm_count,
                         cudaStream_t stream);

// One thread doing nothing: what a launch costs when the kernel has no work.
cudaError_t launch_empty(cudaStream_t stream);

// The SM clock right now: on each SM (the first block to reach it), clock64 cycles counted over
// `spin_ns` of %globaltimer time while the SM is busy spinning, as MHz in mhz[smid]; SMs no block
// reached keep 0. Busy on purpose: an idle SM's counter may stop while it is clock-gated.
// `claimed` must be zeroed before each probe.
inline constexpr int kMaxSmSlots = 1024;      // %smid is below this on every GPU so far
cudaError_t launch_clock_probe(float* mhz,    // [kMaxSmSlots]
                               int* claimed,  // [kMaxSmSlots], zeroed
                               std::uint64_t spin_ns, int sm_count, cudaStream_t stream);

}  // namespace kvbench::timing
