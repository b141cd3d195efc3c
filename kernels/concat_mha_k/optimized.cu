// concat_and_cast_mha_k, the `optimized` variant: a thread moves one vector of a head, 16 bytes
// of the narrower of the two dtypes (f32->bf16: 8 elements, two 16-byte loads, one 16-byte
// store), or of the input for narrowing casts where that measures faster (bf16->fp8: 8
// elements, one 16-byte load, one 8-byte store), so all lanes do the same accesses; conversions
// go two per instruction. Three kernels, chosen by plan_concat (plan.cpp, docs/kernels.md):
//   concat_2d         (vector, head, token) blocks: an item's coordinates are its thread indices,
//                     with no per-item division; the rope row is read from DRAM once per token,
//                     its per-head re-reads hit L1. In one wave and above L2's size.
//   concat_walk       a thread keeps one item and walks the tokens: between one wave and L2.
//   concat_optimized  the flat (token, item) tiling, for heads too wide for a 2-D block.
// Every launch uses PDL. This file only executes a plan.
#include "kernels/common/convert.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/tiling.cuh"
#include "kernels/common/vec.cuh"
#include "kernels/concat_mha_k/launchers.hpp"

namespace kvbench::kernels {
namespace {

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

// The 2-D kernel's arguments: ConcatArgs' pointers and strides, with indices of type I: int
// where every element offset of the launch fits in 31 bits (concat_fits_int32), else int64. At
// T=1, H=128 (bf16) the int64 version of this kernel took 0.93 us, one with int32 indices on a
// 48-byte argument 0.845 us, a plain 16-byte copy of the same bytes 0.76 us: in a one-wave launch
// the address arithmetic before the first load is on the critical path (perf-notes/2026-12,
// "2026-12-03, 9fef309, 3537c4d, 897b29a").
template <class I>
struct Concat2DArgs {
  const void* k_nope;
  const void* k_rope;
  void* k;
  I num_tokens, nope_s0, nope_s1, rope_s0, k_s0, k_s1;
};

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
// LATE_TRIGGER lets the next launch start only once this block's walk is done (docs/kernels.md,
// "concat_and_cast_mha_k").
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

dim3 to_dim3(const Dim3& d) { return dim3(d.x, d.y, d.z); }

template <class In, class Out, int V>
cudaError_t launch_plan(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream) {
  const int nope_vecs = static_cast<int>(a.nope_dim / V);
  const std::int64_t head_vecs = (a.nope_dim + a.rope_dim) / V;
  const std::int64_t per_token = a.num_heads * head_vecs;
  const dim3 grid = to_dim3(p.grid), block = to_dim3(p.block);
  constexpr bool kIn16 = V * sizeof(In) == 16;
  switch (p.path) {
    case ConcatPath::tile_2d: {
      // The grid is (token block, head block), head block fastest.
      const FastDiv head_blocks(static_cast<std::uint32_t>(a.num_heads / p.block.y));
      const auto go = [&](auto unroll) {
        constexpr int U = decltype(unroll)::value;
        if (p.index == IndexType::int32)
          return launch_pdl(concat_2d<In, Out, V, U, int>, grid, block, stream,
                            concat_2d_args<int>(a), nope_vecs, head_blocks);
        return launch_pdl(concat_2d<In, Out, V, U, std::int64_t>, grid, block, stream,
                          concat_2d_args<std::int64_t>(a), nope_vecs, head_blocks);
      };
      if (p.unroll == 1) return go(std::integral_constant<int, 1>{});
      if constexpr (kIn16) {
        if (p.unroll == 2) return go(std::integral_constant<int, 2>{});
      }
      return cudaErrorInvalidValue;
    }
    case ConcatPath::walk: {
      constexpr int kUnroll = kIn16 ? 4 : 1;
      if (p.unroll != kUnroll) return cudaErrorInvalidValue;
      const FastDiv hv(static_cast<std::uint32_t>(head_vecs));
      auto* kernel = p.late_trigger ? concat_walk<In, Out, V, kUnroll, true>
                                    : concat_walk<In, Out, V, kUnroll, false>;
      return launch_pdl(kernel, grid, block, stream, a, nope_vecs, hv, static_cast<int>(per_token));
    }
    case ConcatPath::flat: {
      const FastDiv hv(static_cast<std::uint32_t>(head_vecs)),
          pt(static_cast<std::uint32_t>(per_token));
      return launch_pdl(concat_optimized<In, Out, V>, grid, block, stream, a, nope_vecs, hv, pt);
    }
    case ConcatPath::seed_port:
      break;
  }
  return cudaErrorInvalidValue;
}

template <class In, class Out, int V>
int occupancy(const KernelRef& k, int threads) {
  int n = 0;
  cudaError_t e = cudaErrorInvalidValue;
  switch (k.kernel) {
    case KernelRef::Kernel::concat_2d:
      if constexpr (V * sizeof(In) == 16) {
        if (k.unroll == 2) {
          e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
              &n, concat_2d<In, Out, V, 2, std::int64_t>, threads, 0);
          break;
        }
      }
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, concat_2d<In, Out, V, 1, std::int64_t>,
                                                        threads, 0);
      break;
    case KernelRef::Kernel::concat_walk:
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &n, concat_walk < In, Out, V, V * sizeof(In) == 16 ? 4 : 1, false >, threads, 0);
      break;
    case KernelRef::Kernel::concat_flat:
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, concat_optimized<In, Out, V>, threads,
                                                        0);
      break;
    default:
      break;
  }
  if (e != cudaSuccess || n <= 0) {
    cudaGetLastError();
    n = 1;
  }
  return n;
}

}  // namespace

cudaError_t launch_concat_optimized(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    return with_vec<In, Out>(
        p.vec, [&](auto v) { return launch_plan<In, Out, decltype(v)::value>(a, p, stream); });
  });
}

int concat_resident_blocks(const KernelRef& k, int threads) {
  int n = 1;
  dispatch_dtypes(k.in, k.out, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    return with_vec<In, Out>(k.vec, [&](auto v) {
      n = occupancy<In, Out, decltype(v)::value>(k, threads);
      return cudaSuccess;
    });
  });
  return n;
}

}  // namespace kvbench::kernels
