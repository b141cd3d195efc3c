// Bitwise comparison of a whole output buffer (NaNs compare by bit pattern). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvbench {

struct Mismatch {
  std::int64_t index;              // element index in the buffer
  std::uint64_t expected, actual;  // raw bits
};

struct CompareResult {
  std::int64_t count = 0;       // differing elements
  std::vector<Mismatch> first;  // the first few, in index order
};

CompareResult compare_bitwise(const void* expected, const void* actual, std::int64_t elems,
                              std::size_t elem_size, std::size_t max_report = 4);

}  // namespace kvbench
