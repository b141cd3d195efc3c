// concat_and_cast_mha_k, the `seed_port` variant: one block of 128 threads per token, mirroring
// the seed's Triton program: the [H, NOPE] tile is copied element by element, then the [ROPE]
// row is broadcast to every head. Kept as the baseline the faster variant is measured against.
#include "kernels/common/convert.cuh"
#include "kernels/concat_mha_k/launchers.hpp"

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

}  // namespace

cudaError_t launch_concat_seed_port(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    concat_seed_port<In, Out><<<p.grid.x, p.block.x, 0, stream>>>(a);
    return cudaGetLastError();
  });
}

}  // namespace kvbench::kernels
