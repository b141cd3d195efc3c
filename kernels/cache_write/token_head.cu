// reshape_and_cache_flash with scale per_token_head (SPEC.md §7), the `optimized` variant's path
// for it. Why a kernel of its own: every (token, head) row needs its own amax before any of its
// codes is written, so a sub-warp holds the row in registers, reduces it across its lanes and
// quantizes it without reading it twice. One sub-warp of `lanes` lanes per (token, head) moves
// the K row and the V row: each lane holds 4-value vectors (8-byte loads, one 4-byte store of
// e4m3 codes), its first lane stores the two fp32 scales. Padding tokens, SWA remap and the skip
// slot are the cache write's (device.cuh). This file only executes a plan (plan.cpp).
#include "kernels/cache_write/device.cuh"
#include "kernels/cache_write/launchers.hpp"
#include "kernels/common/pdl.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;  // values per vector

// SPEC.md §7 step 3: max(a / 448, 1e-6f), the quotient correctly rounded and never flushed;
// a = +inf gives +inf.
__device__ __forceinline__ float row_scale(float amax) {
  return fmaxf(__fdiv_rn(amax, 448.0f), 1e-6f);
}

// The lane's running amax with the vector's |x|: fmaxf returns the other operand for a NaN, so a
// NaN never becomes the amax (SPEC.md §7 step 2).
template <class In>
__device__ __forceinline__ float vec_amax(float amax, const Vec<In, kVec>& x) {
#pragma unroll
  for (int i = 0; i < kVec; ++i) amax = fmaxf(amax, fabsf(to_float(x.v[i])));
  return amax;
}

// x / s correctly rounded (Divisor, as the reference's IEEE division), then e4m3 with
// saturation: 4 codes in one store.
template <class In>
__device__ __forceinline__ void store_codes(std::uint8_t* row, int j, const Vec<In, kVec>& x,
                                            const Divisor& d) {
  store_vec(reinterpret_cast<fp8_e4m3_t*>(row) + kVec * j, cast_vec<fp8_e4m3_t>(x, d));
}

// REGS: the vectors each lane holds (the row has at most lanes * REGS of them); 0: the row is
// read twice, for its amax and then for its codes (rows of more than 32 * 8 vectors).
template <class In, int REGS>
__global__ void __launch_bounds__(kThreads)
    cache_write_token_head(CacheWriteArgs a, int lanes, FastDiv heads, FastDiv block_div) {
  pdl_launch_dependents();  // launched with PDL
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int shift = __ffs(lanes) - 1;
  const std::int64_t row = thread >> shift;  // (token, head) = (row / H, row % H)
  const int lane = static_cast<int>(thread & (lanes - 1));
  if (row >= a.num_tokens * a.num_heads) return;  // whole groups: the grid ends on a row
  std::int64_t t, h;
  if ((row >> 31) == 0) {  // FastDiv's range
    t = heads.div(static_cast<std::uint32_t>(row));
    h = row - t * a.num_heads;
  } else {
    t = row / a.num_heads;
    h = row - t * a.num_heads;
  }
  const int first = static_cast<int>(threadIdx.x % 32) & ~(lanes - 1);
  const unsigned mask = lanes == 32 ? 0xFFFFFFFFu : ((1u << lanes) - 1u) << first;
  const In* key = static_cast<const In*>(a.key) + t * a.key_s0 + h * a.key_s1;
  const In* value = static_cast<const In*>(a.value) + t * a.value_s0 + h * a.value_s1;
  pdl_wait();  // slots and inputs may come from the previous kernel

  const std::int64_t slot = physical_slot(a, t);
  if (slot < 0) return;  // the whole group: padding, an evicted SWA slot or the skip slot
  std::int64_t block, offset;
  split_slot(slot, a.block_size, block_div, block, offset);
  const std::int64_t dst = block * a.block_stride + offset * a.slot_stride + h * a.head_stride;
  std::uint8_t* kc = static_cast<std::uint8_t*>(a.key_cache) + dst;
  std::uint8_t* vc = static_cast<std::uint8_t*>(a.value_cache) + dst;
  const int vecs = static_cast<int>(a.head_size / kVec);

  float ka = 0.0f, va = 0.0f;
  if constexpr (REGS > 0) {
    Vec<In, kVec> kx[REGS], vx[REGS];
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
      const int j = lane + r * lanes;
      if (j < vecs) {
        kx[r] = load_vec<In, kVec>(key + kVec * j);
        vx[r] = load_vec<In, kVec>(value + kVec * j);
      }
    }
#pragma unroll
    for (int r = 0; r < REGS; ++r)
      if (lane + r * lanes < vecs) {
        ka = vec_amax(ka, kx[r]);
        va = vec_amax(va, vx[r]);
      }
    group_max(ka, va, lanes, mask);
    const float ks = row_scale(ka), vs = row_scale(va);
    const Divisor kd(ks), vd(vs);
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
      const int j = lane + r * lanes;
      if (j < vecs) {
        store_codes(kc, j, kx[r], kd);
        store_codes(vc, j, vx[r], vd);
      }
    }
    if (lane == 0) {
      *reinterpret_cast<float*>(kc + a.head_size) = ks;
      *reinterpret_cast<float*>(vc + a.head_size) = vs;
    }
  } else {
    for (int j = lane; j < vecs; j += lanes) {
      ka = vec_amax(ka, load_vec<In, kVec>(key + kVec * j));
      va = vec_amax(va, load_vec<In, kVec>(value + kVec * j));
    }
    group_max(ka, va, lanes, mask);
    const float ks = row_scale(ka), vs = row_scale(va);
    const Divisor kd(ks), vd(vs);
    for (int j = lane; j < vecs; j += lanes) {
      store_codes(kc, j, load_vec<In, kVec>(key + kVec * j), kd);
      store_codes(vc, j, load_vec<In, kVec>(value + kVec * j), vd);
    }
    if (lane == 0) {
      *reinterpret_cast<float*>(kc + a.head_size) = ks;
      *reinterpret_cast<float*>(vc + a.head_size) = vs;
    }
  }
}

template <class In>
cudaError_t launch_rows(const CacheWriteArgs& a, const CacheWritePlan& p, cudaStream_t stream) {
  const FastDiv heads(static_cast<std::uint32_t>(a.num_heads)), bd = block_size_div(a);
  const dim3 grid(p.grid.x, p.grid.y, p.grid.z), block(p.block.x, p.block.y, p.block.z);
  switch (p.row_vecs) {
    case 0:
      return launch_pdl(cache_write_token_head<In, 0>, grid, block, stream, a, p.lanes, heads, bd);
    case 1:
      return launch_pdl(cache_write_token_head<In, 1>, grid, block, stream, a, p.lanes, heads, bd);
    case 2:
      return launch_pdl(cache_write_token_head<In, 2>, grid, block, stream, a, p.lanes, heads, bd);
    case 4:
      return launch_pdl(cache_write_token_head<In, 4>, grid, block, stream, a, p.lanes, heads, bd);
    case 8:
      return launch_pdl(cache_write_token_head<In, 8>, grid, block, stream, a, p.lanes, heads, bd);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_cache_write_token_head(const CacheWriteArgs& a, const CacheWritePlan& p,
                                          cudaStream_t stream) {
  if (a.out_dtype != DType::fp8_e4m3) return cudaErrorInvalidValue;
  if (a.in_dtype == DType::bf16) return launch_rows<__nv_bfloat16>(a, p, stream);
  if (a.in_dtype == DType::f16) return launch_rows<__half>(a, p, stream);
  return cudaErrorInvalidValue;
}

}  // namespace kvbench::kernels
