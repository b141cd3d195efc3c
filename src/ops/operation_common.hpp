// What the operations' pure parts (src/ops/<op>/operation*.cpp) share: overflow-checked size
// arithmetic and the words of their stride and offset messages. An operation's file brings them
// in with `using namespace kvbench::op_common;` inside its own anonymous namespace.
#pragma once

#include <cstdint>
#include <string>

#include "core/checked.hpp"

namespace kvbench::op_common {

// Extra elements per stride in StrideMode::padded.
inline constexpr std::int64_t kPad = 16;

// Every size goes through these: axes reach 2^31-1 each, their products do not fit
// (SizeOverflow, core/checked.hpp).
inline std::int64_t mul(std::int64_t a, std::int64_t b) { return checked_mul(a, b); }
inline std::int64_t add(std::int64_t a, std::int64_t b) { return checked_add(a, b); }
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return add(a, b - 1) / b; }

// A non-negative size as unsigned (0 for a negative one).
inline std::uint64_t u(std::int64_t v) { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }

// "key_s0 100 < H*D = 128 (strides must cover the dense extent)".
inline std::string too_small(const char* what, std::int64_t stride, const char* extent_name,
                             std::int64_t extent) {
  return std::string(what) + " " + std::to_string(stride) + " < " + extent_name + " = " +
         std::to_string(extent) + " (strides must cover the dense extent)";
}

// "what (+n)": an offset relative to where a row starts.
inline std::string rel(const std::string& what, std::int64_t n) {
  return what + " (+" + std::to_string(n) + ")";
}

}  // namespace kvbench::op_common
