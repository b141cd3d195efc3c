// reshape_and_cache_flash (SPEC.md §2): scatter per-token K/V into a paged cache, with optional
// sliding-window remap, skip slot and fp32 scales. Host-callable interface, plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::kernels {

// Pointers are device memory; strides are in elements. The cache layout is carried entirely by
// (block_stride, slot_stride, head_stride): NHD is (.., H*D, D), HND is (.., D, BS*D). With
// ScaleMode::per_token_head the cache is fp8_e4m3 bytes and a row is D codes and its fp32 scale
// (SPEC.md §7): NHD (.., H*(D+4), D+4), HND (.., D+4, BS*(D+4)).
struct CacheWriteArgs {
  const void* key;                       // [T, H, D], strides (key_s0, key_s1, 1), in_dtype
  const void* value;                     // [T, H, D], strides (value_s0, value_s1, 1), in_dtype
  void* key_cache;                       // [NB, (BS, H | H, BS), D], out_dtype
  void* value_cache;                     // same geometry as key_cache
  const std::int64_t* slot_mapping;      // [T]; < 0 skips the token
  const std::int64_t* swa_slot_mapping;  // [swa_size] logical -> physical, or nullptr
  // [1] or [H], or nullptr (ScaleMode::none, and per_token_head, whose scales are computed)
  const float* k_scale;
  const float* v_scale;  // same shape as k_scale
  std::int64_t num_tokens, num_heads, head_size, block_size;
  std::int64_t key_s0, key_s1, value_s0, value_s1;
  std::int64_t block_stride, slot_stride, head_stride;
  std::int64_t skip_slot;  // physical slot never written; -1 for none
  // slot_order only: the cache's slot count (NB*BS) and an int32 table of that many entries,
  // all -1 before a launch and left all -1 by it (the launch fills it, then restores it).
  std::int64_t num_slots;
  std::int32_t* slot_table;
  ScaleMode scale;
  DType in_dtype, out_dtype;
};

bool cache_write_supported(DType in, DType out);

struct CacheWritePlan;  // kernels/cache_write/plan.hpp: plan_cache_write() decides every launch

// Enqueues the planned launch on `stream`. Returns cudaErrorInvalidValue for a plan that is not
// launchable (unsupported dtype pair or size), else the launch status.
cudaError_t launch_cache_write(const CacheWriteArgs& args, const CacheWritePlan& plan,
                               cudaStream_t stream);

// Plans for the current device, then launches.
cudaError_t launch_cache_write(const CacheWriteArgs& args, Variant variant, cudaStream_t stream);

}  // namespace kvbench::kernels
