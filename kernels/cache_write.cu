// reshape_and_cache_flash kernels.
//
// Variants:
//   seed_port  Grid (token, 4-head block) of 128 threads, mirroring the seed's Triton program:
//              lanes cover a [4, next_pow2(D)] tile with masking. Kept as the baseline the
//              faster variants are measured against. Fixes the seed's negative-slot SWA read.
//   optimized  Flat tiling over (token, vector of one head), a vector being 16 bytes of the
//              narrower dtype (of the input for 16-bit -> fp8 without a scale, for f32 inputs in
//              one wave, and for scaled fp8 writes in one wave): each thread moves the same vector
//              of K and of V, so no lane idles on padding and small-head shapes still fill whole
//              blocks. In one wave, K/V loads are issued before the slot is known (one memory
//              latency instead of two); above it, after (skipped tokens cost no K/V reads; SWA
//              table reads ask L2 to keep their lines), except in scaled writes without SWA.
//              Launches of fewer 256-thread blocks than SMs take blocks of 128. Every launch uses
//              PDL. Scaled writes divide with one reciprocal per thread (Divisor, exact) in a
//              kernel of their own, compiled for 5 blocks per SM (8 for 16-bit inputs and outputs,
//              6 for the 16-element fp8 kernel past one wave; no cap for fp32 inputs), storing
//              before the range test and redoing the rare vector outside it (store_scaled_pair).
//              Falls back to 16-byte input vectors, then to 1-element accesses, when pointers or
//              strides are not aligned. Above L2, on the shapes prefer_slot_order() names, it takes
//              slot_order's path instead.
//   slot_order Two passes: the slot mapping inverted into a table (slot -> token), then the
//              cache written in slot order, each block gathering the K/V of a chunk of
//              consecutive slots (below, at slot_table_fill). Same vectors and fallbacks.
#include <algorithm>
#include <numeric>
#include <type_traits>

#include "kernels/cache_write.hpp"
#include "kernels/convert.cuh"
#include "kernels/vec.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;  // Triton's default num_warps=4
constexpr int kSeedHeadBlock = 4;  // the seed's HEAD_BLOCK

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

constexpr int kOptThreads = 256;

// Slot -> (block, offset in block). 64-bit division is a long instruction sequence; slots and
// block sizes below 2^31 take a multiply-shift (FastDiv of the block size, built at launch).
__device__ __forceinline__ void split_slot(std::int64_t slot, std::int64_t block_size,
                                           FastDiv block_div, std::int64_t& block,
                                           std::int64_t& offset) {
  if (((slot | block_size) >> 31) == 0) {
    const auto s = static_cast<std::uint32_t>(slot);
    const std::uint32_t q = block_div.div(s);
    block = q;
    offset = s - q * block_div.divisor();
  } else {
    block = slot / block_size;
    offset = slot - block * block_size;
  }
}

// The SWA table entry at p, read with an L2 evict-last policy: the table is read at scattered
// places, and the K/V stream would otherwise evict its lines before the tokens that share them
// come by (2.6-3.3% faster on the large SWA writes: docs/perf-notes.md v10).
__device__ __forceinline__ std::int64_t swa_lookup(const std::int64_t* p) {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  std::int64_t v;
  asm volatile("ld.global.nc.L2::cache_hint.b64 %0, [%1], %2;" : "=l"(v) : "l"(p), "l"(policy));
  return v;
}

// The K and V scales that head h divides by: one per tensor, or one per head.
template <class Args>
__device__ __forceinline__ void load_scales(const Args& a, int h, float& ks, float& vs) {
  const int si = a.scale == ScaleMode::per_head ? h : 0;
  ks = __ldg(a.k_scale + si);
  vs = __ldg(a.v_scale + si);
}

// Stores one item's K and V vectors (converted, scaled when `scaled`) at kc and vc: the end of
// both `optimized` and `slot_order` kernels. FAST_FIRST scaled writes store Divisor's fast
// quotients before testing its range (store_scaled_pair); only the optimized variant's scaled
// kernels do (measured there, docs/perf-notes.md v11; slot_order's path was not measured with it).
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

