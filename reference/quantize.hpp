// CPU reference for the quantized cache writes (SPEC.md §5-§7): the MLA latent cache in plain
// dtypes and in the 656-byte fp8_ds_mla layout, and the paged K/V cache with one fp8 scale per
// (token, head). Bit-exact by construction: every step is one fp32 operation in the order the spec
// gives, and every rounding is the §3 cast of reference/fp8.hpp or convert(). Independent of the
// kernels: no kernel header, every offset computed here from the strides given.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/types.hpp"

namespace kvbench::ref {

// How a tile's amax becomes its scale (SPEC.md §6): raw = max(amax / 448, FLT_MIN) (vLLM's
// kernel); pow2 = the smallest power of two >= max(amax / 448, 1e-4f) (FlashMLA's reference), so
// the scale is exactly a UE8M0 value.
enum class TileScaleRule { raw, pow2 };
std::string_view to_string(TileScaleRule rule);

// The fp8_ds_mla entry (SPEC.md §6), in bytes.
inline constexpr std::int64_t kDsMlaLoraRank = 512;  // kv_c values, as e4m3
inline constexpr std::int64_t kDsMlaRopeDim = 64;    // k_pe values, as bf16
inline constexpr std::int64_t kDsMlaTile = 128;      // kv_c values per scale
inline constexpr std::int64_t kDsMlaTiles = kDsMlaLoraRank / kDsMlaTile;
inline constexpr std::int64_t kDsMlaScalesOffset = kDsMlaLoraRank;                      // 4 x fp32
inline constexpr std::int64_t kDsMlaRopeOffset = kDsMlaScalesOffset + 4 * kDsMlaTiles;  // 528
inline constexpr std::int64_t kDsMlaEntryBytes = kDsMlaRopeOffset + 2 * kDsMlaRopeDim;  // 656

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kPow2ScaleFloor = 1e-4f;       // on amax / 448, SPEC.md §6 pow2
inline constexpr float kTokenHeadScaleFloor = 1e-6f;  // SPEC.md §7

// The largest |x| of n values of type `in` (bf16 or f16), widened to fp32 (exact). NaNs are
// skipped, as the GPU's max does; 0 when there is no other value.
float abs_max(DType in, const void* x, std::int64_t n);

// SPEC.md §6 step 3: a tile's fp32 scale from its amax (+inf stays +inf).
float tile_scale(TileScaleRule rule, float amax);

// SPEC.md §7: a (token, head) row's fp32 scale from its amax.
float token_head_scale(float amax);

// out[i] = e4m3(x[i] / scale): the correctly rounded fp32 quotient, then the §3 cast (RNE,
// saturating, NaN -> 0x7F). x holds n values of type `in` (bf16 or f16).
void quantize_e4m3(DType in, const void* x, std::int64_t n, float scale, std::uint8_t* out);

// One tile of n values: its scale under `rule` (returned) and its n e4m3 codes.
float quantize_tile(TileScaleRule rule, DType in, const void* x, std::int64_t n,
                    std::uint8_t* codes);

// One 656-byte fp8_ds_mla entry from kv_c [512] and k_pe [64], both of type `in`.
void write_ds_mla_entry(TileScaleRule rule, DType in, const void* kv_c, const void* k_pe,
                        std::uint8_t* entry);

// One per-(token, head) row of D + 4 bytes: D e4m3 codes, then the fp32 scale at byte D.
void write_token_head_row(DType in, const void* x, std::int64_t d, std::uint8_t* row);

// SPEC.md §5 (plain) and §6 (fp8_ds_mla).
enum class MlaCacheLayout { plain, fp8_ds_mla };

struct MlaCacheProblem {
  DType in_dtype;         // bf16 or f16
  MlaCacheLayout layout;  //
  DType cache_dtype;      // plain: bf16, f16, fp8_e4m3 or fp8_e5m2; fp8_ds_mla: unused (bytes)
  TileScaleRule rule;     // fp8_ds_mla only
  std::int64_t num_tokens, lora_rank, rope_dim, block_size, num_blocks;
  const void* kv_c;  // [T, L], strides (kv_c_s0, 1)
  const void* k_pe;  // [T, R], strides (k_pe_s0, 1)
  std::int64_t kv_c_s0, k_pe_s0;
  const std::int64_t* slot_mapping;  // [T]; < 0: skip
  // The entry of slot s starts at cache + (s / BS) * block_stride + (s % BS) * entry_stride,
  // counted in cache elements (bytes for fp8_ds_mla).
  void* cache;
  std::int64_t block_stride, entry_stride;
  const float* scale;  // plain only: [1], host memory, per-tensor; nullptr: none
};

// Writes the entry of every token whose slot is not negative; touches nothing else. Throws
// std::invalid_argument for sizes, strides or dtypes the layout does not take (fp8_ds_mla: L =
// 512, R = 64, strides multiples of 16 bytes, no scale), std::out_of_range for a
// slot >= NB * BS. Assumes the rest was validated (distinct slots, a positive finite scale).
void concat_and_cache_mla(const MlaCacheProblem& p);

struct TokenHeadCacheProblem {
  DType in_dtype;  // bf16 or f16; the cache is fp8_e4m3 bytes
  std::int64_t num_tokens, num_heads, head_size, block_size, num_blocks;
  const void* key;    // [T, H, D], strides (key_s0, key_s1, 1)
  const void* value;  // [T, H, D], strides (value_s0, value_s1, 1)
  std::int64_t key_s0, key_s1, value_s0, value_s1;
  const std::int64_t* slot_mapping;      // [T]; < 0: skip
  const std::int64_t* swa_slot_mapping;  // [swa_size] or nullptr; < 0: skip
  std::int64_t swa_size;
  std::int64_t skip_slot;  // physical slot never written; -1: none
  Layout layout;  // NHD [NB, BS, H, D + 4] or HND [NB, H, BS, D + 4] bytes, dense in a block
  std::uint8_t* key_cache;  // block b starts at key_cache + b * block_stride bytes
  std::uint8_t* value_cache;
  std::int64_t block_stride;
};

// SPEC.md §7: reshape_and_cache_flash into an fp8_e4m3 cache with a dynamic scale per (token,
// head), each K and V row followed by its fp32 scale. Throws std::invalid_argument when D is not a
// multiple of 4, std::out_of_range for a bad slot or SWA index.
void reshape_and_cache_flash_per_token_head(const TokenHeadCacheProblem& p);

}  // namespace kvbench::ref
