// NumPy .npy files, format version 1.0, so the tensors of a failing case can be loaded in NumPy
// or PyTorch (`--save-tensors`). bf16 and fp8 have no NumPy dtype: they are written as their raw
// bits ('<u2', '|u1') and the file name says what they hold (docs/validation.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace kvbench {

// '<f4', '<f2', '<u2' (bf16 bits), '|u1' (fp8 bits).
std::string npy_descr(DType t);

// The complete header: magic, version 1.0, little-endian length, the dict
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded with spaces and a final
// newline so the data starts at a multiple of 64 bytes. Pure.
std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape);

// Writes header and data. Throws std::runtime_error naming the path on failure.
void write_npy(const std::string& path, const std::string& descr,
               const std::vector<std::int64_t>& shape, const void* data, std::size_t bytes);

}  // namespace kvbench
