// The probe-only concat kernel of tools/probes/concat_columns.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/concat_mla_k/concat_mla_k.hpp"

namespace kvbench::probes {

// A block per token; each thread owns one of a head's 16-byte input vectors (one column) and
// walks it down the heads, `items` (8, 16 or 32) of them in flight: `num_heads / items` heads a
// pass, so a block has head_vecs * num_heads / items threads (at most 384). bf16->bf16,
// f32->bf16 and bf16->fp8_e4m3 only; cudaErrorInvalidValue for anything else, or for a head
// count `items` does not divide.
cudaError_t launch_concat_columns(const kernels::ConcatArgs& a, int items, cudaStream_t s);

}  // namespace kvbench::probes
