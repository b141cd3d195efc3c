// Aligned vectors of the `optimized` variants and their conversion, plain and scaled.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/access.hpp"
#include "kernels/common/convert.cuh"
#include "kernels/common/fast_div.hpp"

namespace kvbench::kernels {

// N elements moved together by one thread: 16 bytes on the narrower side of the conversion, so
// that loads and stores are whole 16-byte accesses (bf16->fp8: 16 elements, two 16-byte loads and
// one 16-byte store).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

template <class In>
constexpr int kVecWidth = input_vec(sizeof(In));

template <class In, class Out>
constexpr int kWideVec = wide_vec(sizeof(In), sizeof(Out));

// Read-only loads go through the non-coherent path (ld.global.nc): inputs never alias outputs.
// Vectors of 16 bytes or more are read as 16-byte pieces (16-byte alignment is what is checked).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  Vec<T, N> v;
  if constexpr (kBytes % 16 == 0) {
    uint4 r[kBytes / 16];
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) r[i] = __ldg(reinterpret_cast<const uint4*>(p) + i);
    memcpy(&v, r, kBytes);
  } else {
    v = *reinterpret_cast<const Vec<T, N>*>(p);
  }
  return v;
}

// The vector's first (up to) four bytes, as an integer: lets code depend on a load cheaply.
template <class T, int N>
__device__ __forceinline__ unsigned low_word(const Vec<T, N>& v) {
  unsigned w = 0;
  memcpy(&w, &v, sizeof(T) * N < sizeof w ? sizeof(T) * N : sizeof w);
  return w;
}

template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  if constexpr (kBytes % 16 == 0) {
    uint4 r[kBytes / 16];
    memcpy(r, &v, kBytes);
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) reinterpret_cast<uint4*>(p)[i] = r[i];
  } else {
    *reinterpret_cast<Vec<T, N>*>(p) = v;
  }
}