// The FastDiv of the block size that split_slot() and cache_offset() take (a dummy 1 where they
// take the 64-bit division instead).
FastDiv block_size_div(const CacheWriteArgs& a) {
  return FastDiv(
      static_cast<std::uint32_t>(a.block_size < (std::int64_t{1} << 31) ? a.block_size : 1));
}

// Blocks per SM that the scaled kernels with 16-bit inputs are compiled for: their conversions
// would take 52-60 registers (4 blocks of 256 threads per SM, 44% occupancy measured); capped at
// 48 (5 blocks), the write of 131072 tokens bf16 -> fp8 went from 86% to 91-93% of the copy peak
// (docs/perf-notes.md v7). fp32 inputs (IEEE division per element) would spill under the cap.
template <class In>
constexpr int kScaledMinBlocks = sizeof(In) == 2 ? 5 : 1;
// The optimized variant's scaled kernels, whose fast-first stores (store_scaled_pair) keep more
// values live: with 16-bit outputs (8-element vectors) they took 44 registers, and above one
// wave the write of 131072 tokens bf16 -> bf16 ran 7.7% slower than at 32; capped at 32 (8
// blocks), as fast as before. With fp8 outputs the one-wave 8-element kernel takes 46-48 of the
// 48 that 5 blocks allow, and ran 5.5% slower capped at 32 (docs/perf-notes.md v11). The
// 16-element fp8 kernel fits in 40 registers without spills: at 6 blocks per SM it wrote 2-6%
// faster from T=4096 up, and 12% slower where the cap-5 kernel runs in one wave (D=80 T=4096),
// hence a copy of its own (MANY_WAVES) for launches past that wave (docs/perf-notes.md v13).
// Grids past one wave at 5 per SM and within one at 6 (661-792 blocks on 132 SMs) take it too:
// 0.5-6% faster there than the cap-5 kernel (docs/perf-notes.md v13).
template <class In, class Out, int V, bool MANY_WAVES>
constexpr int kScaledOptMinBlocks = sizeof(In) == 2 && sizeof(Out) == 2 ? 8
                                    : MANY_WAVES && sizeof(In) == 2 &&
                                            sizeof(Out) == 1 && V == kWideVec<In, Out>
                                        ? 6
                                        : kScaledMinBlocks<In>;

// What the optimized kernel reads of CacheWriteArgs, with the token count and strides as I:
// int32 where every offset it forms fits (opt_fits_int32), as in concat_2d. Then less address
// arithmetic follows the slot load (the store's critical path at small T) and the argument is
// smaller (docs/perf-notes.md v16). Physical slots below `split_below` are split into (block,
// offset) by FastDiv, with I-wide products; the others, in the int64 kernel at 2^31 and up, or in
// the int32 kernel outside the cache's num_slots, with 64-bit division and products, so that even
// a slot past the cache lands where CacheWriteArgs' arithmetic puts it.
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

bool opt_fits_int32(const CacheWriteArgs& a) {
  return offsets_fit_int32(a.num_tokens, a.key_s0, a.key_s1, a.num_heads, a.head_size) &&
         offsets_fit_int32(a.num_tokens, a.value_s0, a.value_s1, a.num_heads, a.head_size) &&
         cache_offsets_fit_int32(a.num_slots, a.block_size, a.block_stride, a.slot_stride,
                                 a.num_heads, a.head_stride, a.head_size);
}

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
// up to 10% slower on small unscaled cases, docs/perf-notes.md v7).
template <class In, class Out, int V, bool SPECULATIVE, bool SCALED, bool MANY_WAVES, bool SWA,
          class I>
