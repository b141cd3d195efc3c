#include "kernels/mla_cache/mla_cache.hpp"

#include "kernels/mla_cache/launchers.hpp"

namespace kvbench::kernels {

cudaError_t launch_mla_cache(const MlaCacheArgs& a, const MlaCachePlan& p, cudaStream_t stream) {
  if (!p.error.empty()) return cudaErrorInvalidValue;
  switch (p.path) {
    case MlaCachePath::plain:
      return launch_mla_cache_plain(a, p, stream);
    case MlaCachePath::fp8_ds_mla:
      return launch_mla_cache_ds(a, p, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_mla_cache(const MlaCacheArgs& a, Variant variant, cudaStream_t stream) {
  return launch_mla_cache(a, plan_mla_cache(a, variant, current_device_props()), stream);
}

}  // namespace kvbench::kernels
