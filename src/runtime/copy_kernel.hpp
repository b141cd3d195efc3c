// A plain device-to-device copy in 16-byte vectors: the roofline's reference workload
// (`kvbench calibrate`) and the stand-in kernel of the L2-flush study.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace kvbench {

// `bytes` must be a multiple of 16 and both pointers 16-byte aligned (cudaMalloc's are).
cudaError_t launch_copy16(const void* src,  // [bytes]
                          void* dst,        // [bytes]
                          std::size_t bytes, int sm_count, cudaStream_t stream);

}  // namespace kvbench
