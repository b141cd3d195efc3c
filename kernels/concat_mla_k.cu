// concat_and_cast_mha_k kernels.
//
// Variants:
//   seed_port  One block of 128 threads per token, mirroring the seed's Triton program: the
//              [H, NOPE] tile is copied element by element, then the [ROPE] row is broadcast
//              to every head. Kept as the baseline the faster variants are measured against.
//   optimized  A thread moves one vector of a head: 16 bytes of the narrower of the two dtypes
//              (f32->bf16: 8 elements, two 16-byte loads, one 16-byte store), or of the input for
//              narrowing casts where that measured faster (bf16->fp8: 8 elements, one 16-byte load,
//              one 8-byte store), so all lanes do the same accesses; conversions go two per
//              instruction. Blocks are (vector, head, token) tiles (concat_2d): an item's
//              coordinates are its thread indices, with no per-item division. The rope row is read
//              from DRAM once per token; its per-head re-reads hit L1. Between one wave and L2's
//              size a thread instead keeps one item and walks the tokens (concat_walk); heads too
//              wide for a 2-D block take the flat (token, item) tiling (concat_optimized). Every
//              launch uses PDL. Launch shape in launch_optimized(). Falls back to 16-byte input
//              vectors, then to 1-element accesses, for unaligned pointers or strides.
#include <algorithm>

#include "kernels/concat_mla_k.hpp"
#include "kernels/convert.cuh"
#include "kernels/vec.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;  // Triton's default num_warps=4

template <class In, class Out>
__global__ void __launch_bounds__(kSeedThreads) concat_seed_port(ConcatArgs a) {
  const std::int64_t t = blockIdx.x;
  const In* nope = static_cast<const In*>(a.k_nope) + t * a.nope_s0;  // [H, NOPE] of token t
  const In* rope = static_cast<const In*>(a.k_rope) + t * a.rope_s0;  // [ROPE] of token t
  Out* k = static_cast<Out*>(a.k) + t * a.k_s0;                       // [H, NOPE+ROPE]

  const std::int64_t nope_elems = a.num_heads * a.nope_dim;
  for (std::int64_t i = threadIdx.x; i < nope_elems; i += blockDim.x) {
    const std::int64_t h = i / a.nope_dim;
    const std::int64_t d = i - h * a.nope_dim;
    k[h * a.k_s1 + d] = cast<Out>(nope[h * a.nope_s1 + d]);
  }
  const std::int64_t rope_elems = a.num_heads * a.rope_dim;
  for (std::int64_t i = threadIdx.x; i < rope_elems; i += blockDim.x) {
    const std::int64_t h = i / a.rope_dim;
    const std::int64_t j = i - h * a.rope_dim;
    k[h * a.k_s1 + a.nope_dim + j] = cast<Out>(rope[j]);  // same rope for every head
  }
}

constexpr int kOptThreads = 256;

template <class In, class Out, int V>
__global__ void __launch_bounds__(kOptThreads)
    concat_optimized(ConcatArgs a, int nope_vecs, FastDiv head_vecs, FastDiv per_token) {
  pdl_launch_dependents();  // launched with PDL
  pdl_wait();               // inputs may come from the previous kernel
  const TileCursor cursor(static_cast<std::int64_t>(blockIdx.x) * kOptThreads, per_token);
  std::int64_t t;
  int u;
  cursor.locate(static_cast<int>(threadIdx.x), t, u);
  if (t >= a.num_tokens) return;
  const auto h = static_cast<int>(head_vecs.div(static_cast<std::uint32_t>(u)));
  const int j = u - h * static_cast<int>(head_vecs.divisor());  // vector in NOPE + ROPE
  const In* nope = static_cast<const In*>(a.k_nope);
  const In* rope = static_cast<const In*>(a.k_rope);
  const Vec<In, V> x = j < nope_vecs
                           ? load_vec<In, V>(nope + (t * a.nope_s0 + h * a.nope_s1 + j * V))
                           : load_vec<In, V>(rope + (t * a.rope_s0 + (j - nope_vecs) * V));
  store_vec(static_cast<Out*>(a.k) + (t * a.k_s0 + h * a.k_s1 + j * V), cast_vec<Out>(x));
}