__global__ void __launch_bounds__(kOptThreads,
                                  SCALED ? kScaledOptMinBlocks<In, Out, V, MANY_WAVES> : 1)
    cache_write_optimized(OptArgs<I> a, FastDiv vecs_per_head, FastDiv per_token,
                          FastDiv block_div, unsigned zero) {
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
  const I hd = h * a.head_stride + d;  // the item's offset within its slot
  pdl_wait_after(key, value, slot_at, hd);  // inputs may come from the previous kernel

  // Every load is issued before the store: loads the compiler cannot prove independent of a
  // store would otherwise wait for it.
  std::int64_t slot = __ldg(slot_at);
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
    // made its writes 5-26% slower, with SWA or without (docs/perf-notes.md v10).
    if constexpr (SPECULATIVE) {
      slot = __ldg(a.swa_slot_mapping + slot);
    } else {
      slot = swa_lookup(a.swa_slot_mapping + slot);
    }
  }
  const bool skip = slot < 0 || slot == a.skip_slot;  // SPEC.md §2 steps 1-3
  if constexpr (SPECULATIVE) {
    // ptxas sinks loads that only the store path uses below this test: the SASS of v2-v7 issued
    // these "early" K/V loads after it, one latency later. Using them on the skip path too,
    // through `zero` (a launch argument, always 0), keeps them above it (docs/perf-notes.md v7b).
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

// Whether every access of the optimized variant can be `n` elements wide.
bool cache_vec_ok(const CacheWriteArgs& a, int n, int in_bytes, int out_bytes) {
  return divisible(a.head_size, n) && divisible(a.key_s0, n) && divisible(a.key_s1, n) &&
         divisible(a.value_s0, n) && divisible(a.value_s1, n) && divisible(a.block_stride, n) &&
         divisible(a.slot_stride, n) && divisible(a.head_stride, n) &&
         vec_aligned(a.key, in_bytes, n) && vec_aligned(a.value, in_bytes, n) &&
         vec_aligned(a.key_cache, out_bytes, n) && vec_aligned(a.value_cache, out_bytes, n);
}

// Blocks of the optimized launch with `V`-element vectors (0 when too many).
unsigned cache_blocks(const CacheWriteArgs& a, int v, int threads = kOptThreads) {
  return grid_blocks(a.num_tokens * a.num_heads * (a.head_size / v), threads);
}

// Whether the case fits in one wave at the occupancy of the non-SWA int64 speculative kernel.
// The launched instantiation may hold fewer blocks per SM (16-bit to fp8 or f16 at V=8: 6
// against 8); sized from it, the launches between its wave and this one left the speculative
// kernel and ran 4-13% slower (docs/perf-notes.md, "2026-12-04, 90f71da"), so this wave is kept on purpose.
template <class In, class Out, int V, bool SCALED>
bool fits_one_wave(const CacheWriteArgs& a) {
  const unsigned blocks = cache_blocks(a, V);
  return blocks != 0 &&
         one_wave(blocks, resident_blocks<cache_write_optimized<In, Out, V, true, SCALED, false,
                                                                false, std::int64_t>>(kOptThreads));
}

template <class In, class Out, int V, bool SCALED>
cudaError_t launch_optimized(const CacheWriteArgs& a, cudaStream_t stream) {
  const std::int64_t vecs_per_head = a.head_size / V;
  const std::int64_t per_token = a.num_heads * vecs_per_head;
  if (per_token > (1 << 30)) return cudaErrorInvalidValue;
  // One item per thread: measured faster than 2 or 4 per thread at every size (docs/perf-notes.md).
  // In one wave, K/V are loaded before the slot is known (latency-bound). Above it, only for
  // tokens that are written, so padding tokens cost only their slot entry: except for scaled
  // writes without SWA, whose register cap leaves fewer threads to hide the second latency
  // (speculation measured 1.4-1.9% faster there, and 1-2.5% slower for SWA, whose test cases
  // skip every 16th token: docs/perf-notes.md v7c). An L2 prefetch of the rows before the
  // lookup instead was no faster, and 5% slower with padding tokens (docs/perf-notes.md v10).
  // Fewer blocks than SMs: blocks of half the size reach twice as many SMs (measured 4-6%
  // faster at T=16 and 128, nowhere slower beyond noise: docs/perf-notes.md v9).
  const unsigned wide = cache_blocks(a, V);
  if (wide == 0) return cudaErrorInvalidValue;
  const int threads =
      wide < static_cast<unsigned>(device_sm_count()) ? kOptThreads / 2 : kOptThreads;
  const unsigned blocks = cache_blocks(a, V, threads);
  const FastDiv vph(static_cast<std::uint32_t>(vecs_per_head)),
      pt(static_cast<std::uint32_t>(per_token)), bd = block_size_div(a);
  const bool in_one_wave = fits_one_wave<In, Out, V, SCALED>(a);
  const bool speculative = (SCALED && a.swa_slot_mapping == nullptr) || in_one_wave;
  const auto go = [&](auto index, auto swa) {
    using I = decltype(index);
    constexpr bool W = decltype(swa)::value;
    auto* kernel = speculative ? cache_write_optimized<In, Out, V, true, SCALED, false, W, I>
                               : cache_write_optimized<In, Out, V, false, SCALED, false, W, I>;
    // Past one wave, a scaled kernel with a register cap of its own where it has one.
    if constexpr (SCALED && kScaledOptMinBlocks<In, Out, V, true> !=
                                kScaledOptMinBlocks<In, Out, V, false>) {
      if (!in_one_wave)
        kernel = speculative ? cache_write_optimized<In, Out, V, true, true, true, W, I>
                             : cache_write_optimized<In, Out, V, false, true, true, W, I>;
    }
    return launch_pdl(kernel, blocks, threads, stream, opt_args<I>(a), vph, pt, bd, 0u);
  };
  // SWA kernels of their own: where the table lookup is compiled in, ptxas issues it (predicated
  // off without a table) ahead of the K/V loads, and its predicate waits for the slot load, so
  // the early K/V loads left only after the slot arrived (docs/perf-notes.md v17).
  const auto pick = [&](auto index) {
    return a.swa_slot_mapping != nullptr ? go(index, std::true_type{})
                                         : go(index, std::false_type{});
  };
  return opt_fits_int32(a) ? pick(std::int32_t{}) : pick(std::int64_t{});
}

// The scaled or the general kernel, by the case's scale mode.
template <class In, class Out, int V>
cudaError_t launch_optimized(const CacheWriteArgs& a, cudaStream_t stream) {
  return a.scale != ScaleMode::none ? launch_optimized<In, Out, V, true>(a, stream)
                                    : launch_optimized<In, Out, V, false>(a, stream);
}

// slot_order: the cache written in slot order. Pass 1 inverts the slot mapping into a table
// (table[physical slot] = token); pass 2 walks the cache in chunks of consecutive slots, one
// chunk per block, looks up each slot's token and gathers its K/V. Neighbouring slots are then
// written together, by one block or by blocks running side by side, instead of row by row at
// random times: scattered rows that do not cover whole 256-byte units (HND D=80: 160 bytes) lose
// up to 30% of the copy peak (docs/perf-notes.md v7 row study). Pass 2 restores the entries it
// read to -1, so the table needs no clearing launch. The price: a pass over the tokens, and one
// over every slot of the cache, written or not.
constexpr int kSlotThreads = 256;

__global__ void __launch_bounds__(kOptThreads) slot_table_fill(CacheWriteArgs a) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kOptThreads + threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();  // the previous launch's pass 2 restores the table
  if (t >= a.num_tokens) return;
  const std::int64_t s = physical_slot(a, t);
  if (s >= 0 && s < a.num_slots) a.slot_table[s] = static_cast<std::int32_t>(t);
}