// Converts value(i) for i < N into Out, two at a time (from_float2), packed as Out's storage.
template <class Out, int N, class F>
__device__ __forceinline__ Vec<Out, N> pack_pairs(F value) {
  constexpr int kPairBytes = 2 * static_cast<int>(sizeof(Out));
  Vec<Out, N> y;
  if constexpr (kPairBytes == 4) {
    unsigned w[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) w[i] = from_float2<Out>(value(2 * i), value(2 * i + 1));
    memcpy(&y, w, sizeof y);
  } else {
    unsigned short w[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
      w[i] = static_cast<unsigned short>(from_float2<Out>(value(2 * i), value(2 * i + 1)));
    memcpy(&y, w, sizeof y);
  }
  return y;
}

// cast() of every element, two per conversion instruction where the output is narrower than fp32.
// Same-type copies keep the bits (NaN payloads included), as cast() does.
template <class Out, class In, int N>
__device__ __forceinline__ Vec<Out, N> cast_vec(const Vec<In, N>& x) {
  if constexpr (std::is_same_v<In, Out>) {
    return x;
  } else if constexpr (std::is_same_v<Out, float> || N % 2 != 0) {
    Vec<Out, N> y;
#pragma unroll
    for (int i = 0; i < N; ++i) y.v[i] = cast<Out>(x.v[i]);
    return y;
  } else {
    return pack_pairs<Out, N>([&](int i) { return to_float(x.v[i]); });
  }
}

// Whether every element of a 16-bit vector lies in Divisor's fast range, |x| in [2^-60, 2^60],
// tested on the packed words: |x|'s bit pattern (sign cleared) orders like |x|, so the range is a
// range of patterns, and two-lane unsigned min/max (vminu2/vmaxu2) fold two elements per
// instruction. NaN and infinity patterns lie above the range, zeros below, as in the float test.
template <class In, int N>
__device__ __forceinline__ bool in_divisor_range(const Vec<In, N>& x) {
  static_assert(sizeof(In) == 2 && N % 2 == 0);
  constexpr bool kHalf = std::is_same_v<In, __half>;
  constexpr unsigned kLow = kHalf ? 0x0001u : 0x2180u;   // fp16: every nonzero; bf16: 2^-60
  constexpr unsigned kHigh = kHalf ? 0x7BFFu : 0x5D80u;  // fp16: 65504; bf16: 2^60
  unsigned lo = 0xFFFFFFFFu, hi = 0;
#pragma unroll
  for (int k = 0; k < N / 2; ++k) {
    unsigned w;
    memcpy(&w, &x.v[2 * k], sizeof w);
    w &= 0x7FFF7FFFu;
    lo = __vminu2(lo, w);
    hi = __vmaxu2(hi, w);
  }
  return min(lo & 0xFFFFu, lo >> 16) >= kLow && max(hi & 0xFFFFu, hi >> 16) <= kHigh;
}

// from_float(q[i]) of every element, two per conversion instruction where that pays.
template <class Out, int N>
__device__ __forceinline__ Vec<Out, N> cast_floats(const float (&q)[N]) {
  if constexpr (std::is_same_v<Out, float> || N % 2 != 0) {
    Vec<Out, N> y;
#pragma unroll
    for (int i = 0; i < N; ++i) y.v[i] = from_float<Out>(q[i]);
    return y;
  } else {
    return pack_pairs<Out, N>([&](int i) { return q[i]; });
  }
}

// from_float(x / scale) of every element: SPEC.md's scaled cast, one division rounding and one
// conversion rounding. For 16-bit inputs one range test covers the whole vector: if every
// element may take Divisor's fast path (proven exhaustively for them), all do, branch-free;
// otherwise all take IEEE division, which keeps the rarely run code out of the common path.
// fp32 inputs, whose significands the proof does not cover, use IEEE division per element.
template <class Out, class In, int N>
__device__ __forceinline__ Vec<Out, N> cast_vec(const Vec<In, N>& x, const Divisor& d) {
  float q[N];
  bool fast = false;
#pragma unroll
  for (int i = 0; i < N; ++i) q[i] = to_float(x.v[i]);
  if constexpr (sizeof(In) == 2 && N % 2 == 0) {
    fast = d.fast() && in_divisor_range(x);
  } else if constexpr (sizeof(In) == 2) {
    fast = d.fast();
#pragma unroll
    for (int i = 0; i < N; ++i) fast &= Divisor::fast_for(q[i]);
  }
  if (fast) {
#pragma unroll
    for (int i = 0; i < N; ++i) q[i] = d.divide_fast(q[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) q[i] = __fdiv_rn(q[i], d.scale());
  }
  return cast_floats<Out, N>(q);
}

// cast_vec(x, d) computed with Divisor's fast path whatever the operands: exact only where
// d.fast() && in_divisor_range(x). For even 16-bit vectors.
template <class Out, class In, int N>
__device__ __forceinline__ Vec<Out, N> cast_vec_fast(const Vec<In, N>& x, const Divisor& d) {
  static_assert(sizeof(In) == 2 && N % 2 == 0);
  float q[N];
#pragma unroll
  for (int i = 0; i < N; ++i) q[i] = d.divide_fast(to_float(x.v[i]));
  return cast_floats<Out, N>(q);
}

// cast_vec(x, d) by IEEE division, whatever the operands.
template <class Out, class In, int N>
__device__ __forceinline__ Vec<Out, N> cast_vec_ieee(const Vec<In, N>& x, const Divisor& d) {
  float q[N];
#pragma unroll
  for (int i = 0; i < N; ++i) q[i] = __fdiv_rn(to_float(x.v[i]), d.scale());
  return cast_floats<Out, N>(q);
}

// Stores cast_vec(kx, kd) at kp and cast_vec(vx, vd) at vp, where kx and vx were loaded from
// ksrc and vsrc, in the order that keeps the common case free of branches: for 16-bit inputs
// both vectors are stored from Divisor's fast path unconditionally, and only then is its range
// tested; a vector outside it is read again and stored again with IEEE division (the same
// thread's later store to the same address is the one that stays). Reading it again frees the
// vectors' registers for the conversion; the plain loads let tests pass sources in local memory.
// Against testing first, this takes the scaled fp8 write 12% faster at T <= 1024 and 2% at
// T = 131072 (perf-notes/2026-12, "2026-12-03, a0f039a").
template <class Out, class In, int N>
__device__ __forceinline__ void store_scaled_pair(Out* kp, const Vec<In, N>& kx, const In* ksrc,
                                                  const Divisor& kd, Out* vp, const Vec<In, N>& vx,
                                                  const In* vsrc, const Divisor& vd) {
  if constexpr (sizeof(In) == 2 && N % 2 == 0) {
    // `&`, not `&&`: a short circuit compiles to a branch ahead of the stores.
    const bool k_fast = kd.fast() & in_divisor_range(kx);
    const bool v_fast = vd.fast() & in_divisor_range(vx);
    store_vec(kp, cast_vec_fast<Out>(kx, kd));
    store_vec(vp, cast_vec_fast<Out>(vx, vd));
    // One branch, marked unlikely so that the redo is laid out after the kernel's exit and the
    // common path runs straight through.
    if (__builtin_expect(!(k_fast & v_fast), 0)) {
      using Src = const Vec<In, N>*;
      if (!k_fast) store_vec(kp, cast_vec_ieee<Out>(*reinterpret_cast<Src>(ksrc), kd));
      if (!v_fast) store_vec(vp, cast_vec_ieee<Out>(*reinterpret_cast<Src>(vsrc), vd));
    }
  } else {
    store_vec(kp, cast_vec<Out>(kx, kd));
    store_vec(vp, cast_vec<Out>(vx, vd));
  }
}

// Calls f(std::integral_constant<int, V>) for the plan's vector width, among those the dtype
// pair compiles: 16 bytes of the narrower type, 16 bytes of input, one element.
template <class In, class Out, class F>
cudaError_t with_vec(int vec, F&& f) {
  constexpr int kWide = kWideVec<In, Out>, kNarrow = kVecWidth<In>;
  if (vec == kWide) return f(std::integral_constant<int, kWide>{});
  if constexpr (kNarrow != kWide) {
    if (vec == kNarrow) return f(std::integral_constant<int, kNarrow>{});
  }
  if (vec == 1) return f(std::integral_constant<int, 1>{});
  return cudaErrorInvalidValue;
}

}  // namespace kvbench::kernels
