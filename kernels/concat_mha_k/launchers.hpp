// The launchers of each variant, executing a plan (internal to kernels/concat_mha_k).
#pragma once

#include "kernels/concat_mha_k/plan.hpp"

namespace kvbench::kernels {

cudaError_t launch_concat_seed_port(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream);
cudaError_t launch_concat_optimized(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream);

}  // namespace kvbench::kernels
