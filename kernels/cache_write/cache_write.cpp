#include "kernels/cache_write/cache_write.hpp"

#include "kernels/cache_write/launchers.hpp"

namespace kvbench::kernels {

cudaError_t launch_cache_write(const CacheWriteArgs& a, const CacheWritePlan& p,
                               cudaStream_t stream) {
  if (!p.error.empty()) return cudaErrorInvalidValue;
  switch (p.path) {
    case CacheWritePath::seed_port:
      return launch_cache_write_seed_port(a, p, stream);
    case CacheWritePath::optimized:
      return launch_cache_write_optimized(a, p, stream);
    case CacheWritePath::slot_order:
      return launch_cache_write_slot_order(a, p, stream);
    case CacheWritePath::token_head:
      return launch_cache_write_token_head(a, p, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_cache_write(const CacheWriteArgs& a, Variant variant, cudaStream_t stream) {
  return launch_cache_write(a, plan_cache_write(a, variant, current_device_props()), stream);
}

}  // namespace kvbench::kernels
