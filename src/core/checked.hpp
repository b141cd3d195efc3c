// Size arithmetic that refuses to overflow: shapes come from user input (YAML axes up to 2^31-1,
// CSV integers up to 18 digits), and their products must not wrap.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvbench {

// A size product or sum past INT64_MAX; what() names the operands.
class SizeOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw SizeOverflow(std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw SizeOverflow(std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  return r;
}

}  // namespace kvbench