constexpr int k2DThreads = 512;  // the most a 2-D block is launched with
constexpr int k2DTarget = 256;   // threads a 2-D block is given, at most

// The 2-D kernel's arguments: ConcatArgs' pointers and strides, with indices of type I: int
// where every element offset of the launch fits in 31 bits (concat_fits_int32), else int64. At
// T=1, H=128 (bf16) the int64 version of this kernel took 0.93 us, one with int32 indices on a
// 48-byte argument 0.845 us, a plain 16-byte copy of the same bytes 0.76 us: in a one-wave launch
// the address arithmetic before the first load is on the critical path (docs/perf-notes.md v15).
template <class I>
struct Concat2DArgs {
  const void* k_nope;
  const void* k_rope;
  void* k;
  I num_tokens, nope_s0, nope_s1, rope_s0, k_s0, k_s1;
};

// Whether every element offset a launch computes fits in int32 (strides non-negative).
bool concat_fits_int32(const ConcatArgs& a) {
  return offsets_fit_int32(a.num_tokens, a.nope_s0, a.nope_s1, a.num_heads, a.nope_dim) &&
         offsets_fit_int32(a.num_tokens, a.rope_s0, 0, 1, a.rope_dim) &&
         offsets_fit_int32(a.num_tokens, a.k_s0, a.k_s1, a.num_heads, a.nope_dim + a.rope_dim);
}

template <class I>
Concat2DArgs<I> concat_2d_args(const ConcatArgs& a) {
  return {a.k_nope,
          a.k_rope,
          a.k,
          static_cast<I>(a.num_tokens),
          static_cast<I>(a.nope_s0),
          static_cast<I>(a.nope_s1),
          static_cast<I>(a.rope_s0),
          static_cast<I>(a.k_s0),
          static_cast<I>(a.k_s1)};
}

// (vector in head, head, token) tiling: blockDim = (NOPE+ROPE vectors, heads, tokens), so an
// item's coordinates are its thread and block indices; the one division, of the block index
// into (token block, head block), is the same for the whole block. Each thread moves UNROLL
// tokens blockDim.z apart, their loads issued before their stores.
template <class In, class Out, int V, int UNROLL, class I>
__global__ void __launch_bounds__(k2DThreads)
    concat_2d(Concat2DArgs<I> a, int nope_vecs, FastDiv head_blocks) {
  pdl_launch_dependents();  // launched with PDL
  const std::uint32_t token_block = head_blocks.div(blockIdx.x);
  const std::uint32_t head_block = blockIdx.x - token_block * head_blocks.divisor();
  const int j = static_cast<int>(threadIdx.x);
  const I h = static_cast<I>(head_block) * static_cast<I>(blockDim.y) + static_cast<I>(threadIdx.y);
  const I t0 = static_cast<I>(token_block) * static_cast<I>(blockDim.z * UNROLL) +
               static_cast<I>(threadIdx.z);
  const I dt = static_cast<I>(blockDim.z);
  const bool is_nope = j < nope_vecs;
  const I src_s0 = is_nope ? a.nope_s0 : a.rope_s0;
  const In* src = (is_nope ? static_cast<const In*>(a.k_nope) + (h * a.nope_s1 + j * V)
                           : static_cast<const In*>(a.k_rope) + (j - nope_vecs) * V) +
                  t0 * src_s0;
  Out* dst = static_cast<Out*>(a.k) + (h * a.k_s1 + j * V + t0 * a.k_s0);
  pdl_wait_after(src, dst);  // inputs may come from the previous kernel
  Vec<In, V> x[UNROLL];
#pragma unroll
  for (int k = 0; k < UNROLL; ++k)
    if (t0 + k * dt < a.num_tokens) x[k] = load_vec<In, V>(src + k * dt * src_s0);
#pragma unroll
  for (int k = 0; k < UNROLL; ++k)
    if (t0 + k * dt < a.num_tokens) store_vec(dst + k * dt * a.k_s0, cast_vec<Out>(x[k]));
}

