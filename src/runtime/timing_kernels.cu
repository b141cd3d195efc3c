#include "runtime/timing_kernels.hpp"

namespace kvbench::timing {
namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void blocker_kernel(const volatile int* release, volatile int* timed_out,
                               std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  while (*release == 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

__global__ void read_flush_kernel(const uint4* buf, std::size_t words, std::uint32_t never,
                                  std::uint32_t* sink) {
  std::uint32_t acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    const uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) *sink = acc;
}

__global__ void empty_kernel() {}

__global__ void clock_probe_kernel(float* mhz, int* claimed, std::uint64_t spin_ns) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x != 0 || smid >= kMaxSmSlots) return;
  const bool first = atomicCAS(&claimed[smid], 0, 1) == 0;  // one block per SM reports
  const long long c0 = clock64();
  const std::uint64_t t0 = global_ns();
  std::uint64_t t1 = t0;
  while (t1 - t0 < spin_ns) t1 = global_ns();
  const long long c1 = clock64();
  if (first)
    mhz[smid] =
        static_cast<float>(1e3 * static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0));
}

// The producer of `hot_inputs`: rewrites every 16-byte word with itself XOR `mask` (0 at run
// time; an argument, so the compiler must keep the load and the store), leaving the buffer dirty
// in L2 as the kernel that produced it would.
__global__ void touch_kernel(uint4* buf, std::size_t words, std::uint32_t mask) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    uint4 v = buf[i];
    v.x ^= mask;
    v.y ^= mask;
    v.z ^= mask;
    v.w ^= mask;
    buf[i] = v;
  }
}

}  // namespace

cudaError_t launch_touch(void* buf, std::size_t bytes, std::uint32_t mask, int sm_count,
                         cudaStream_t stream) {
  const std::size_t words = (bytes + 15) / 16;
  if (words == 0) return cudaSuccess;
  const std::size_t want = (words + 255) / 256;
  const auto blocks = static_cast<unsigned>(want < 8u * sm_count ? want : 8u * sm_count);
  touch_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4*>(buf), words, mask);
  return cudaGetLastError();
}

cudaError_t launch_blocker(const volatile int* release, volatile int* timed_out,
                           std::uint64_t timeout_ns, cudaStream_t stream) {
  blocker_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_read_flush(const void* buf, std::size_t bytes, std::uint32_t never,
                              std::uint32_t* sink, int sm_count, cudaStream_t stream) {
  read_flush_kernel<<<4 * sm_count, 512, 0, stream>>>(static_cast<const uint4*>(buf), bytes / 16,
                                                      never, sink);
  return cudaGetLastError();
}

cudaError_t launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_clock_probe(float* mhz, int* claimed, std::uint64_t spin_ns, int sm_count,
                               cudaStream_t stream) {
  // Several blocks per SM so that, in practice, every SM runs one; they spin concurrently.
  clock_probe_kernel<<<4 * sm_count, 32, 0, stream>>>(mhz, claimed, spin_ns);
  return cudaGetLastError();
}

}  // namespace kvbench::timing
