#include "tests/gpu/convert_device.hpp"

#include "kernels/convert.cuh"

namespace kvbench::testing {
namespace {

using kernels::cast;
using kernels::from_float;
using kernels::to_float;

template <class In>
__device__ __forceinline__ In from_bits(std::uint64_t bits);
template <>
__device__ __forceinline__ float from_bits<float>(std::uint64_t bits) {
  return __uint_as_float(static_cast<unsigned>(bits));
}
template <>
__device__ __forceinline__ __half from_bits<__half>(std::uint64_t bits) {
  return __ushort_as_half(static_cast<unsigned short>(bits));
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_bits<__nv_bfloat16>(std::uint64_t bits) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(bits));
}

template <class In, class Out>
__global__ void convert_kernel(std::uint64_t first_bits, std::int64_t n, Out* out,
                               const float* scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const In x = from_bits<In>(first_bits + static_cast<std::uint64_t>(i));
    // The scaled form is cache_write.cu's scaled_cast, written out: IEEE division, one rounding.
    out[i] = scale == nullptr ? cast<Out>(x) : from_float<Out>(__fdiv_rn(to_float(x), *scale));
  }
}

}  // namespace

cudaError_t convert_on_device(DType in_type, DType out_type, std::uint64_t first_bits,
                              std::int64_t n, void* out, const float* scale, cudaStream_t stream) {
  return kernels::dispatch_dtypes(in_type, out_type, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 4096));
    convert_kernel<In, Out><<<blocks, 256, 0, stream>>>(first_bits, n, static_cast<Out*>(out),
                                                        scale);
    return cudaGetLastError();
  });
}

}  // namespace kvbench::testing
