// concat_and_cache_mla, the `optimized` variant (its only one): why it exists: the latent row is
// one contiguous 576-value copy per token, so whole-row blocks of 16-byte vectors move it with no
// per-element index math. A block holds whole rows (x: a row's vectors, y: tokens); a thread
// reads its token's slot once, then moves vectors of kv_c or k_pe to the entry, cast (and divided
// by the per-tensor scale) by kernels/common/vec.cuh, two values per conversion instruction.
// Every launch uses PDL. This file only executes a plan (plan.cpp).
#include "kernels/common/convert.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/vec.cuh"
#include "kernels/mla_cache/launchers.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kMaxThreads = 256;

template <class In, class Out, int V, bool SCALED>
__global__ void __launch_bounds__(kMaxThreads) mla_cache_plain(MlaCacheArgs a) {
  pdl_launch_dependents();  // launched with PDL
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (t >= a.num_tokens) return;
  pdl_wait();  // slots, inputs and the scale may come from the previous kernel
  const std::int64_t slot = a.slot_mapping[t];
  if (slot < 0) return;  // padding (a CUDA-graph slot of -1): nothing written
  const std::int64_t block = slot / a.block_size, offset = slot % a.block_size;
  Out* entry = static_cast<Out*>(a.cache) + block * a.block_stride + offset * a.entry_stride;
  const In* kv_c = static_cast<const In*>(a.kv_c) + t * a.kv_c_s0;
  const In* k_pe = static_cast<const In*>(a.k_pe) + t * a.k_pe_s0;
  const auto kv_c_vecs = static_cast<int>(a.lora_rank / V);
  const auto row_vecs = static_cast<int>((a.lora_rank + a.rope_dim) / V);
  float scale = 1.0f;
  if constexpr (SCALED) scale = *a.scale;
  const Divisor divisor(scale);
  for (int j = static_cast<int>(threadIdx.x); j < row_vecs; j += static_cast<int>(blockDim.x)) {
    const Vec<In, V> x =
        j < kv_c_vecs ? load_vec<In, V>(kv_c + j * V) : load_vec<In, V>(k_pe + (j - kv_c_vecs) * V);
    if constexpr (SCALED) {
      store_vec(entry + j * V, cast_vec<Out>(x, divisor));
    } else {
      store_vec(entry + j * V, cast_vec<Out>(x));
    }
  }
}

template <class In, class Out, int V>
cudaError_t launch_plain(const MlaCacheArgs& a, const MlaCachePlan& p, cudaStream_t stream) {
  const dim3 grid(p.grid.x, p.grid.y, p.grid.z), block(p.block.x, p.block.y, p.block.z);
  auto* kernel = a.scale ? mla_cache_plain<In, Out, V, true> : mla_cache_plain<In, Out, V, false>;
  return launch_pdl(kernel, grid, block, stream, a);
}

}  // namespace

cudaError_t launch_mla_cache_plain(const MlaCacheArgs& a, const MlaCachePlan& p,
                                   cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    if constexpr (sizeof(In) != 2 || sizeof(Out) == 4) {
      return cudaErrorInvalidValue;  // mla_cache_supported() refuses these pairs
    } else {
      constexpr int kWide = kVecWidth<In>;
      if (p.vec == kWide) return launch_plain<In, Out, kWide>(a, p, stream);
      if (p.vec == 1) return launch_plain<In, Out, 1>(a, p, stream);
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace kvbench::kernels
