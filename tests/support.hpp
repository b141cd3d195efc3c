// Case builders shared by the tests: one case of each kernel from the few fields a test varies;
// every other field keeps Case's default (bf16 -> bf16, contiguous strides, NHD, random slots).
#pragma once

#include <cstdint>

#include "core/case.hpp"

namespace kvbench::testing_support {

inline Case concat_case(std::int64_t T, std::int64_t H, std::int64_t nope = 128,
                        std::int64_t rope = 64, StrideMode strides = StrideMode::contiguous) {
  Case c;
  c.kernel = Kernel::concat_mla_k;
  c.num_tokens = T;
  c.num_heads = H;
  c.head_dim = nope;
  c.rope_dim = rope;
  c.strides = strides;
  return c;
}

inline Case cache_case(std::int64_t T, std::int64_t H, std::int64_t D, std::int64_t BS = 16) {
  Case c;
  c.kernel = Kernel::cache_write;
  c.num_tokens = T;
  c.num_heads = H;
  c.head_dim = D;
  c.block_size = BS;
  return c;
}

}  // namespace kvbench::testing_support
