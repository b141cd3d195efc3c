#include "runtime/copy_kernel.hpp"

namespace kvbench {
namespace {

// Grid-stride loop, four independent 16-byte loads in flight per thread before the stores.
__global__ void copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                              std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < words; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < words; i += stride) dst[i] = src[i];
}

}  // namespace

cudaError_t launch_copy16(const void* src, void* dst, std::size_t bytes, int sm_count,
                          cudaStream_t stream) {
  if (bytes % 16 != 0) return cudaErrorInvalidValue;
  copy16_kernel<<<8 * sm_count, 256, 0, stream>>>(static_cast<const uint4*>(src),
                                                  static_cast<uint4*>(dst), bytes / 16);
  return cudaGetLastError();
}

}  // namespace kvbench
