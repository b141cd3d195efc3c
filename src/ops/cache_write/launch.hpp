// reshape_and_cache_flash: case -> kernel arguments -> launch plan (kernels/cache_write/plan.hpp).
#pragma once

#include <cstdint>

#include "kernels/cache_write/plan.hpp"
#include "ops/cache_write/operation.hpp"
#include "ops/launch.hpp"

namespace kvbench {

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

// case_plan (ops/launch.hpp) of a cache-write case.
CasePlan cache_write_plan(const Case& c, const kernels::DeviceProps& device);

}  // namespace kvbench
