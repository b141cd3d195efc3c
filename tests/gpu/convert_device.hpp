// Device side of the exhaustive conversion test: converts a run of consecutive input bit
// patterns with kernels/convert.cuh, the functions every kernel uses. Plain C++ interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::testing {

// out[i] = cast<out_type>(bits_as<in_type>(first_bits + i)) for i < n, or with a scale
// from_float<out_type>(__fdiv_rn(to_float(x), *scale)), the cache write's scaled cast.
// `out` [n] of out_type and `scale` [1] are device memory; scale may be nullptr.
cudaError_t convert_on_device(DType in_type, DType out_type, std::uint64_t first_bits,
                              std::int64_t n, void* out, const float* scale, cudaStream_t stream);

}  // namespace kvbench::testing
