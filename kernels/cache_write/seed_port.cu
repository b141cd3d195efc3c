// reshape_and_cache_flash, the `seed_port` variant: a grid of (token, 4-head block) blocks of
// 128 threads, mirroring the seed's Triton program: lanes cover a [4, next_pow2(D)] tile with
// masking. Kept as the baseline the faster variants are measured against. Fixes the seed's
// negative-slot SWA read.
#include "kernels/cache_write/device.cuh"
#include "kernels/cache_write/launchers.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;  // Triton's default num_warps=4
constexpr int kSeedHeadBlock = 4;  // the seed's HEAD_BLOCK

template <class Out, class In>
__device__ __forceinline__ Out scaled_cast(In x, const float* scale) {
  if (scale == nullptr) return cast<Out>(x);
  return from_float<Out>(__fdiv_rn(to_float(x), *scale));  // IEEE division, one rounding
}

template <class In, class Out>
__global__ void __launch_bounds__(kSeedThreads)
    cache_write_seed_port(CacheWriteArgs a, int block_d) {
  const std::int64_t t = blockIdx.x;
  const std::int64_t s = physical_slot(a, t);
  if (s < 0) return;
  const std::int64_t b = s / a.block_size;
  const std::int64_t o = s - b * a.block_size;
  const std::int64_t h0 = static_cast<std::int64_t>(blockIdx.y) * kSeedHeadBlock;

  const In* key = static_cast<const In*>(a.key) + t * a.key_s0;        // [H, D] of token t
  const In* value = static_cast<const In*>(a.value) + t * a.value_s0;  // [H, D] of token t
  const std::int64_t slot_base = b * a.block_stride + o * a.slot_stride;
  Out* key_cache = static_cast<Out*>(a.key_cache) + slot_base;
  Out* value_cache = static_cast<Out*>(a.value_cache) + slot_base;

  for (int i = threadIdx.x; i < kSeedHeadBlock * block_d; i += blockDim.x) {
    const std::int64_t h = h0 + i / block_d;
    const std::int64_t d = i % block_d;
    if (h >= a.num_heads || d >= a.head_size) continue;  // the seed's padded-lane mask
    const float* ks = nullptr;
    const float* vs = nullptr;
    if (a.scale != ScaleMode::none) {
      const std::int64_t si = a.scale == ScaleMode::per_head ? h : 0;
      ks = a.k_scale + si;
      vs = a.v_scale + si;
    }
    key_cache[h * a.head_stride + d] = scaled_cast<Out>(key[h * a.key_s1 + d], ks);
    value_cache[h * a.head_stride + d] = scaled_cast<Out>(value[h * a.value_s1 + d], vs);
  }
}

}  // namespace

cudaError_t launch_cache_write_seed_port(const CacheWriteArgs& a, const CacheWritePlan& p,
                                         cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    const dim3 grid(p.grid.x, p.grid.y);
    cache_write_seed_port<In, Out><<<grid, p.block.x, 0, stream>>>(a, p.seed_block_d);
    return cudaGetLastError();
  });
}

}  // namespace kvbench::kernels
