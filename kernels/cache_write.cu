// reshape_and_cache_flash kernels.
//
// Variants:
//   seed_port  Grid (token, 4-head block) of 128 threads, mirroring the seed's Triton program:
//              lanes cover a [4, next_pow2(D)] tile with masking. Kept as the baseline the
//              faster variants are measured against. Fixes the seed's negative-slot SWA read.
#include "kernels/cache_write.hpp"
#include "kernels/convert.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;   // Triton's default num_warps=4
constexpr int kSeedHeadBlock = 4;   // the seed's HEAD_BLOCK

// SPEC.md §2 steps 1-3: the physical slot of token t, or -1 when the token is skipped.
__device__ __forceinline__ std::int64_t physical_slot(const CacheWriteArgs& a, std::int64_t t) {
  std::int64_t s = a.slot_mapping[t];
  if (s < 0) return -1;
  if (a.swa_slot_mapping != nullptr) {
    s = a.swa_slot_mapping[s];
    if (s < 0) return -1;
  }
  return s == a.skip_slot ? -1 : s;
}

template <class Out, class In>
__device__ __forceinline__ Out scaled_cast(In x, const float* scale) {
  if (scale == nullptr) return cast<Out>(x);
  return from_float<Out>(__fdiv_rn(to_float(x), *scale));  // IEEE division, one rounding
}

template <class In, class Out>
__global__ void __launch_bounds__(kSeedThreads) cache_write_seed_port(CacheWriteArgs a,
                                                                       int block_d) {
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

int next_pow2(std::int64_t x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

bool cache_write_supported(DType in, DType out) {
  (void)out;
  return !is_fp8(in);
}

cudaError_t launch_cache_write(const CacheWriteArgs& a, Variant variant, cudaStream_t stream) {
  if (a.num_tokens <= 0 || a.num_heads <= 0 || a.head_size <= 0 || a.block_size <= 0 ||
      a.num_tokens > 0x7fffffff || a.head_size > (1 << 20))
    return cudaErrorInvalidValue;
  if (a.scale != ScaleMode::none && (a.k_scale == nullptr || a.v_scale == nullptr))
    return cudaErrorInvalidValue;
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    switch (variant) {
      case Variant::seed_port: {
        const std::int64_t head_blocks = (a.num_heads + kSeedHeadBlock - 1) / kSeedHeadBlock;
        if (head_blocks > 65535) return cudaErrorInvalidValue;
        const dim3 grid(static_cast<unsigned>(a.num_tokens), static_cast<unsigned>(head_blocks));
        cache_write_seed_port<In, Out>
            <<<grid, kSeedThreads, 0, stream>>>(a, next_pow2(a.head_size));
        return cudaGetLastError();
      }
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace kvbench::kernels
