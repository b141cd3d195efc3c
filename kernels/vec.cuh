// Pieces shared by the `optimized` variants: aligned vectors, their conversion, and the flat
// (token, item) tiling that both operations use.
#pragma once

#include <cstdint>

#include "kernels/convert.cuh"
#include "kernels/fast_div.hpp"

namespace kvbench::kernels {

// N elements moved together by one thread: 16 bytes on the narrower side of the conversion, so
// that loads and stores are whole 16-byte accesses (bf16->fp8: 16 elements, two 16-byte loads and
// one 16-byte store).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// Elements per 16-byte input access (the fallback width when the wide one does not divide).
template <class In>
constexpr int kVecWidth = 16 / static_cast<int>(sizeof(In));

// Elements per thread access: 16 bytes of whichever of In and Out is narrower.
template <class In, class Out>
constexpr int kWideVec = 16 / static_cast<int>(sizeof(In) < sizeof(Out) ? sizeof(In) : sizeof(Out));

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
// Against v10's test-first form this took the scaled fp8 write 12% faster at T <= 1024 and 2% at
// T = 131072 (docs/perf-notes.md v11).
template <class Out, class In, int N>
__device__ __forceinline__ void store_scaled_pair(Out* kp, const Vec<In, N>& kx, const In* ksrc,
                                                  const Divisor& kd, Out* vp,
                                                  const Vec<In, N>& vx, const In* vsrc,
                                                  const Divisor& vd) {
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

// True when `p` (elements of `elem_bytes`) allows accesses of `n` elements: aligned to their
// size, or to 16 bytes for wider ones (load_vec and store_vec split those into 16-byte pieces).
inline bool vec_aligned(const void* p, int elem_bytes, int n) {
  const int bytes = elem_bytes * n < 16 ? elem_bytes * n : 16;
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0;
}
inline bool divisible(std::int64_t x, int n) { return x % n == 0; }

// A block owns `threads * unroll` consecutive items of the flattened (token, item) space, where
// each token has `per_token` items. The tile's first token is found with one division per
// thread; item positions inside the tile use 32-bit multiply-shift division (FastDiv).
struct TileCursor {
  std::int64_t t0;  // token of the tile's first item
  int r0;           // that item's index within its token
  FastDiv per_token;

  __device__ __forceinline__ TileCursor(std::int64_t tile_start, FastDiv per_token_items)
      : per_token(per_token_items) {
    const std::uint32_t p = per_token_items.divisor();
    if ((tile_start >> 31) == 0) {
      const auto s = static_cast<std::uint32_t>(tile_start);
      const std::uint32_t q = per_token_items.div(s);
      t0 = q;
      r0 = static_cast<int>(s - q * p);
    } else {
      t0 = tile_start / p;
      r0 = static_cast<int>(tile_start - t0 * p);
    }
  }

  // Token and in-token index of the item `local` positions after the tile start
  // (r0 + local < 2^31: per_token <= 2^30 and local < 2^30).
  __device__ __forceinline__ void locate(int local, std::int64_t& t, int& u) const {
    const auto r = static_cast<std::uint32_t>(r0 + local);
    const std::uint32_t dt = per_token.div(r);
    t = t0 + dt;
    u = static_cast<int>(r - dt * per_token.divisor());
  }
};

// SMs of the current device, asked once per device ordinal (0 when it cannot be asked: the
// launch that follows fails on its own, and one_wave() then picks the many-wave shape).
inline int device_sm_count() {
  constexpr int kDevices = 64;
  static int counts[kDevices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) {
    cudaGetLastError();
    return 0;
  }
  if (counts[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    counts[dev] = n;
  }
  return counts[dev];
}

// L2 bytes of the current device, asked once per device ordinal (0 when it cannot be asked).
inline std::int64_t device_l2_bytes() {
  constexpr int kDevices = 64;
  static std::int64_t bytes[kDevices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) {
    cudaGetLastError();
    return 0;
  }
  if (bytes[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrL2CacheSize, dev) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    bytes[dev] = n;
  }
  return bytes[dev];
}

// Blocks of `threads` (at most 1024) that `Kernel` keeps resident per SM: the occupancy
// calculator, asked once per kernel and warp count (kvbench runs on one device).
template <auto Kernel>
int resident_blocks(int threads) {
  static int cache[33] = {};
  const int w = (threads + 31) / 32;
  if (w < 1 || w > 32) return 1;
  if (cache[w] == 0) {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, 0) != cudaSuccess ||
        n <= 0) {
      cudaGetLastError();
      n = 1;
    }
    cache[w] = n;
  }
  return cache[w];
}

// Block shape of the (vector in head, head, token) tiling, blockDim = (head_vecs, heads,
// tokens): a thread finds its item from its thread and block indices, with no index division.
// `heads` is the largest divisor of the head count whose vectors fit in `threads` threads (no
// idle lanes), `tokens` fills the rest. Empty (heads == 0) when one head's vectors do not fit
// or the grid would be too large; the flat tiling takes those shapes.
struct Tile2D {
  int head_vecs = 0, heads = 0, tokens = 0;
  unsigned token_blocks = 0, head_blocks = 0;

