// The launchers of each path, executing a plan (internal to kernels/mla_cache).
#pragma once

#include "kernels/mla_cache/plan.hpp"

namespace kvbench::kernels {

cudaError_t launch_mla_cache_plain(const MlaCacheArgs& a, const MlaCachePlan& p,
                                   cudaStream_t stream);
cudaError_t launch_mla_cache_ds(const MlaCacheArgs& a, const MlaCachePlan& p, cudaStream_t stream);

}  // namespace kvbench::kernels
