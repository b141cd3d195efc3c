#include <cuda_runtime.h>

#include "kernels/cache_write/cache_write.hpp"
#include "runtime/planted_delay.hpp"

namespace kvbench {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;

// One thread per 16-byte vector of one token's head, over a grid of one wave.
__global__ void delayed_cache_write(kernels::CacheWriteArgs a, long long delay_cycles) {
  if (delay_cycles > 0) {
    const long long start = clock64();
    while (clock64() - start < delay_cycles) {
    }
  }
  const std::int64_t vecs = a.head_size / 8, per_token = a.num_heads * vecs;
  const std::int64_t n = a.num_tokens * per_token;
  for (std::int64_t i = blockIdx.x * std::int64_t{kThreads} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * kThreads) {
    const std::int64_t t = i / per_token, h = (i / vecs) % a.num_heads, v = i % vecs;
    const std::int64_t slot = a.slot_mapping[t];
    if (slot < 0 || slot == a.skip_slot) continue;
    const std::int64_t at = slot / a.block_size * a.block_stride +
                            slot % a.block_size * a.slot_stride + h * a.head_stride + v * 8;
    const auto* k = static_cast<const std::uint16_t*>(a.key) + t * a.key_s0 + h * a.key_s1 + v * 8;
    const auto* val =
        static_cast<const std::uint16_t*>(a.value) + t * a.value_s0 + h * a.value_s1 + v * 8;
    *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(a.key_cache) + at) =
        *reinterpret_cast<const uint4*>(k);
    *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(a.value_cache) + at) =
        *reinterpret_cast<const uint4*>(val);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

cudaError_t launch(const kernels::CacheWriteArgs& a, std::int64_t delay_ns, cudaStream_t s) {
  const bool two_bytes =
      a.in_dtype == a.out_dtype && (a.in_dtype == DType::bf16 || a.in_dtype == DType::f16);
  if (!two_bytes || a.scale != ScaleMode::none || a.swa_slot_mapping || a.head_size % 8 != 0 ||
      a.key_s1 % 8 || a.value_s1 % 8 || a.key_s0 % 8 || a.value_s0 % 8 || a.head_stride % 8 ||
      a.slot_stride % 8 || a.block_stride % 8 || !aligned16(a.key) || !aligned16(a.value) ||
      !aligned16(a.key_cache) || !aligned16(a.value_cache))
    return cudaErrorNotSupported;
  static const auto device = [] {
    int dev = 0, sms = 0, khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    return std::pair<int, long long>{sms, khz};
  }();
  const std::int64_t n = a.num_tokens * a.num_heads * (a.head_size / 8);
  const std::int64_t blocks =
      std::max<std::int64_t>(1, std::min<std::int64_t>((n + kThreads - 1) / kThreads,
                                                       std::int64_t{device.first} * kBlocksPerSm));
  const long long cycles = delay_ns * device.second / 1000000;
  delayed_cache_write<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a, cycles);
  return cudaGetLastError();
}

}  // namespace

LaunchOverride planted_delay_launch(std::int64_t delay_ns) {
  LaunchOverride o;
  o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                [delay_ns](const kernels::CacheWriteArgs& a, cudaStream_t s) {
                                  return launch(a, delay_ns, s);
                                });
  return o;
}

}  // namespace kvbench
