// The 64-bit offset cases of tests/test_gpu.cpp (Offsets64Bit*): output elements and the V
// cache's base past 2^31 elements from their buffer's start, where a 32-bit offset wraps. The
// plan coverage test (tests/test_plan.cpp) checks that their optimized plans take int64 offsets.
#pragma once

#include <vector>

#include "core/case.hpp"

namespace kvbench {

// k: 90000 * 128 * 192 = 2.21e9 elements, bf16 -> bf16.
inline Case offsets64_concat_case() {
  Case c;
  c.kernel = Kernel::concat_mla_k;
  c.num_tokens = 90000;
  c.num_heads = 128;
  c.head_dim = 128;
  c.rope_dim = 64;
  c.strides = StrideMode::contiguous;
  return c;
}

// Each cache ~1.03 * 2^31 elements, bf16 -> bf16, padded slots. 24 heads: 6 KB slots, which the
// optimized variant writes in token order (8 KB slots would take the slot-order path).
inline Case offsets64_cache_case() {
  Case c;
  c.kernel = Kernel::cache_write;
  c.num_tokens = 640000;
  c.num_heads = 24;
  c.head_dim = 128;
  c.block_size = 16;
  c.slots = SlotPattern::padded;
  return c;
}

// Both, as the optimized variant runs them.
inline std::vector<Case> offsets64_cases() {
  std::vector<Case> v{offsets64_concat_case(), offsets64_cache_case()};
  for (Case& c : v) c.variant = Variant::optimized;
  return v;
}

}  // namespace kvbench
