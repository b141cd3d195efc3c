// Which vector widths a tensor allows: the widths themselves and the alignment tests. Plain C++,
// so that the launch plans (and the CPU tests) use the same rules as the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvbench::kernels {

// Elements per 16-byte input access (the fallback width when the wide one does not divide).
constexpr int input_vec(std::size_t in_bytes) { return 16 / static_cast<int>(in_bytes); }

// Elements per thread access: 16 bytes of whichever of the input and output is narrower.
constexpr int wide_vec(std::size_t in_bytes, std::size_t out_bytes) {
  return 16 / static_cast<int>(in_bytes < out_bytes ? in_bytes : out_bytes);
}

// True when `p` (elements of `elem_bytes`) allows accesses of `n` elements: aligned to their
// size, or to 16 bytes for wider ones (load_vec and store_vec split those into 16-byte pieces).
inline bool vec_aligned(const void* p, int elem_bytes, int n) {
  const int bytes = elem_bytes * n < 16 ? elem_bytes * n : 16;
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0;
}
inline bool divisible(std::int64_t x, int n) { return x % n == 0; }

}  // namespace kvbench::kernels
