// concat_and_cache_mla (SPEC.md §5-§6): write each token's MLA latent row, kv_c then k_pe, into
// its slot of a paged cache: cast (optionally divided by a per-tensor scale) to the cache dtype,
// or quantized into the 656-byte fp8_ds_mla entry. Host-callable interface, plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::kernels {

// Pointers are device memory; strides are in elements, innermost dimension contiguous.
// plain: L + R values of out_dtype per entry. fp8_ds_mla: 656 bytes per entry (SPEC.md §6).
enum class MlaEntry { plain, fp8_ds_mla };
// fp8_ds_mla's tile scale: raw = max(amax / 448, FLT_MIN); pow2 = that (floored at 1e-4 instead)
// rounded up to a power of two.
enum class TileScale { raw, pow2 };

struct MlaCacheArgs {
  const void* kv_c;                  // [T, L], strides (kv_c_s0, 1), in_dtype
  const void* k_pe;                  // [T, R], strides (k_pe_s0, 1), in_dtype
  const std::int64_t* slot_mapping;  // [T]; < 0: padding, the token writes nothing
  const float* scale;                // plain: [1], divides every value; nullptr: no scale
  // [NB, BS, entry]: slot s's entry starts at (s / BS) * block_stride + (s % BS) * entry_stride
  // elements of out_dtype (fp8_ds_mla: bytes; out_dtype is fp8_e4m3).
  void* cache;
  std::int64_t num_tokens, lora_rank, rope_dim, block_size;
  std::int64_t kv_c_s0, k_pe_s0, block_stride, entry_stride;
  DType in_dtype, out_dtype;
  MlaEntry entry;
  TileScale tile_scale;  // fp8_ds_mla only
};

// Whether the kernels take this dtype pair (inputs f16/bf16; caches those and both fp8).
bool mla_cache_supported(DType in, DType out);

struct MlaCachePlan;  // kernels/mla_cache/plan.hpp: plan_mla_cache() decides every launch

// Enqueues the planned launch on `stream`. Returns cudaErrorInvalidValue for a plan that is not
// launchable, else the launch status. Slots are trusted: the host checks them first.
cudaError_t launch_mla_cache(const MlaCacheArgs& args, const MlaCachePlan& plan,
                             cudaStream_t stream);

// Plans for the current device, then launches.
cudaError_t launch_mla_cache(const MlaCacheArgs& args, Variant variant, cudaStream_t stream);

}  // namespace kvbench::kernels
