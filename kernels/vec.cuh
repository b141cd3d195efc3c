// Pieces shared by the `optimized` variants: aligned vectors, their conversion, and the flat
// (token, item) tiling that both operations use.
#pragma once

#include <cstdint>

#include "kernels/convert.cuh"

namespace kvbench::kernels {

// N elements moved as one access: 16 bytes of input (8 bf16/f16, 4 f32) per thread.
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Elements per 16-byte input access.
template <class In>
constexpr int kVecWidth = 16 / static_cast<int>(sizeof(In));

// Read-only loads go through the non-coherent path (ld.global.nc): inputs never alias outputs.
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  Vec<T, N> v;
  if constexpr (sizeof(Vec<T, N>) == 16) {
    const uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
    v = *reinterpret_cast<const Vec<T, N>*>(&r);
  } else {
    v = *reinterpret_cast<const Vec<T, N>*>(p);
  }
  return v;
}

template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p) = v;
}

// cast() of every element; with a scale, each element is divided first (IEEE, one rounding).
template <class Out, class In, int N>
__device__ __forceinline__ Vec<Out, N> cast_vec(const Vec<In, N>& x, bool scaled = false,
                                                float scale = 1.0f) {
  Vec<Out, N> y;
  if (!scaled) {
#pragma unroll
    for (int i = 0; i < N; ++i) y.v[i] = cast<Out>(x.v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) y.v[i] = from_float<Out>(__fdiv_rn(to_float(x.v[i]), scale));
  }
  return y;
}

// True when `p` (elements of `elem_bytes`) and every stride allow accesses of `n` elements.
inline bool vec_aligned(const void* p, int elem_bytes, int n) {
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(elem_bytes * n) == 0;
}
inline bool divisible(std::int64_t x, int n) { return x % n == 0; }

// A block owns `threads * unroll` consecutive items of the flattened (token, item) space, where
// each token has `per_token` items. The tile's first token is found with one 64-bit division
// per thread; item positions inside the tile use 32-bit arithmetic.
struct TileCursor {
  std::int64_t t0;  // token of the tile's first item
  int r0;           // that item's index within its token
  int per_token;

  __device__ __forceinline__ TileCursor(std::int64_t tile_start, int per_token_items)
      : per_token(per_token_items) {
    if ((tile_start >> 32) == 0) {  // 32-bit division is a fraction of the 64-bit sequence
      const auto s = static_cast<std::uint32_t>(tile_start);
      const auto p = static_cast<std::uint32_t>(per_token_items);
      t0 = s / p;
      r0 = static_cast<int>(s - static_cast<std::uint32_t>(t0) * p);
    } else {
      t0 = tile_start / per_token_items;
      r0 = static_cast<int>(tile_start - t0 * per_token_items);
    }
  }

  // Token and in-token index of the item `local` positions after the tile start.
  __device__ __forceinline__ void locate(int local, std::int64_t& t, int& u) const {
    const int r = r0 + local;
    const int dt = r / per_token;
    t = t0 + dt;
    u = r - dt * per_token;
  }
};

inline int device_sm_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return 132;  // H200
    return n;
  }();
  return count;
}

// Launch shape for `items` flat items with up to `max_unroll` items per thread. `small`: fewer
// items than one full wave of threads (2048 per SM), so the launch is latency-bound: one item per
// thread, loads issued as early as possible, and programmatic dependent launch. Four items per
// thread only from 8 waves on, so every thread still has work. blocks == 0: grid too large.
struct FlatGrid {
  unsigned blocks;
  int unroll;
  bool small;
};
inline FlatGrid plan_flat_grid(std::int64_t items, int threads, int max_unroll) {
  const std::int64_t wave = static_cast<std::int64_t>(device_sm_count()) * 2048;
  const int unroll = items >= 8 * wave ? max_unroll : 1;
  const std::int64_t tile = static_cast<std::int64_t>(threads) * unroll;
  const std::int64_t blocks = (items + tile - 1) / tile;
  return {blocks > 0x7fffffff ? 0u : static_cast<unsigned>(blocks), unroll, items < wave};
}

// Programmatic dependent launch (sm_90): the next kernel in the stream may be scheduled while
// this one runs; it waits in pdl_wait() until this grid has finished and its writes are
// visible, so the semantics stay those of back-to-back launches. Both are no-ops when the
// kernel was launched without the attribute.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;");
}

// Launches `kernel` with programmatic stream serialization when `pdl` is set.
template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), unsigned blocks, int threads, bool pdl,
                          cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace kvbench::kernels
