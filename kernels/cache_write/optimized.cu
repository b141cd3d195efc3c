// reshape_and_cache_flash, the `optimized` variant: flat tiling over (token, vector of one
// head), each thread moving the same vector of K and of V, so no lane idles on padding and
// small-head shapes still fill whole blocks. Its choices (vector width, offsets in int32, K/V
// loads before the slot is known, the scaled kernel and its register caps, the SWA kernel, the
// block size) are made by plan_cache_write (plan.cpp; docs/kernels.md, "reshape_and_cache_flash"):
// this file only executes a plan. Every launch uses PDL. Scaled writes divide with one reciprocal
// per thread (Divisor, exact) in a kernel of their own, storing before the range test and
// redoing the rare vector outside it (store_scaled_pair).
#include <type_traits>

#include "kernels/cache_write/device.cuh"
#include "kernels/cache_write/launchers.hpp"
#include "kernels/common/pdl.cuh"
#include "kernels/common/tiling.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kOptThreads = 256;

// The optimized variant's scaled kernels, whose fast-first stores (store_scaled_pair) keep more
// values live: with 16-bit outputs (8-element vectors) they took 44 registers, and above one
// wave the write of 131072 tokens bf16 -> bf16 ran 7.7% slower than at 32; capped at 32 (8
// blocks), as fast as before. With fp8 outputs the one-wave 8-element kernel takes 46-48 of the
// 48 that 5 blocks allow, and ran 5.5% slower capped at 32 (perf-notes/2026-12, "2026-12-03,
// a0f039a"). The 16-element fp8 kernel fits in 40 registers without spills: at 6 blocks per SM it
// wrote 2-6% faster from T=4096 up, and 12% slower where the cap-5 kernel runs in one wave (D=80
// T=4096), hence a copy of its own (MANY_WAVES) for launches past that wave (perf-notes/2026-12,
// "2026-12-03, 0cbd63d"). Grids past one wave at 5 per SM and within one at 6 (661-792 blocks on
// 132 SMs) take it too: 0.5-6% faster there than the cap-5 kernel (perf-notes/2026-12, "2026-12-03,
// 0cbd63d").
template <class In, class Out, int V, bool MANY_WAVES>
constexpr int kScaledOptMinBlocks = sizeof(In) == 2 && sizeof(Out) == 2 ? 8
                                    : MANY_WAVES && sizeof(In) == 2 &&
                                            sizeof(Out) == 1 && V == kWideVec<In, Out>
                                        ? 6
                                        : kScaledMinBlocks<In>;

// What the optimized kernel reads of CacheWriteArgs, with the token count and strides as I:
// int32 where every offset it forms fits (opt_fits_int32), as in concat_2d. Then less address
// arithmetic follows the slot load (the store's critical path at small T) and the argument is
// smaller (perf-notes/2026-12, "2026-12-04, 1e639d5"). Physical slots below `split_below` are split
// into (block, offset) by FastDiv, with I-wide products; the others, in the int64 kernel at 2^31
// and up, or in the int32 kernel outside the cache's num_slots, with 64-bit division and products,
// so that even a slot past the cache lands where CacheWriteArgs' arithmetic puts it.
template <class I>
struct OptArgs {
  const void* key;
  const void* value;
  void* key_cache;
  void* value_cache;
  const std::int64_t* slot_mapping;
  const std::int64_t* swa_slot_mapping;
  const float* k_scale;
  const float* v_scale;
  std::int64_t skip_slot, block_size, split_below;
  I num_tokens, key_s0, key_s1, value_s0, value_s1, block_stride, slot_stride, head_stride;
  ScaleMode scale;
};

