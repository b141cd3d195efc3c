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

// The arguments at the addresses case_plan places the buffers (plan_allocation).
kernels::CacheWriteArgs cache_write_plan_args(const Case& c);
// As a plugin receives them (ops/launch.hpp, to_abi); slot_order's slot table is kvbench's own.
kvb_cache_write_args cache_write_abi_args(const kernels::CacheWriteArgs& a);

// The operation's backend (ops/launch.hpp).
const Backend& cache_write_backend();

}  // namespace kvbench