  Tile2D(std::int64_t num_tokens, std::int64_t num_heads, std::int64_t vecs, int threads,
         int tokens_per_thread) {
    if (vecs < 1 || vecs > threads || num_heads < 1) return;
    head_vecs = static_cast<int>(vecs);
    int h = static_cast<int>(num_heads < threads / vecs ? num_heads : threads / vecs);
    while (num_heads % h != 0) --h;
    const int t = threads / (head_vecs * h);
    tokens = t < 1 ? 1 : (t > 64 ? 64 : t);  // blockDim.z <= 64
    const std::int64_t per_block = static_cast<std::int64_t>(tokens) * tokens_per_thread;
    const std::int64_t tb = (num_tokens + per_block - 1) / per_block, hb = num_heads / h;
    if (tb * hb > 0x7fffffff) return;
    heads = h;
    token_blocks = static_cast<unsigned>(tb);
    head_blocks = static_cast<unsigned>(hb);
  }
  bool ok() const { return heads > 0; }
  // Blocks are numbered head block fastest, so that blocks running at the same time cover
  // consecutive tokens' memory (a token-major (x, y) grid measured 6% slower above L2).
  dim3 grid() const { return dim3(token_blocks * head_blocks); }
  dim3 block() const {
    return dim3(static_cast<unsigned>(head_vecs), static_cast<unsigned>(heads),
                static_cast<unsigned>(tokens));
  }
  std::int64_t blocks() const { return static_cast<std::int64_t>(token_blocks) * head_blocks; }
  int threads() const { return head_vecs * heads * tokens; }
};

// Blocks needed for `items` items, `per_block` per block; 0 when the grid would be too large.
inline unsigned grid_blocks(std::int64_t items, std::int64_t per_block) {
  const std::int64_t blocks = (items + per_block - 1) / per_block;
  return blocks > 0x7fffffff ? 0u : static_cast<unsigned>(blocks);
}

// Whether `blocks` blocks all run at once (one wave), each SM holding `resident` of them: then
// the launch is latency-bound, and the cache write issues its loads early.
inline bool one_wave(std::int64_t blocks, int resident) {
  return blocks <= static_cast<std::int64_t>(device_sm_count()) * resident;
}

// Programmatic dependent launch (sm_90): the next kernel in the stream may be scheduled while
// this one runs; it waits in pdl_wait() until this grid has finished and its writes are
// visible, so the semantics stay those of back-to-back launches. Both are no-ops when the
// kernel was launched without the attribute.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// pdl_wait() once its operands are computed. Address arithmetic from launch arguments may run
// while the previous grid finishes; written after a plain pdl_wait() it is compiled after the
// wait, on the critical path of a small launch. The addresses as operands keep it ahead
// (docs/perf-notes.md v15).
__device__ __forceinline__ void pdl_wait_after(const void* p, const void* q) {
  asm volatile("griddepcontrol.wait;" ::"l"(p), "l"(q) : "memory");
}
__device__ __forceinline__ void pdl_wait_after(const void* p, const void* q, std::int64_t r) {
  asm volatile("griddepcontrol.wait;" ::"l"(p), "l"(q), "l"(r) : "memory");
}
__device__ __forceinline__ void pdl_wait_after(const void* p, const void* q, const void* r,
                                               std::int64_t x) {
  asm volatile("griddepcontrol.wait;" ::"l"(p), "l"(q), "l"(r), "l"(x) : "memory");
}
__device__ __forceinline__ void pdl_wait_after(const void* p, const void* q, const void* r,
                                               std::int32_t x) {
  asm volatile("griddepcontrol.wait;" ::"l"(p), "l"(q), "l"(r), "r"(x) : "memory");
}
__device__ __forceinline__ void pdl_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;");
}

// Launches `kernel` with programmatic stream serialization (PDL), as every optimized launch is.
template <class... Params, class... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                       Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace kvbench::kernels
