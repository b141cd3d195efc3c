// A probe-only concat_and_cast_mha_k kernel in the form the seed's Triton kernel compiles to: a
// block per token whose threads each keep many vectors in flight, their addresses one base plus a
// constant stride, no division per vector. Each thread owns one column of the token's tile (a
// 16-byte input vector of a head, nope or rope) and walks it down the heads, ITEMS loads issued
// before the first store; a rope column is loaded once and stored to every head it walks. It asks
// whether this shape, at 1 block an SM, is what makes the seed faster at T=128 with 128 heads after
// a producer. Validated by the runner like any launch (tools/probes/concat_plan.cpp, `--columns`).
#include "kernels/common/convert.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/vec.cuh"
#include "tools/probes/concat_columns.hpp"

namespace kvbench::probes {
namespace {

using kernels::Vec;

constexpr int kMaxThreads = 384;

template <class In, class Out, int V, int ITEMS>
__global__ void __launch_bounds__(kMaxThreads)
    concat_columns(kernels::ConcatArgs a, int nope_vecs, int head_vecs) {
  kernels::pdl_launch_dependents();  // launched with PDL
  const int tid = static_cast<int>(threadIdx.x);
  const int j = tid % head_vecs, h0 = tid / head_vecs;
  const int heads_a_pass = static_cast<int>(blockDim.x) / head_vecs;
  const bool nope = j < nope_vecs;
  const std::int64_t t = blockIdx.x;
  const In* src = nope ? static_cast<const In*>(a.k_nope) + t * a.nope_s0 + h0 * a.nope_s1 + j * V
                       : static_cast<const In*>(a.k_rope) + t * a.rope_s0 + (j - nope_vecs) * V;
  const std::int64_t src_step = heads_a_pass * a.nope_s1;
  Out* dst = static_cast<Out*>(a.k) + t * a.k_s0 + h0 * a.k_s1 + j * V;
  const std::int64_t dst_step = heads_a_pass * a.k_s1;
  kernels::pdl_wait();  // inputs may come from the previous kernel
  Vec<In, V> x[ITEMS];
  if (nope) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) x[i] = kernels::load_vec<In, V>(src + i * src_step);
  } else {
    const Vec<In, V> r = kernels::load_vec<In, V>(src);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) x[i] = r;
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
    kernels::store_vec(dst + i * dst_step, kernels::cast_vec<Out>(x[i]));
}

template <class In, class Out>
cudaError_t launch(const kernels::ConcatArgs& a, int items, cudaStream_t s) {
  constexpr int V = 16 / static_cast<int>(sizeof(In));
  if (a.nope_dim % V || a.rope_dim % V || a.num_heads % items || a.num_tokens > (1 << 30))
    return cudaErrorInvalidValue;
  const int nope_vecs = static_cast<int>(a.nope_dim / V);
  const int head_vecs = static_cast<int>((a.nope_dim + a.rope_dim) / V);
  const std::int64_t threads = head_vecs * (a.num_heads / items);
  if (threads > kMaxThreads) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(a.num_tokens)), block(static_cast<unsigned>(threads));
  switch (items) {
    case 8:
      return kernels::launch_pdl(concat_columns<In, Out, V, 8>, grid, block, s, a, nope_vecs,
                                 head_vecs);
    case 16:
      return kernels::launch_pdl(concat_columns<In, Out, V, 16>, grid, block, s, a, nope_vecs,
                                 head_vecs);
    case 32:
      return kernels::launch_pdl(concat_columns<In, Out, V, 32>, grid, block, s, a, nope_vecs,
                                 head_vecs);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_concat_columns(const kernels::ConcatArgs& a, int items, cudaStream_t s) {
  if (a.in_dtype == DType::bf16 && a.out_dtype == DType::bf16)
    return launch<__nv_bfloat16, __nv_bfloat16>(a, items, s);
  if (a.in_dtype == DType::f32 && a.out_dtype == DType::bf16)
    return launch<float, __nv_bfloat16>(a, items, s);
  if (a.in_dtype == DType::bf16 && a.out_dtype == DType::fp8_e4m3)
    return launch<__nv_bfloat16, kernels::fp8_e4m3_t>(a, items, s);
  return cudaErrorInvalidValue;
}

}  // namespace kvbench::probes
