// concat_and_cache_mla's own parameters (the case header holds tokens, dtypes, strides; the
// latent cache has one head).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "core/case.hpp"

namespace kvbench {

// The cache's layout. nhd: one L + R entry of out_dtype values per slot, [NB, BS, L + R] (SPEC.md
// §5). fp8_ds_mla: 656 bytes per slot, 4 tiles of 128 e4m3 codes, their fp32 scales, the rope in
// bf16 (SPEC.md §6).
enum class MlaLayout { nhd, fp8_ds_mla };
// nhd: none or per_tensor (one fp32 scale divides every value). fp8_ds_mla: the tile scale rule,
// tile_raw (amax / 448, floored at FLT_MIN) or tile_pow2 (rounded up to a power of two).
enum class MlaScale { none, per_tensor, tile_raw, tile_pow2 };

std::string_view to_string(MlaLayout v);
std::string_view to_string(MlaScale v);
// Throw std::invalid_argument naming the value and the accepted set.
MlaLayout mla_layout_from(std::string_view text);
MlaScale mla_scale_from(std::string_view text);

struct MlaCacheParams final : OpParams {
  static constexpr Kernel kKernel = Kernel::mla_cache;
  std::int64_t lora_rank = 512;  // L: kv_c's width (kv_lora_rank)
  std::int64_t rope_dim = 64;    // R: k_pe's width
  std::int64_t block_size = 64;  // BS: entries per cache block
  MlaLayout layout = MlaLayout::nhd;
  MlaScale scale = MlaScale::none;
  SlotPattern slots = SlotPattern::random;  // random, contiguous or padded (no skip slot)
  Kernel kernel() const override { return kKernel; }
  std::unique_ptr<OpParams> clone() const override {
    return std::make_unique<MlaCacheParams>(*this);
  }
};

}  // namespace kvbench
