// Device side of the exhaustive conversion test: converts a run of consecutive input bit
// patterns with kernels/common/convert.cuh, the functions every kernel uses. Plain C++ interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::testing {

// out[i] = cast<out_type>(bits_as<in_type>(first_bits + i)) for i < n, or with a scale
// from_float<out_type>(x / *scale), the cache write's scaled cast. `paired`: through the
// optimized kernels' cast_vec on vectors of 16 patterns (paired conversions, kernels::Divisor and
// its one range test per vector) instead of the scalar cast and __fdiv_rn of seed_port. `out` [n]
// of out_type and `scale` [1] are device memory; scale may be nullptr.
cudaError_t convert_on_device(DType in_type, DType out_type, std::uint64_t first_bits,
                              std::int64_t n, void* out, const float* scale, bool paired,
                              cudaStream_t stream);

// kernels::Divisor's quotient against __fdiv_rn for every fp32 divisor significand and every
// fp16 significand of x (both signs; bf16's are a subset): adds the number of differing results
// to *differences and, for the first one, sets first[0] = 1 and first[1..2] to the bits of x, s.
// Both pointers are device memory, zeroed by the caller.
cudaError_t check_divisor_on_device(unsigned long long* differences, unsigned* first,
                                    cudaStream_t stream);
// Divisor's reciprocal at every fast divisor against the one of its significand
// (counts[0], first[1] = the first divisor that differs) and against RN(1/s) (counts[1]).
cudaError_t check_reciprocal_on_device(unsigned long long* counts, unsigned* first,
                                       cudaStream_t stream);

}  // namespace kvbench::testing
