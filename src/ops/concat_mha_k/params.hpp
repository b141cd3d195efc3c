// concat_and_cast_mha_k's own parameters (the case header holds tokens, heads, dtypes, strides).
#pragma once

#include <cstdint>
#include <memory>

#include "core/case.hpp"

namespace kvbench {

struct ConcatParams final : OpParams {
  static constexpr Kernel kKernel = Kernel::concat_mha_k;
  std::int64_t nope_dim = 128;  // NOPE: k_nope's head width
  std::int64_t rope_dim = 64;   // ROPE: k_rope's width, shared by every head
  Kernel kernel() const override { return kKernel; }
  std::unique_ptr<OpParams> clone() const override { return std::make_unique<ConcatParams>(*this); }
};

}  // namespace kvbench