// One block per chunk of consecutive slots, one thread per (slot, head, vector) item while they
// fit, in the order of the cache's memory: slot-major for NHD, head-major (HEAD_MAJOR) for HND.
template <class In, class Out, int V, bool SCALED, bool HEAD_MAJOR>
__global__ void __launch_bounds__(kSlotThreads, SCALED ? kScaledMinBlocks<In> : 1)
    cache_write_slot_order(CacheWriteArgs a, FastDiv vecs_per_head, FastDiv heads, FastDiv chunk,
                           FastDiv block_div) {
  const auto n_chunk = static_cast<int>(chunk.divisor());
  const std::int64_t s0 = static_cast<std::int64_t>(blockIdx.x) * n_chunk;
  const int n = static_cast<int>(a.num_slots - s0 < n_chunk ? a.num_slots - s0 : n_chunk);
  const auto vph = static_cast<int>(vecs_per_head.divisor());
  const auto nh = static_cast<int>(heads.divisor());
  const int items = n_chunk * nh * vph;
  pdl_launch_dependents();
  pdl_wait();  // pass 1 has filled the table
  for (int i = static_cast<int>(threadIdx.x); i < items; i += static_cast<int>(blockDim.x)) {
    const auto r = static_cast<int>(vecs_per_head.div(static_cast<std::uint32_t>(i)));
    const int d = (i - r * vph) * V;
    int j, h;
    if constexpr (HEAD_MAJOR) {
      h = static_cast<int>(chunk.div(static_cast<std::uint32_t>(r)));
      j = r - h * n_chunk;
    } else {
      j = static_cast<int>(heads.div(static_cast<std::uint32_t>(r)));
      h = r - j * nh;
    }
    if (j >= n) continue;
    const std::int64_t slot = s0 + j;
    const std::int64_t t = a.slot_table[slot];
    if (t < 0) continue;
    const In* key = static_cast<const In*>(a.key) + (t * a.key_s0 + h * a.key_s1 + d);
    const In* value = static_cast<const In*>(a.value) + (t * a.value_s0 + h * a.value_s1 + d);
    const Vec<In, V> kx = load_vec<In, V>(key);
    const Vec<In, V> vx = load_vec<In, V>(value);
    const bool scaled = SCALED || a.scale != ScaleMode::none;
    float ks = 1.0f, vs = 1.0f;
    if (scaled) load_scales(a, h, ks, vs);
    std::int64_t b, o;
    split_slot(slot, a.block_size, block_div, b, o);
    const std::int64_t dst = b * a.block_stride + o * a.slot_stride + h * a.head_stride + d;
    store_item<false>(static_cast<Out*>(a.key_cache) + dst, static_cast<Out*>(a.value_cache) + dst,
                      kx, vx, scaled, ks, vs, key, value);
  }
  __syncthreads();  // every item has read its slot's entry
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    a.slot_table[s0 + i] = -1;  // only this block reads these entries
}

