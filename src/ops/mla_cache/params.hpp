// concat_and_cache_mla's own parameters (the case header holds tokens, dtypes, strides; the
// latent cache has one head).
#pragma once

#include <cstdint>
#include <memory>

#include "core/case.hpp"

namespace kvbench {

struct MlaCacheParams final : OpParams {
  static constexpr Kernel kKernel = Kernel::concat_and_cache_mla;
  std::int64_t lora_rank = 512;             // L: kv_c's width (kv_lora_rank)
  std::int64_t rope_dim = 64;               // R: k_pe's width
  std::int64_t block_size = 64;             // BS: entries per cache block
  ScaleMode scale = ScaleMode::none;        // none or per_tensor
  SlotPattern slots = SlotPattern::random;  // random, contiguous or padded (no skip slot)
  Kernel kernel() const override { return kKernel; }
  std::unique_ptr<OpParams> clone() const override {
    return std::make_unique<MlaCacheParams>(*this);
  }
};

}  // namespace kvbench
