// The probe-only concat kernel of tools/probes/concat_token_block.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/concat_mla_k/concat_mla_k.hpp"

namespace kvbench::probes {

// A block of `threads` per token, `items` (6, 12 or 24) of a thread's vectors in flight, vectors
// of `vec` (8) elements; bf16->bf16, f32->bf16 and bf16->fp8_e4m3 only. cudaErrorInvalidValue
// for anything else.
cudaError_t launch_concat_token_block(const kernels::ConcatArgs& a, int vec, int threads, int items,
                                      cudaStream_t s);

}  // namespace kvbench::probes