template <class In, class Out, int V, bool SCALED>
cudaError_t launch_slot_order(const CacheWriteArgs& a, cudaStream_t stream) {
  if (a.slot_table == nullptr || a.num_slots <= 0 || a.num_slots > 0x7fffffff)
    return cudaErrorInvalidValue;
  // As many slots per block as one thread per item allows (at least one slot, whose items the
  // block's threads then loop over), rounded to whole 256-byte runs of the cache: `c0` slots
  // make one, so that no unit is split between two blocks (measured 3.5% faster for HND D=80,
  // 2.4% for D=576, the same elsewhere: docs/perf-notes.md v8 block-size experiment).
  const std::int64_t vph = a.head_size / V, per_slot = a.num_heads * vph;
  std::int64_t chunk = std::max<std::int64_t>(1, kSlotThreads / per_slot);
  const std::int64_t run = (a.slot_stride < a.head_stride ? 1 : a.num_heads) * a.head_size *
                           static_cast<std::int64_t>(sizeof(Out));
  const std::int64_t c0 = 256 / std::gcd<std::int64_t>(run, 256);
  if (c0 <= 16) chunk = chunk < c0 ? c0 : chunk / c0 * c0;
  if (chunk * per_slot > 0x7fffffff - kSlotThreads) return cudaErrorInvalidValue;
  const std::int64_t threads =
      std::min<std::int64_t>(kSlotThreads, (chunk * per_slot + 31) / 32 * 32);
  const unsigned fill_blocks = grid_blocks(a.num_tokens, kOptThreads);
  const unsigned chunks = grid_blocks(a.num_slots, chunk);
  if (fill_blocks == 0 || chunks == 0) return cudaErrorInvalidValue;
  if (const cudaError_t e = launch_pdl(slot_table_fill, fill_blocks, kOptThreads, stream, a);
      e != cudaSuccess)
    return e;
  const FastDiv fv(static_cast<std::uint32_t>(vph)), fh(static_cast<std::uint32_t>(a.num_heads)),
      fc(static_cast<std::uint32_t>(chunk)), bd = block_size_div(a);
  const auto nt = static_cast<unsigned>(threads);
  if (a.slot_stride < a.head_stride)  // HND: a head's slots are contiguous
    return launch_pdl(cache_write_slot_order<In, Out, V, SCALED, true>, chunks, nt, stream, a, fv,
                      fh, fc, bd);
  return launch_pdl(cache_write_slot_order<In, Out, V, SCALED, false>, chunks, nt, stream, a, fv,
                    fh, fc, bd);
}

template <class In, class Out, int V>
cudaError_t launch_slot_order(const CacheWriteArgs& a, cudaStream_t stream) {
  return a.scale != ScaleMode::none ? launch_slot_order<In, Out, V, true>(a, stream)
                                    : launch_slot_order<In, Out, V, false>(a, stream);
}

