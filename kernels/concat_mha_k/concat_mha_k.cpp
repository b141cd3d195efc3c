#include "kernels/concat_mha_k/concat_mha_k.hpp"

#include "kernels/concat_mha_k/launchers.hpp"

namespace kvbench::kernels {

cudaError_t launch_concat_mha_k(const ConcatArgs& a, const ConcatPlan& p, cudaStream_t stream) {
  if (!p.error.empty()) return cudaErrorInvalidValue;
  return p.path == ConcatPath::seed_port ? launch_concat_seed_port(a, p, stream)
                                         : launch_concat_optimized(a, p, stream);
}

cudaError_t launch_concat_mha_k(const ConcatArgs& a, Variant variant, cudaStream_t stream) {
  return launch_concat_mha_k(a, plan_concat(a, variant, current_device_props()), stream);
}

}  // namespace kvbench::kernels
