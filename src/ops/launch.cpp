#include "ops/launch.hpp"

#include "ops/cache_write/launch.hpp"
#include "ops/concat_mla_k/launch.hpp"
#include "ops/mla_cache/launch.hpp"

namespace kvbench {

CasePlan case_plan(const Case& c, const kernels::DeviceProps& device) {
  switch (c.kernel) {
    case Kernel::concat_mla_k:
      return concat_plan(c, device);
    case Kernel::cache_write:
      return cache_write_plan(c, device);
    case Kernel::concat_and_cache_mla:
      return mla_cache_plan(c, device);
  }
  return {};
}

std::set<std::string> reachable_plan_keys(Kernel k) {
  switch (k) {
    case Kernel::concat_mla_k:
      return kernels::reachable_concat_keys();
    case Kernel::cache_write:
      return kernels::reachable_cache_write_keys();
    case Kernel::concat_and_cache_mla:
      return kernels::reachable_mla_cache_keys();
  }
  return {};
}

}  // namespace kvbench
