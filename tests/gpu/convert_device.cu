#include "kernels/common/convert.cuh"
#include "kernels/common/vec.cuh"
#include "tests/gpu/convert_device.hpp"

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

// Element i of the output: scalar form (seed_port's cast / scaled_cast) or the optimized kernels'
// vector form (paired conversions; scaled: store_scaled_pair, Divisor's fast path stored, then
// the range test and the IEEE redo), in vectors of 16 consecutive patterns per thread, the width
// of the bf16 -> fp8 cache write.
template <class In, class Out>
__global__ void convert_kernel(std::uint64_t first_bits, std::int64_t n, Out* out,
                               const float* scale, bool paired) {
  constexpr int kN = 16;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       kN * p < n; p += stride) {
    const std::int64_t i = kN * p;
    kernels::Vec<In, kN> x;
    for (int k = 0; k < kN; ++k)
      x.v[k] = from_bits<In>(first_bits + static_cast<std::uint64_t>(i + k));
    if (paired && scale != nullptr && i + kN <= n) {
      // The cache write's form: stored from the fast path, then stored again where the range
      // test fails (here K and V are the same vector at the same place).
      const kernels::Divisor d(*scale);
      kernels::store_scaled_pair(out + i, x, &x.v[0], d, out + i, x, &x.v[0], d);
      continue;
    }
    kernels::Vec<Out, kN> y;
    if (paired) {
      y = scale == nullptr ? kernels::cast_vec<Out>(x)
                           : kernels::cast_vec<Out>(x, kernels::Divisor(*scale));
    } else {
      for (int k = 0; k < kN; ++k)
        y.v[k] = scale == nullptr ? cast<Out>(x.v[k])
                                  : from_float<Out>(__fdiv_rn(to_float(x.v[k]), *scale));
    }
    for (int k = 0; k < kN && i + k < n; ++k) out[i + k] = y.v[k];
  }
}

// Divisor's fast path against __fdiv_rn: thread m takes the divisor with significand bits m in
// [1, 2) and divides every 10-bit significand in [1, 2), both signs. Counts differences and keeps
// the first one's operands.
__global__ void divisor_kernel(unsigned long long* differences, unsigned* first) {
  const unsigned m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= (1u << 23)) return;
  const float s = __uint_as_float(0x3F800000u | m);
  const kernels::Divisor d(s);
  unsigned count = 0;
  for (unsigned k = 0; k < 2048; ++k) {
    const float x = __uint_as_float((k >> 10) << 31 | 0x3F800000u | (k & 1023u) << 13);
    if (__float_as_uint(d.divide(x)) != __float_as_uint(__fdiv_rn(x, s))) {
      if (count == 0 && atomicCAS(first, 0u, 1u) == 0u) {
        first[1] = __float_as_uint(x);
        first[2] = __float_as_uint(s);
      }
      ++count;
    }
  }
  if (count != 0) atomicAdd(differences, count);
}

// Divisor's reciprocal over its whole fast range, s in [2^-60, 2^60]: thread m takes the
// significand bits m and checks that the reciprocal of s = 2^e * 1.m is that of 1.m scaled by
// 2^-e for every exponent (counts[0]), which with divisor_kernel's check at e = 0 makes the fast
// path exact for every fast divisor; counts[1] counts reciprocals that differ from RN(1/s).
__global__ void reciprocal_kernel(unsigned long long* counts, unsigned* first) {
  const unsigned m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= (1u << 23)) return;
  const float y1 = kernels::Divisor(__uint_as_float(0x3F800000u | m)).reciprocal();
  unsigned scaled = 0, rounded = 0;
  for (int e = -60; e <= 60; ++e) {
    if (e == 60 && m != 0) break;  // 2^60 is the range's top
    const float s = __uint_as_float(static_cast<unsigned>(127 + e) << 23 | m);
    const kernels::Divisor d(s);
    const float want = y1 * __uint_as_float(static_cast<unsigned>(127 - e) << 23);  // exact
    if (!d.fast() || __float_as_uint(d.reciprocal()) != __float_as_uint(want)) {
      if (scaled == 0 && atomicCAS(first, 0u, 1u) == 0u) first[1] = __float_as_uint(s);
      ++scaled;
    }
    if (__float_as_uint(d.reciprocal()) != __float_as_uint(__fdiv_rn(1.0f, s))) ++rounded;
  }
  if (scaled != 0) atomicAdd(counts, scaled);
  if (rounded != 0) atomicAdd(counts + 1, rounded);
}

}  // namespace

cudaError_t check_reciprocal_on_device(unsigned long long* counts, unsigned* first,
                                       cudaStream_t stream) {
  reciprocal_kernel<<<(1u << 23) / 256, 256, 0, stream>>>(counts, first);
  return cudaGetLastError();
}

cudaError_t convert_on_device(DType in_type, DType out_type, std::uint64_t first_bits,
                              std::int64_t n, void* out, const float* scale, bool paired,
                              cudaStream_t stream) {
  return kernels::dispatch_dtypes(in_type, out_type, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 4095) / 4096, 4096));
    convert_kernel<In, Out>
        <<<blocks, 256, 0, stream>>>(first_bits, n, static_cast<Out*>(out), scale, paired);
    return cudaGetLastError();
  });
}

cudaError_t check_divisor_on_device(unsigned long long* differences, unsigned* first,
                                    cudaStream_t stream) {
  divisor_kernel<<<(1u << 23) / 256, 256, 0, stream>>>(differences, first);
  return cudaGetLastError();
}

}  // namespace kvbench::testing
