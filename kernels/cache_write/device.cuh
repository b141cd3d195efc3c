// Device pieces shared by the cache write's kernels (kernels/cache_write/*.cu).
#pragma once

#include <cstdint>

#include "kernels/cache_write/cache_write.hpp"
#include "kernels/common/convert.cuh"
#include "kernels/common/fast_div.hpp"
#include "kernels/common/vec.cuh"

namespace kvbench::kernels {

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

// The maxima over the row's `lanes` lanes (a power of two, aligned in the warp; `mask` names them)
// of the K and the V amax, both non-negative and never NaN (token_head.cu's vec_amax). A whole-warp
// row takes one REDUX each: non-negative floats, +inf included, order as their bit patterns, so the
// unsigned max is the float max, exactly. Narrower rows take xor shuffles, K's and V's interleaved
// so that the two chains overlap (perf-notes/2026-12, "2026-12-06, 2abfd61").
__device__ __forceinline__ void group_max(float& k, float& v, int lanes, unsigned mask) {
#if __CUDA_ARCH__ >= 800
  if (lanes == 32) {
    k = __uint_as_float(__reduce_max_sync(0xFFFFFFFFu, __float_as_uint(k)));
    v = __uint_as_float(__reduce_max_sync(0xFFFFFFFFu, __float_as_uint(v)));
    return;
  }
#endif
  for (int offset = lanes / 2; offset > 0; offset /= 2) {
    k = fmaxf(k, __shfl_xor_sync(mask, k, offset));
    v = fmaxf(v, __shfl_xor_sync(mask, v, offset));
  }
}

// The SWA table entry at p, read with an L2 evict-last policy: the table is read at scattered
// places, and the K/V stream would otherwise evict its lines before the tokens that share them
// come by (2.6-3.3% faster on the large SWA writes: perf-notes/2026-12, "2026-12-03, 9f428ec,
// fae5545, 8878a73").
__device__ __forceinline__ std::int64_t swa_lookup(const std::int64_t* p) {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  std::int64_t v;
  asm volatile("ld.global.nc.L2::cache_hint.b64 %0, [%1], %2;" : "=l"(v) : "l"(p), "l"(policy));
  return v;
}

// The K and V scales that head h divides by: one per tensor, or one per head. Coherent loads: a
// previous kernel may write the scales, and ptxas may hoist a non-coherent load above the PDL wait.
template <class Args>
__device__ __forceinline__ void load_scales(const Args& a, int h, float& ks, float& vs) {
  const int si = a.scale == ScaleMode::per_head ? h : 0;
  ks = a.k_scale[si];
  vs = a.v_scale[si];
}

// Stores one item's K and V vectors (converted, scaled when `scaled`) at kc and vc: the end of
// both `optimized` and `slot_order` kernels. FAST_FIRST scaled writes store Divisor's fast
// quotients before testing its range (store_scaled_pair); only the optimized variant's scaled
// kernels do (measured there, perf-notes/2026-12, "2026-12-03, a0f039a"; slot_order's path was not
// measured with it).
template <bool FAST_FIRST, class Out, class In, int V>
__device__ __forceinline__ void store_item(Out* kc, Out* vc, const Vec<In, V>& kx,
                                           const Vec<In, V>& vx, bool scaled, float ks, float vs,
                                           const In* key, const In* value) {
  if (scaled) {  // one reciprocal per thread and tensor, not one division per element
    if constexpr (FAST_FIRST) {
      store_scaled_pair(kc, kx, key, Divisor(ks), vc, vx, value, Divisor(vs));
    } else {
      store_vec(kc, cast_vec<Out>(kx, Divisor(ks)));
      store_vec(vc, cast_vec<Out>(vx, Divisor(vs)));
    }
  } else {
    store_vec(kc, cast_vec<Out>(kx));
    store_vec(vc, cast_vec<Out>(vx));
  }
}

// The FastDiv of the block size that split_slot() and cache_offset() take.
inline FastDiv block_size_div(const CacheWriteArgs& a) { return fast_div_below_2_31(a.block_size); }

// Blocks per SM that the scaled kernels with 16-bit inputs are compiled for: their conversions
// would take 52-60 registers (4 blocks of 256 threads per SM, 44% occupancy measured); capped at
// 48 (5 blocks), the write of 131072 tokens bf16 -> fp8 went from 86% to 91-93% of the copy peak
// (perf-notes/2026-12, "2026-12-02, 4f45e0a"). fp32 inputs (IEEE division per element) would spill
// under the cap.
template <class In>
constexpr int kScaledMinBlocks = sizeof(In) == 2 ? 5 : 1;

}  // namespace kvbench::kernels