template <class I>
OptArgs<I> opt_args(const CacheWriteArgs& a) {
  constexpr std::int64_t k31 = std::int64_t{1} << 31;
  const std::int64_t split_below =
      std::is_same_v<I, std::int32_t> ? a.num_slots : (a.block_size < k31 ? k31 : 0);
  return {a.key,
          a.value,
          a.key_cache,
          a.value_cache,
          a.slot_mapping,
          a.swa_slot_mapping,
          a.k_scale,
          a.v_scale,
          a.skip_slot,
          a.block_size,
          split_below,
          static_cast<I>(a.num_tokens),
          static_cast<I>(a.key_s0),
          static_cast<I>(a.key_s1),
          static_cast<I>(a.value_s0),
          static_cast<I>(a.value_s1),
          static_cast<I>(a.block_stride),
          static_cast<I>(a.slot_stride),
          static_cast<I>(a.head_stride),
          a.scale};
}

// The element offset of item offset `hd` in physical slot `slot` (>= 0) of each cache.
template <class I>
__device__ __forceinline__ std::int64_t cache_offset(const OptArgs<I>& a, FastDiv block_div,
                                                     std::int64_t slot, I hd) {
  if (static_cast<std::uint64_t>(slot) < static_cast<std::uint64_t>(a.split_below)) {
    const auto s = static_cast<std::uint32_t>(slot);
    const std::uint32_t b = block_div.div(s);
    const std::uint32_t o = s - b * block_div.divisor();
    return static_cast<I>(b) * a.block_stride + static_cast<I>(o) * a.slot_stride + hd;
  }
  const std::int64_t b = slot / a.block_size;
  return b * a.block_stride + (slot - b * a.block_size) * a.slot_stride + hd;
}

// One thread per (token, head, vector): it moves that vector of K and of V. SCALED kernels are
// launched only for scaled writes: the division code compiled alone, with the register cap
// above. The others test the scale mode at run time (a kernel without the scaled path measured
// up to 10% slower on small unscaled cases, perf-notes/2026-12, "2026-12-02, 4f45e0a").
template <class In, class Out, int V, bool SPECULATIVE, bool SCALED, bool MANY_WAVES, bool SWA,
          class I>
__global__ void __launch_bounds__(kOptThreads,
                                  SCALED ? kScaledOptMinBlocks<In, Out, V, MANY_WAVES> : 1)
    cache_write_optimized(OptArgs<I> a, FastDiv vecs_per_head, FastDiv per_token, FastDiv block_div,
                          unsigned zero) {
  const TileCursor cursor(static_cast<std::int64_t>(blockIdx.x) * blockDim.x, per_token);
  std::int64_t token;
  int u;
  cursor.locate(static_cast<int>(threadIdx.x), token, u);
  pdl_launch_dependents();  // launched with PDL
  if (token >= a.num_tokens) return;
  const auto t = static_cast<I>(token);
  const auto h = static_cast<I>(vecs_per_head.div(static_cast<std::uint32_t>(u)));
  const I d = (u - static_cast<int>(h) * static_cast<int>(vecs_per_head.divisor())) * V;
  const In* key = static_cast<const In*>(a.key) + (t * a.key_s0 + h * a.key_s1 + d);
  const In* value = static_cast<const In*>(a.value) + (t * a.value_s0 + h * a.value_s1 + d);
  const std::int64_t* slot_at = a.slot_mapping + t;
  const I hd = h * a.head_stride + d;       // the item's offset within its slot
  pdl_wait_after(key, value, slot_at, hd);  // inputs may come from the previous kernel

  // Every load is issued before the store: loads the compiler cannot prove independent of a
  // store would otherwise wait for it. The slot (and the scales, load_scales) by a coherent load:
  // ptxas may hoist a non-coherent one (__ldg) above the PDL wait, before the previous kernel's
  // writes are visible (seen in the 16-bit -> fp8 kernels; tools/remote/pdl_order.sh checks).
  std::int64_t slot = *slot_at;
  const bool scaled = SCALED || a.scale != ScaleMode::none;
  float ks = 1.0f, vs = 1.0f;
  if (scaled) load_scales(a, static_cast<int>(h), ks, vs);
  Vec<In, V> kx, vx;
  if constexpr (SPECULATIVE) {
    kx = load_vec<In, V>(key);
    vx = load_vec<In, V>(value);
  }
  if (SWA && slot >= 0) {
    // Above one wave only: in the one-wave kernel the policy load changed the compiled code and
    // made its writes 5-26% slower, with SWA or without (perf-notes/2026-12, "2026-12-03, 9f428ec,
    // fae5545, 8878a73").
    if constexpr (SPECULATIVE) {
      slot = __ldg(a.swa_slot_mapping + slot);
    } else {
      slot = swa_lookup(a.swa_slot_mapping + slot);
    }
  }
  const bool skip = slot < 0 || slot == a.skip_slot;  // SPEC.md §2 steps 1-3
  if constexpr (SPECULATIVE) {
    // ptxas sinks loads that only the store path uses below this test: the SASS without it issued
    // these "early" K/V loads after it, one latency later. Using them on the skip path too,
    // through `zero` (a launch argument, always 0), keeps them above it (perf-notes/2026-12,
    // "2026-12-02, 1dcf2d6").
    if (skip) {
      if (((low_word(kx) | low_word(vx)) & zero) != 0) __trap();
      return;
    }
  } else {
    if (skip) return;
    kx = load_vec<In, V>(key);
    vx = load_vec<In, V>(value);
  }
  const std::int64_t dst = cache_offset(a, block_div, slot, hd);
  store_item<SCALED>(static_cast<Out*>(a.key_cache) + dst, static_cast<Out*>(a.value_cache) + dst,
                     kx, vx, scaled, ks, vs, key, value);
}

