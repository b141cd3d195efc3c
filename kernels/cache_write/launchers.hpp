// The launchers of each path, executing a plan (internal to kernels/cache_write).
#pragma once

#include "kernels/cache_write/plan.hpp"

namespace kvbench::kernels {

cudaError_t launch_cache_write_seed_port(const CacheWriteArgs& a, const CacheWritePlan& p,
                                         cudaStream_t stream);
cudaError_t launch_cache_write_optimized(const CacheWriteArgs& a, const CacheWritePlan& p,
                                         cudaStream_t stream);
cudaError_t launch_cache_write_slot_order(const CacheWriteArgs& a, const CacheWritePlan& p,
                                          cudaStream_t stream);
cudaError_t launch_cache_write_token_head(const CacheWriteArgs& a, const CacheWritePlan& p,
                                          cudaStream_t stream);

}  // namespace kvbench::kernels
