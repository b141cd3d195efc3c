// The 64-bit offset cases of tests/test_gpu.cpp (Offsets64Bit*): output elements and the V
// cache's base past 2^31 elements from their buffer's start, where a 32-bit offset wraps. The
// plan coverage test (tests/test_plan.cpp) checks that their optimized plans take int64 offsets.
#pragma once

#include <vector>

#include "support.hpp"

namespace kvbench {

// k: 90000 * 128 * 192 = 2.21e9 elements, bf16 -> bf16.
inline Case offsets64_concat_case() {
  return testing_support::concat_case(90000, 128, 128, 64, StrideMode::contiguous);
}

// Each cache ~1.03 * 2^31 elements, bf16 -> bf16, padded slots. 24 heads: 6 KB slots, which the
// optimized variant writes in token order (8 KB slots would take the slot-order path).
inline Case offsets64_cache_case() {
  Case c = testing_support::cache_case(640000, 24, 128, 16);
  testing_support::cache_params(c).slots = SlotPattern::padded;
  return c;
}

// Both, as the optimized variant runs them.
inline std::vector<Case> offsets64_cases() {
  std::vector<Case> v{offsets64_concat_case(), offsets64_cache_case()};
  for (Case& c : v) c.variant = Variant::optimized;
  return v;
}

}  // namespace kvbench
