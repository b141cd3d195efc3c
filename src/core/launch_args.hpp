// Case -> kernel arguments -> launch plan. The runner launches each case with these arguments
// and this plan; `kvbench list --plan` prints the same plan from buffers placed where the runner
// places them, so the printed plan is the executed one.
#pragma once

#include <cstdint>
#include <string>

#include "core/case.hpp"
#include "kernels/cache_write/plan.hpp"
#include "kernels/concat_mla_k/plan.hpp"

namespace kvbench {

// Device buffers of a concat case, each where its allocation starts.
struct ConcatBuffers {
  const void* k_nope;
  const void* k_rope;
  void* k_buffer;  // [guard | k | guard]
};
kernels::ConcatArgs concat_args(const Case& c, const ConcatGeometry& g, const ConcatBuffers& b);

// Device buffers of a cache-write case, each where its allocation starts (swa_slot_mapping:
// where the table starts, nullptr without SWA).
struct CacheWriteBuffers {
  const void* key;
  const void* value;
  void* cache;  // [guard | K cache and V cache | guard]
  const std::int64_t* slot_mapping;
  const std::int64_t* swa_slot_mapping;
  const float* k_scale;
  const float* v_scale;
  std::int32_t* slot_table;
};
kernels::CacheWriteArgs cache_write_args(const Case& c, const CacheGeometry& g,
                                         const CacheWriteBuffers& b);

// The plan of case c as the runner launches it on `device`: every allocation at a 256-byte
// aligned address (cudaMalloc's), the SWA table one entry in (its guard), outputs after their
// guards. to_string() of the plan, and its key (the decisions that select code).
struct CasePlan {
  std::string text, key;
};
CasePlan case_plan(const Case& c, const kernels::DeviceProps& device);

}  // namespace kvbench