// Whether `optimized` takes the slot-order path (docs/perf-notes.md v8, configs/slot_order.yaml).
// Measured on random slots, it won where the token-order write scatters rows badly: HND heads
// whose rows are not whole 256-byte units (D=80 bf16, 160 bytes: 19% faster at T=131072, 9% at
// 32768) and slots of 8 KB or more (H=32 D=128 bf16: 2-4% at T=32768 and 131072). It lost 2-10%
// on every other shape there, and 0.6-2.2 µs at T=1024 (one launch more, and a pass over
// every slot). So: those two shapes where they were measured to win (HND rows from 2x L2
// moved, 8 KB slots from 8x), a dense cache (at most two slots per token) and a slot table.
bool prefer_slot_order(const CacheWriteArgs& a, std::int64_t in_bytes, std::int64_t out_bytes) {
  if (a.slot_table == nullptr || a.num_slots > 2 * a.num_tokens) return false;
  const std::int64_t moved = 2 * a.num_tokens * a.num_heads * a.head_size * (in_bytes + out_bytes);
  const std::int64_t l2 = device_l2_bytes();
  const std::int64_t head_row = a.head_size * out_bytes;
  const bool hnd = a.slot_stride < a.head_stride;
  // HND D=80 won from 2.7x L2 (T=32768) up; 8 KB slots were even at 4.3x L2 (T=8192).
  return (hnd && head_row % 256 != 0 && moved >= 2 * l2) ||
         (a.num_heads * head_row >= 8192 && moved >= 8 * l2);
}

// Calls launch(std::integral_constant<int, V>) with the widest access the shape allows: 16
// bytes of the narrower type, 16 bytes of input, one element.
template <class In, class Out, class F>
cudaError_t with_widest_vec(const CacheWriteArgs& a, F&& launch) {
  constexpr int kWide = kWideVec<In, Out>, kNarrow = kVecWidth<In>;
  if (cache_vec_ok(a, kWide, sizeof(In), sizeof(Out)))
    return launch(std::integral_constant<int, kWide>{});
  if constexpr (kNarrow != kWide) {
    if (cache_vec_ok(a, kNarrow, sizeof(In), sizeof(Out)))
      return launch(std::integral_constant<int, kNarrow>{});
  }
  return launch(std::integral_constant<int, 1>{});
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
      case Variant::optimized: {
        if (prefer_slot_order(a, sizeof(In), sizeof(Out)))
          return launch_cache_write(a, Variant::slot_order, stream);
        constexpr int kWide = kWideVec<In, Out>, kNarrow = kVecWidth<In>;
        if constexpr (kNarrow != kWide) {
          // A scaled write that fits in one wave runs its code once: there, 16-byte input
          // vectors (half the inlined division code) beat the wide ones (docs/perf-notes.md v5).
          if (a.scale != ScaleMode::none && cache_vec_ok(a, kNarrow, sizeof(In), sizeof(Out)) &&
              fits_one_wave<In, Out, kNarrow, true>(a))
            return launch_optimized<In, Out, kNarrow, true>(a, stream);
          // Unscaled narrowing casts in 16-byte input vectors (docs/perf-notes.md v12):
          // 16-bit -> fp8 at every size (7-14% faster at T <= 128, 14-28% at T=1024, 2% above
          // L2); f32 inputs in one wave only (2-26% faster there, 1-2.6% slower at T=131072).
          if (a.scale == ScaleMode::none && cache_vec_ok(a, kNarrow, sizeof(In), sizeof(Out)) &&
              (sizeof(In) == 2 || fits_one_wave<In, Out, kNarrow, false>(a)))
            return launch_optimized<In, Out, kNarrow, false>(a, stream);
        }
        // Otherwise the widest access the shape allows.
        return with_widest_vec<In, Out>(
            a, [&](auto v) { return launch_optimized<In, Out, decltype(v)::value>(a, stream); });
      }
      case Variant::slot_order:
        return with_widest_vec<In, Out>(
            a, [&](auto v) { return launch_slot_order<In, Out, decltype(v)::value>(a, stream); });
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace kvbench::kernels