constexpr int kWalkThreads = 512;

// For working sets that fit in L2 but not in one wave: each thread keeps one (head, vector)
// item of a token and walks the tokens blockIdx.y, + gridDim.y, ... (one wave of blocks), UNROLL
// tokens' loads issued before their stores. The item's index math is done once, so a token costs
// the thread two address increments, a load and a store: what limits an L2-resident copy.
// LATE_TRIGGER lets the next launch start only once this block's walk is done (see launch_walk).
template <class In, class Out, int V, int UNROLL, bool LATE_TRIGGER>
__global__ void __launch_bounds__(kWalkThreads)
    concat_walk(ConcatArgs a, int nope_vecs, FastDiv head_vecs, int per_token) {
  if constexpr (!LATE_TRIGGER) pdl_launch_dependents();  // launched with PDL
  const int u = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (u >= per_token) return;  // exiting threads count as triggered
  const auto h = static_cast<int>(head_vecs.div(static_cast<std::uint32_t>(u)));
  const int j = u - h * static_cast<int>(head_vecs.divisor());
  const bool is_nope = j < nope_vecs;
  const std::int64_t t0 = blockIdx.y, step = gridDim.y;
  const std::int64_t src_s0 = is_nope ? a.nope_s0 : a.rope_s0;
  const In* src = is_nope ? static_cast<const In*>(a.k_nope) + (h * a.nope_s1 + j * V)
                          : static_cast<const In*>(a.k_rope) + (j - nope_vecs) * V;
  src += t0 * src_s0;
  Out* dst = static_cast<Out*>(a.k) + (h * a.k_s1 + j * V + t0 * a.k_s0);
  const std::int64_t src_step = step * src_s0, dst_step = step * a.k_s0;
  pdl_wait_after(src, dst);  // inputs may come from the previous kernel
  for (std::int64_t t = t0; t < a.num_tokens;
       t += UNROLL * step, src += UNROLL * src_step, dst += UNROLL * dst_step) {
    Vec<In, V> x[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      if (t + k * step < a.num_tokens) x[k] = load_vec<In, V>(src + k * src_step);
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      if (t + k * step < a.num_tokens) store_vec(dst + k * dst_step, cast_vec<Out>(x[k]));
  }
  if constexpr (LATE_TRIGGER) pdl_launch_dependents();
}

// Bytes a launch reads and writes (SPEC.md's count).
std::int64_t concat_bytes(const ConcatArgs& a) {
  const std::int64_t in = static_cast<std::int64_t>(size_of(a.in_dtype)),
                     out = static_cast<std::int64_t>(size_of(a.out_dtype));
  return a.num_tokens * (a.num_heads * a.nope_dim * in + a.rope_dim * in +
                         a.num_heads * (a.nope_dim + a.rope_dim) * out);
}

template <class In, class Out, int V, int UNROLL>
cudaError_t launch_walk(const ConcatArgs& a, int nope_vecs, FastDiv head_vecs, int per_token,
                        cudaStream_t stream) {
  // The token's items split evenly over the fewest blocks of at most kWalkThreads: 768 items as
  // 512 + 256 threads left half of every second block idle for the whole walk (measured 5-18%
  // slower than even blocks, docs/perf-notes.md v7d).
  const int even = (per_token + kWalkThreads - 1) / kWalkThreads;
  const int threads = ((per_token + even - 1) / even + 31) / 32 * 32;
  const int gx = (per_token + threads - 1) / threads;
  const std::int64_t resident = static_cast<std::int64_t>(device_sm_count()) *
                                resident_blocks<concat_walk<In, Out, V, UNROLL, false>>(threads);
  const std::int64_t gy =
      std::max<std::int64_t>(1, std::min<std::int64_t>({a.num_tokens, resident / gx, 65535}));
  // PDL's trigger after the walk instead of at the start above 45% of L2's size: measured up to
  // 26% faster with 12 heads at 37-48 MB (f32 -> bf16, bf16 -> fp8), at worst 2.5% slower above
  // it (64 heads, 31.6 MB); below it up to 9.5% slower (5.6 MB). Not explained: with the early
  // trigger these walks leave L2-resident speed at smaller working sets (docs/perf-notes.md v14).
  auto* kernel = 20 * concat_bytes(a) > 9 * device_l2_bytes()
                     ? concat_walk<In, Out, V, UNROLL, true>
                     : concat_walk<In, Out, V, UNROLL, false>;
  return launch_pdl(kernel, dim3(gx, static_cast<unsigned>(gy)), threads, stream, a, nope_vecs,
                    head_vecs, per_token);
}

// Whether every access can be `n` elements wide: dims and strides divisible, pointers aligned.
bool concat_vec_ok(const ConcatArgs& a, int n, int in_bytes, int out_bytes) {
  return divisible(a.nope_dim, n) && divisible(a.rope_dim, n) && divisible(a.nope_s0, n) &&
         divisible(a.nope_s1, n) && divisible(a.rope_s0, n) && divisible(a.k_s0, n) &&
         divisible(a.k_s1, n) && vec_aligned(a.k_nope, in_bytes, n) &&
         vec_aligned(a.k_rope, in_bytes, n) && vec_aligned(a.k, out_bytes, n);
}

// Launch shape (measured, docs/perf-notes.md v6): the 2-D tiling in one wave and above L2's
// size, token walking in between, the flat tiling for heads too wide for a 2-D block. Every
// launch uses PDL.
template <class In, class Out, int V, int UNROLL>
cudaError_t launch_2d(const ConcatArgs& a, const Tile2D& tile, int nope_vecs, cudaStream_t stream) {
  const FastDiv head_blocks(tile.head_blocks);
  if (concat_fits_int32(a))
    return launch_pdl(concat_2d<In, Out, V, UNROLL, int>, tile.grid(), tile.block(), stream,
                      concat_2d_args<int>(a), nope_vecs, head_blocks);
  return launch_pdl(concat_2d<In, Out, V, UNROLL, std::int64_t>, tile.grid(), tile.block(), stream,
                    concat_2d_args<std::int64_t>(a), nope_vecs, head_blocks);
}

// Whether the 2-D tiling in V-element vectors runs in one wave.
template <class In, class Out, int V>
bool concat_one_wave(const ConcatArgs& a) {
  const Tile2D tile(a.num_tokens, a.num_heads, (a.nope_dim + a.rope_dim) / V, k2DTarget, 1);
  return tile.ok() &&
         one_wave(tile.blocks(), resident_blocks<concat_2d<In, Out, V, 1, std::int64_t>>(tile.threads()));
}

template <class In, class Out, int V>
cudaError_t launch_optimized(const ConcatArgs& a, cudaStream_t stream) {
  const std::int64_t nope_vecs = a.nope_dim / V, head_vecs = (a.nope_dim + a.rope_dim) / V;
  const std::int64_t per_token = a.num_heads * head_vecs;
  if (per_token > (1 << 30)) return cudaErrorInvalidValue;
  const std::int64_t items = a.num_tokens * per_token;
  const auto nv = static_cast<int>(nope_vecs);
  const FastDiv hv(static_cast<std::uint32_t>(head_vecs)),
      pt(static_cast<std::uint32_t>(per_token));
  const unsigned b1 = grid_blocks(items, kOptThreads);
  if (b1 == 0) return cudaErrorInvalidValue;
  const bool fits_l2 = concat_bytes(a) <= device_l2_bytes();
  const Tile2D tile(a.num_tokens, a.num_heads, head_vecs, k2DTarget, 1);
  if (tile.ok()) {
    if (concat_one_wave<In, Out, V>(a)) return launch_2d<In, Out, V, 1>(a, tile, nv, stream);
    // Above L2 (DRAM-bound): two tokens in flight per thread for 16-byte input vectors; wider
    // ones (fp32 in) stay at one, as the registers cost more occupancy than they buy.
    if (!fits_l2) {
      if constexpr (V * sizeof(In) == 16) {
        const Tile2D tile2(a.num_tokens, a.num_heads, head_vecs, k2DTarget, 2);
        if (tile2.ok()) return launch_2d<In, Out, V, 2>(a, tile2, nv, stream);
      }
      return launch_2d<In, Out, V, 1>(a, tile, nv, stream);
    }
  }
  // Between one wave and L2's size (L2-resident when the producer or a graph replay just
  // touched the data), walking tokens measured faster than either tiling (up to 20% against the
  // flat one, 28% against the 2-D one).
  if (fits_l2 && !one_wave(b1, resident_blocks<concat_optimized<In, Out, V>>(kOptThreads))) {
    constexpr int kUnroll = V * sizeof(In) == 16 ? 4 : 1;  // wider vectors: registers
    return launch_walk<In, Out, V, kUnroll>(a, nv, hv, static_cast<int>(per_token), stream);
  }
  // Shapes the 2-D tiling cannot take (a head's vectors above k2DTarget threads): flat.
  return launch_pdl(concat_optimized<In, Out, V>, b1, kOptThreads, stream, a, nv, hv, pt);
}

}  // namespace

