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
      : t0(tile_start / per_token_items),
        r0(static_cast<int>(tile_start - tile_start / per_token_items * per_token_items)),
        per_token(per_token_items) {}

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

// Launch shape for `items` flat items. Fewer items than one full wave of threads (2048 per SM)
// is latency-bound: one item per thread. Otherwise four per thread, for loads in flight.
// blocks == 0 means the grid would exceed its limit.
struct FlatGrid {
  unsigned blocks;
  int unroll;
};
inline FlatGrid plan_flat_grid(std::int64_t items, int threads) {
  const int unroll = items < static_cast<std::int64_t>(device_sm_count()) * 2048 ? 1 : 4;
  const std::int64_t tile = static_cast<std::int64_t>(threads) * unroll;
  const std::int64_t blocks = (items + tile - 1) / tile;
  return {blocks > 0x7fffffff ? 0u : static_cast<unsigned>(blocks), unroll};
}

}  // namespace kvbench::kernels
