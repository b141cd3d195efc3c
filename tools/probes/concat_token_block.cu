// A probe-only concat_and_cast_mha_k kernel in the seed Triton kernel's shape: a block per token
// (a grid of blocks walking the tokens when there are more tokens than blocks), its threads
// covering the token's (head, vector) items ITEMS at a time, every load of a round issued before
// its stores. It asks whether that shape, which balances the SMs exactly when the tokens number
// about the SMs, is what makes the seed faster at T=128 with 128 heads after a producer.
// Validated by the runner like any launch (tools/probes/concat_plan.cpp, `--token-block`).
#include <algorithm>

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_div.hpp"
#include "kernels/common/pdl.cuh"
#include "kernels/common/vec.cuh"
#include "tools/probes/concat_token_block.hpp"

namespace kvbench::probes {
namespace {

using kernels::FastDiv;
using kernels::Vec;

template <class In, class Out, int V, int ITEMS>
__global__ void __launch_bounds__(512)
    concat_token_block(kernels::ConcatArgs a, int nope_vecs, FastDiv head_vecs, int per_token) {
  kernels::pdl_launch_dependents();  // launched with PDL
  const In* nope = static_cast<const In*>(a.k_nope);
  const In* rope = static_cast<const In*>(a.k_rope);
  Out* k = static_cast<Out*>(a.k);
  const int hv = static_cast<int>(head_vecs.divisor());
  kernels::pdl_wait();  // inputs may come from the previous kernel
  for (std::int64_t t = blockIdx.x; t < a.num_tokens; t += gridDim.x) {
    for (int base = static_cast<int>(threadIdx.x); base < per_token;
         base += ITEMS * static_cast<int>(blockDim.x)) {
      Vec<In, V> x[ITEMS];
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int u = base + i * static_cast<int>(blockDim.x);
        if (u >= per_token) continue;
        const int h = static_cast<int>(head_vecs.div(static_cast<std::uint32_t>(u)));
        const int j = u - h * hv;
        x[i] = j < nope_vecs
                   ? kernels::load_vec<In, V>(nope + (t * a.nope_s0 + h * a.nope_s1 + j * V))
                   : kernels::load_vec<In, V>(rope + (t * a.rope_s0 + (j - nope_vecs) * V));
      }
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int u = base + i * static_cast<int>(blockDim.x);
        if (u >= per_token) continue;
        const int h = static_cast<int>(head_vecs.div(static_cast<std::uint32_t>(u)));
        const int j = u - h * hv;
        kernels::store_vec(k + (t * a.k_s0 + h * a.k_s1 + j * V), kernels::cast_vec<Out>(x[i]));
      }
    }
  }
}

template <class In, class Out, int V>
cudaError_t launch(const kernels::ConcatArgs& a, int threads, int items, cudaStream_t s) {
  const int nope_vecs = static_cast<int>(a.nope_dim / V);
  const std::int64_t head_vecs = (a.nope_dim + a.rope_dim) / V;
  const auto per_token = static_cast<int>(a.num_heads * head_vecs);
  const FastDiv hv(static_cast<std::uint32_t>(head_vecs));
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(a.num_tokens, 1 << 20)));
  const dim3 block(static_cast<unsigned>(threads));
  switch (items) {
    case 6:
      return kernels::launch_pdl(concat_token_block<In, Out, V, 6>, grid, block, s, a, nope_vecs,
                                 hv, per_token);
    case 12:
      return kernels::launch_pdl(concat_token_block<In, Out, V, 12>, grid, block, s, a, nope_vecs,
                                 hv, per_token);
    case 24:
      return kernels::launch_pdl(concat_token_block<In, Out, V, 24>, grid, block, s, a, nope_vecs,
                                 hv, per_token);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_concat_token_block(const kernels::ConcatArgs& a, int vec, int threads, int items,
                                      cudaStream_t s) {
  // The dtype pairs of perf.yaml's concat cases with 128 heads, in 16-byte input vectors.
  if (vec != 8) return cudaErrorInvalidValue;
  if (a.in_dtype == DType::bf16 && a.out_dtype == DType::bf16)
    return launch<__nv_bfloat16, __nv_bfloat16, 8>(a, threads, items, s);
  if (a.in_dtype == DType::f32 && a.out_dtype == DType::bf16)
    return launch<float, __nv_bfloat16, 8>(a, threads, items, s);
  if (a.in_dtype == DType::bf16 && a.out_dtype == DType::fp8_e4m3)
    return launch<__nv_bfloat16, kernels::fp8_e4m3_t, 8>(a, threads, items, s);
  return cudaErrorInvalidValue;
}

}  // namespace kvbench::probes
