// concat_and_cast_mha_k (SPEC.md §1): build per-head K from k_nope and a rope part broadcast over
// heads, casting to the output dtype. Host-callable interface, plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::kernels {

// Pointers are device memory; strides are in elements, innermost dimension contiguous.
struct ConcatArgs {
  const void* k_nope;  // [T, H, NOPE], strides (nope_s0, nope_s1, 1), in_dtype
  const void* k_rope;  // [T, 1, ROPE], stride (rope_s0, -, 1), in_dtype
  void* k;             // [T, H, NOPE + ROPE], strides (k_s0, k_s1, 1), out_dtype
  std::int64_t num_tokens, num_heads, nope_dim, rope_dim;
  std::int64_t nope_s0, nope_s1, rope_s0, k_s0, k_s1;
  DType in_dtype, out_dtype;
};

// Whether some variant can run this dtype pair (inputs f32/f16/bf16; outputs those and fp8).
bool concat_supported(DType in, DType out);

struct ConcatPlan;  // kernels/concat_mha_k/plan.hpp: plan_concat() decides every launch

// Enqueues the planned launch on `stream`. Returns cudaErrorInvalidValue for a plan that is not
// launchable (unsupported dtype pair or size), else the launch status.
cudaError_t launch_concat_mha_k(const ConcatArgs& args, const ConcatPlan& plan,
                                cudaStream_t stream);

// Plans for the current device, then launches.
cudaError_t launch_concat_mha_k(const ConcatArgs& args, Variant variant, cudaStream_t stream);

}  // namespace kvbench::kernels
