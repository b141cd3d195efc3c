// Device-side element types and SPEC.md §3 conversions, shared by both kernel files.
// Every conversion widens to fp32 (exact) and rounds once: RNE for fp16/bf16, RNE with
// saturation to finite for fp8 (cvt.rn.satfinite on sm_89+).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/types.hpp"

namespace kvbench::kernels {

// Storage types: fp8 values travel as raw bytes so that the conversion is always explicit.
struct fp8_e4m3_t {
  std::uint8_t bits;
};
struct fp8_e5m2_t {
  std::uint8_t bits;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class Out>
__device__ __forceinline__ Out from_float(float x);

template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ fp8_e4m3_t from_float<fp8_e4m3_t>(float x) {
  return {static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3))};
}
template <>
__device__ __forceinline__ fp8_e5m2_t from_float<fp8_e5m2_t>(float x) {
  return {static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2))};
}

// cast(x) of SPEC.md §3. Same-type copies skip the round trip (bit-identical, NaN payloads kept).
template <class Out, class In>
__device__ __forceinline__ Out cast(In x) {
  if constexpr (std::is_same_v<In, Out>) {
    return x;
  } else {
    return from_float<Out>(to_float(x));
  }
}

// Two values rounded at once: the paired cvt instructions (e4m3x2, e5m2x2, bf16x2, f16x2) round
// each half exactly as the single conversion does, in half the instructions. Returns the two
// results packed as stored, `lo` in the lower address.
template <class Out>
__device__ __forceinline__ unsigned from_float2(float lo, float hi) {
  if constexpr (std::is_same_v<Out, fp8_e4m3_t>) {
    return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
  } else if constexpr (std::is_same_v<Out, fp8_e5m2_t>) {
    return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E5M2);
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    const __nv_bfloat162 pair = __float22bfloat162_rn(make_float2(lo, hi));
    return *reinterpret_cast<const unsigned*>(&pair);
  } else {
    static_assert(std::is_same_v<Out, __half>, "fp32 outputs need no pairing");
    const __half2 pair = __float22half2_rn(make_float2(lo, hi));
    return *reinterpret_cast<const unsigned*>(&pair);
  }
}

// x / s correctly rounded (what __fdiv_rn returns), for a divisor used on many elements: the
// reciprocal y = RN(1/s) is computed once, then each quotient costs one multiply and one
// residual correction (q = RN(x*y); q += fma(-q, s, x) * y, Markstein) instead of a reciprocal
// per element. The fast path needs every intermediate to be a normal number: s and |x| within
// [2^-60, 2^60] (`fast()`, `fast_for(x)`); anything else (zero, subnormal, huge, inf, NaN,
// negative s) takes __fdiv_rn. Within that range every step scales exactly with the exponents
// of x and s, so the result depends only on their significands: test_convert_gpu checks every
// significand of s against every fp16 (hence bf16) significand of x, and the fast path is used
// only for 16-bit inputs. (One correction is exact for these 11-bit significands; it is not in
// general, which is why fp32 inputs keep __fdiv_rn.)
class Divisor {
 public:
  __device__ __forceinline__ explicit Divisor(float s) {
    s_ = s;
    // The approximate reciprocal and one Newton step, without __fdiv_rn's range branch (y_ is
    // used only on the fast path): equal to RN(1/s) for every s in [2^-60, 2^60], and scaling
    // exactly with s's exponent there (test_convert_gpu checks both at every such s).
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
    y_ = __fmaf_rn(r, __fmaf_rn(-s, r, 1.0f), r);
    fast_ = s >= 0x1p-60f && s <= 0x1p60f;
  }

  __device__ __forceinline__ bool fast() const { return fast_; }
  __device__ __forceinline__ static bool fast_for(float x) {
    const float ax = fabsf(x);
    return ax >= 0x1p-60f && ax <= 0x1p60f;
  }
  // Exact only where fast() && fast_for(x) hold.
  __device__ __forceinline__ float divide_fast(float x) const {
    const float q = __fmul_rn(x, y_);
    return __fmaf_rn(__fmaf_rn(-q, s_, x), y_, q);
  }
  __device__ __forceinline__ float divide(float x) const {
    return fast_ && fast_for(x) ? divide_fast(x) : __fdiv_rn(x, s_);
  }
  __device__ __forceinline__ float scale() const { return s_; }
  __device__ __forceinline__ float reciprocal() const { return y_; }

 private:
  float s_, y_;
  bool fast_;
};

template <class T>
struct TypeTag {
  using type = T;
};

// The one place where a runtime dtype pair becomes a pair of compile-time types.
// Inputs: f32, f16, bf16. Outputs: those and both fp8 formats. Returns cudaErrorInvalidValue
// for any other pair (callers check supported() first and report the pair by name).
template <class F>
cudaError_t dispatch_dtypes(DType in, DType out, F&& f) {
  auto with_out = [&](auto in_tag) -> cudaError_t {
    switch (out) {
      case DType::f32:
        return f(in_tag, TypeTag<float>{});
      case DType::f16:
        return f(in_tag, TypeTag<__half>{});
      case DType::bf16:
        return f(in_tag, TypeTag<__nv_bfloat16>{});
      case DType::fp8_e4m3:
        return f(in_tag, TypeTag<fp8_e4m3_t>{});
      case DType::fp8_e5m2:
        return f(in_tag, TypeTag<fp8_e5m2_t>{});
    }
    return cudaErrorInvalidValue;
  };
  switch (in) {
    case DType::f32:
      return with_out(TypeTag<float>{});
    case DType::f16:
      return with_out(TypeTag<__half>{});
    case DType::bf16:
      return with_out(TypeTag<__nv_bfloat16>{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace kvbench::kernels