bool concat_supported(DType in, DType out) {
  (void)out;  // every output dtype is supported
  return !is_fp8(in);
}

cudaError_t launch_concat_mla_k(const ConcatArgs& a, Variant variant, cudaStream_t stream) {
  if (a.num_tokens <= 0 || a.num_heads <= 0 || a.nope_dim <= 0 || a.rope_dim <= 0 ||
      a.num_tokens > 0x7fffffff)
    return cudaErrorInvalidValue;
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    switch (variant) {
      case Variant::seed_port:
        concat_seed_port<In, Out>
            <<<static_cast<unsigned>(a.num_tokens), kSeedThreads, 0, stream>>>(a);
        return cudaGetLastError();
      case Variant::optimized: {
        constexpr int kWide = kWideVec<In, Out>, kNarrow = kVecWidth<In>;
        // Narrowing casts in 16-byte input vectors where they measured faster than 16-byte
        // output ones (docs/perf-notes.md v12): 16-bit -> fp8 everywhere (7-14% at T <= 128,
        // up to 10% at T=1024; 1-2% slower at H=128 T=1024 and H=16 T=8192);
        // f32 -> fp8 while the data fit in L2 (26-31% at T <= 128; the same above L2); f32 ->
        // 16-bit in one wave only (7-12% there; 10% slower walking tokens at 12 heads, T=1024).
        if constexpr (kNarrow != kWide) {
          const bool narrow =
              sizeof(In) == 2 || (sizeof(Out) == 1 ? concat_bytes(a) <= device_l2_bytes()
                                                   : concat_one_wave<In, Out, kNarrow>(a));
          if (narrow && concat_vec_ok(a, kNarrow, sizeof(In), sizeof(Out)))
            return launch_optimized<In, Out, kNarrow>(a, stream);
        }
        // Otherwise the widest access the shape allows: 16 bytes of the narrower type, 16 bytes
        // of input, one element.
        if (concat_vec_ok(a, kWide, sizeof(In), sizeof(Out)))
          return launch_optimized<In, Out, kWide>(a, stream);
        if constexpr (kNarrow != kWide) {
          if (concat_vec_ok(a, kNarrow, sizeof(In), sizeof(Out)))
            return launch_optimized<In, Out, kNarrow>(a, stream);
        }
        return launch_optimized<In, Out, 1>(a, stream);
      }
      case Variant::slot_order:  // a cache-write variant: concat has no slots
        return cudaErrorInvalidValue;
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace kvbench::kernels