template <class In, class Out, int V, bool SCALED>
cudaError_t launch_plan(const CacheWriteArgs& a, const CacheWritePlan& p, cudaStream_t stream) {
  const std::int64_t vecs_per_head = a.head_size / V;
  const FastDiv vph(static_cast<std::uint32_t>(vecs_per_head)),
      pt(static_cast<std::uint32_t>(a.num_heads * vecs_per_head)), bd = block_size_div(a);
  const auto go = [&](auto index, auto swa) {
    using I = decltype(index);
    constexpr bool W = decltype(swa)::value;
    auto* kernel = p.speculative ? cache_write_optimized<In, Out, V, true, SCALED, false, W, I>
                                 : cache_write_optimized<In, Out, V, false, SCALED, false, W, I>;
    // The many-waves copy exists only where its register cap differs.
    if constexpr (SCALED &&
                  kScaledOptMinBlocks<In, Out, V, true> != kScaledOptMinBlocks<In, Out, V, false>) {
      if (p.many_waves)
        kernel = p.speculative ? cache_write_optimized<In, Out, V, true, true, true, W, I>
                               : cache_write_optimized<In, Out, V, false, true, true, W, I>;
    } else {
      if (p.many_waves) return cudaErrorInvalidValue;
    }
    return launch_pdl(kernel, p.grid.x, p.block.x, stream, opt_args<I>(a), vph, pt, bd, 0u);
  };
  const auto pick = [&](auto index) {
    return p.swa ? go(index, std::true_type{}) : go(index, std::false_type{});
  };
  return p.index == IndexType::int32 ? pick(std::int32_t{}) : pick(std::int64_t{});
}

}  // namespace

cudaError_t launch_cache_write_optimized(const CacheWriteArgs& a, const CacheWritePlan& p,
                                         cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    return with_vec<In, Out>(p.vec, [&](auto v) {
      constexpr int V = decltype(v)::value;
      return p.scaled ? launch_plan<In, Out, V, true>(a, p, stream)
                      : launch_plan<In, Out, V, false>(a, p, stream);
    });
  });
}

int cache_write_resident_blocks(const KernelRef& k, int threads) {
  int n = 0;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_dtypes(k.in, k.out, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    return with_vec<In, Out>(k.vec, [&](auto v) {
      constexpr int V = decltype(v)::value;
      e = k.scaled
              ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &n, cache_write_optimized<In, Out, V, true, true, false, false, std::int64_t>,
                    threads, 0)
              : cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &n, cache_write_optimized<In, Out, V, true, false, false, false, std::int64_t>,
                    threads, 0);
      return cudaSuccess;
    });
  });
  if (e != cudaSuccess || n <= 0) {
    cudaGetLastError();
    n = 1;
  }
  return n;
}

}  // namespace kvbench::kernels
