// Vocabulary shared by the launch plans of both operations.
#pragma once

#include <string>

namespace kvbench::kernels {

// The integer type of a kernel's offsets: int32 where every offset of the launch fits.
enum class IndexType { int32, int64 };
inline std::string to_string(IndexType i) { return i == IndexType::int32 ? "int32" : "int64"; }

// Elements per access, named by what is 16 bytes wide: "in16" (16 bytes of input), "out16" (16
// bytes of output, the input wider), "1" (one element: the fallback).
inline std::string vec_kind(int vec, int in_bytes) {
  if (vec == 1) return "1";
  return vec * in_bytes == 16 ? "in16" : "out16";
}

}  // namespace kvbench::kernels
