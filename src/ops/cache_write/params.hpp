// reshape_and_cache_flash's own parameters (the case header holds tokens, heads, dtypes, strides).
#pragma once

#include <cstdint>
#include <memory>

#include "core/case.hpp"

namespace kvbench {

struct CacheWriteParams final : OpParams {
  static constexpr Kernel kKernel = Kernel::cache_write;
  std::int64_t head_size = 128;  // D
  std::int64_t block_size = 16;  // BS: slots per cache block
  Layout layout = Layout::nhd;
  ScaleMode scale = ScaleMode::none;
  bool swa = false;
  bool kv_interleaved = false;  // K and V blocks interleaved in one buffer (block stride 2x)
  SlotPattern slots = SlotPattern::random;
  Kernel kernel() const override { return kKernel; }
  std::unique_ptr<OpParams> clone() const override {
    return std::make_unique<CacheWriteParams>(*this);
  }
};

}  // namespace kvbench
