// concat_and_cache_mla: case -> kernel arguments -> launch plan (kernels/mla_cache/plan.hpp).
#pragma once

#include <cstdint>

#include "kernels/mla_cache/plan.hpp"
#include "ops/launch.hpp"
#include "ops/mla_cache/operation.hpp"

namespace kvbench {

// Device buffers of a case, each where its allocation starts.
struct MlaCacheBuffers {
  const void* kv_c;
  const void* k_pe;
  const std::int64_t* slot_mapping;
  const float* scale;  // nullptr without a scale
  void* cache;         // [guard | cache | guard]
};
kernels::MlaCacheArgs mla_cache_args(const Case& c, const MlaCacheGeometry& g,
                                     const MlaCacheBuffers& b);

// "" when the kernels take case c, else why not: its dtype pair, then mla_refusal. What `run`
// calls not_supported and `list --plan` prints as not supported, in the same words.
std::string mla_unsupported(const Case& c);

// The arguments at the addresses case_plan places the buffers (plan_allocation).
kernels::MlaCacheArgs mla_cache_plan_args(const Case& c);

// The operation's backend (ops/launch.hpp).
const Backend& mla_cache_backend();

}  // namespace kvbench
