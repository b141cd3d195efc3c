// concat_and_cache_mla, the `optimized` variant (its only one): why it exists: the latent row is
// one contiguous 576-value copy per token, so whole-row blocks of 16-byte vectors move it with no
// per-element index math, and a 128-value fp8_ds_mla tile fits 8 lanes of a warp, so its amax
// costs three shuffles. A block holds whole rows (x: a row's vectors, y: tokens); a thread
// reads its token's slot once, then moves vectors of kv_c or k_pe to the entry, cast (and divided
// by the per-tensor scale) by kernels/common/vec.cuh, two values per conversion instruction.
// Every launch uses PDL. This file only executes a plan (plan.cpp).
#include "kernels/common/convert.cuh"
#include "kernels/common/fast_div.hpp"
#include "kernels/common/pdl.cuh"
#include "kernels/common/vec.cuh"
#include "kernels/mla_cache/launchers.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kMaxThreads = 256;

// Stores x at p, cast to Out (and divided by the scale when SCALED).
template <bool SCALED, class Out, class In, int V>
__device__ __forceinline__ void store_cast(Out* p, const Vec<In, V>& x, const Divisor& d) {
  if constexpr (SCALED) {
    store_vec(p, cast_vec<Out>(x, d));
  } else {
    store_vec(p, cast_vec<Out>(x));
  }
}

// Every load a thread makes for its first vector (the slot, the scale, the vector) is issued
// before the slot test, so that their latencies overlap: with the vector loaded after the test,
// the slot's load and the row's ran one after the other. ptxas sinks a load that only the store
// path uses below the test; using it on the skip path too, through `zero` (a launch argument,
// always 0), keeps it above (as the cache write's speculative kernels do).
template <class In, class Out, int V, bool SCALED>
__global__ void __launch_bounds__(kMaxThreads)
    mla_cache_plain(MlaCacheArgs a, FastDiv block_div, unsigned zero) {
  pdl_launch_dependents();  // launched with PDL
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (t >= a.num_tokens) return;
  const In* kv_c = static_cast<const In*>(a.kv_c) + t * a.kv_c_s0;
  const In* k_pe = static_cast<const In*>(a.k_pe) + t * a.k_pe_s0;
  const auto kv_c_vecs = static_cast<int>(a.lora_rank / V);
  const auto row_vecs = static_cast<int>((a.lora_rank + a.rope_dim) / V);
  const int first = static_cast<int>(threadIdx.x);
  const std::int64_t* slot_at = a.slot_mapping + t;
  pdl_wait_after(kv_c, k_pe, slot_at,
                 std::int64_t{first});  // inputs may come from the previous kernel

  // Coherent loads: ptxas may hoist a non-coherent one (__ldg) above the PDL wait, before the
  // previous kernel's writes of the slots or the scale are visible (seen in the scaled kernels).
  const std::int64_t slot = *slot_at;
  float scale = 1.0f;
  if constexpr (SCALED) scale = *a.scale;
  const bool mine = first < row_vecs;
  Vec<In, V> x{};
  if (mine)
    x = first < kv_c_vecs ? load_vec<In, V>(kv_c + first * V)
                          : load_vec<In, V>(k_pe + (first - kv_c_vecs) * V);
  if (slot < 0) {  // padding (a CUDA-graph slot of -1): nothing written
    if ((low_word(x) & zero) != 0) __trap();
    return;
  }
  std::int64_t block, offset;
  split_slot(slot, a.block_size, block_div, block, offset);
  Out* entry = static_cast<Out*>(a.cache) + block * a.block_stride + offset * a.entry_stride;
  const Divisor divisor(scale);
  if (mine) store_cast<SCALED>(entry + first * V, x, divisor);
  // Past the first vector (rows of more than blockDim.x vectors). The first one stored apart: in
  // one loop with it, x lived across the loop and the scaled kernels took 39 registers, not 32,
  // and 10% longer at T = 32768.
  for (int j = first + static_cast<int>(blockDim.x); j < row_vecs;
       j += static_cast<int>(blockDim.x)) {
    const Vec<In, V> y =
        j < kv_c_vecs ? load_vec<In, V>(kv_c + j * V) : load_vec<In, V>(k_pe + (j - kv_c_vecs) * V);
    store_cast<SCALED>(entry + j * V, y, divisor);
  }
}

// fp8_ds_mla (SPEC.md §6): one warp per token. Lane l holds kv_c values [16l, 16l + 16), so the
// 8 lanes of a quarter-warp hold one 128-value tile: the tile's amax is a max over the lane's 16
// values and three xor-shuffles, every lane of the tile computes the same scale, and each lane
// stores its 16 e4m3 codes as one 16-byte store. Lanes 0-7 also move the 64 rope values, 16
// bytes each, kept in bf16.
template <bool POW2>
__device__ __forceinline__ float ds_tile_scale(float amax) {
  const float quotient = __fdiv_rn(amax, 448.0f);  // correctly rounded, subnormals kept
  if constexpr (!POW2) {
    return fmaxf(quotient, 0x1p-126f);  // FLT_MIN
  } else {
    const float v = fmaxf(quotient, 1e-4f);
    if (isinf(v)) return v;
    // v is normal: a power of two when its mantissa field is zero, else the next one up.
    unsigned bits = __float_as_uint(v);
    if (bits & 0x7FFFFFu) bits = ((bits >> 23) + 1u) << 23;
    return __uint_as_float(bits);
  }
}

constexpr int kDsWarps = 4;  // tokens per block

// As in mla_cache_plain, the loads come before the slot test, and with them the tile's amax, its
// scale and the codes: all of it overlaps the slot's load.
template <class In, bool POW2>
__global__ void __launch_bounds__(32 * kDsWarps)
    mla_cache_ds(MlaCacheArgs a, FastDiv block_div, unsigned zero) {
  pdl_launch_dependents();  // launched with PDL
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t t =
      static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (t >= a.num_tokens) return;  // the whole warp: the shuffles below need every lane
  const In* kv_c = static_cast<const In*>(a.kv_c) + t * a.kv_c_s0 + 16 * lane;
  const In* k_pe = static_cast<const In*>(a.k_pe) + t * a.k_pe_s0 + 8 * (lane % 8);
  const std::int64_t* slot_at = a.slot_mapping + t;
  pdl_wait_after(kv_c, k_pe, slot_at,
                 std::int64_t{lane});  // inputs may come from the previous kernel

  const std::int64_t slot = *slot_at;  // coherent: see mla_cache_plain
  const Vec<In, 16> x = load_vec<In, 16>(kv_c);
  Vec<In, 8> rope{};
  if (lane < 8) rope = load_vec<In, 8>(k_pe);
  float amax = 0.0f;  // fmaxf returns the other operand for a NaN: NaNs never become the amax
#pragma unroll
  for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(to_float(x.v[i])));
#pragma unroll
  for (int offset = 4; offset > 0; offset /= 2)
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  const float scale = ds_tile_scale<POW2>(amax);
  const Vec<fp8_e4m3_t, 16> codes = cast_vec<fp8_e4m3_t>(x, Divisor(scale));
  if (slot < 0) {  // padding: the whole warp leaves
    if (((low_word(codes) | low_word(rope)) & zero) != 0) __trap();
    return;
  }
  std::int64_t block, offset;
  split_slot(slot, a.block_size, block_div, block, offset);
  unsigned char* entry =
      static_cast<unsigned char*>(a.cache) + block * a.block_stride + offset * a.entry_stride;
  store_vec(reinterpret_cast<fp8_e4m3_t*>(entry) + 16 * lane, codes);
  if (lane % 8 == 0) reinterpret_cast<float*>(entry + 512)[lane / 8] = scale;
  if (lane < 8)
    store_vec(reinterpret_cast<__nv_bfloat16*>(entry + 528) + 8 * lane,
              cast_vec<__nv_bfloat16>(rope));
}

template <class In, class Out, int V>
cudaError_t launch_plain(const MlaCacheArgs& a, const MlaCachePlan& p, cudaStream_t stream) {
  const dim3 grid(p.grid.x, p.grid.y, p.grid.z), block(p.block.x, p.block.y, p.block.z);
  auto* kernel = a.scale ? mla_cache_plain<In, Out, V, true> : mla_cache_plain<In, Out, V, false>;
  return launch_pdl(kernel, grid, block, stream, a, fast_div_below_2_31(a.block_size), 0u);
}

}  // namespace

cudaError_t launch_mla_cache_ds(const MlaCacheArgs& a, const MlaCachePlan& p, cudaStream_t stream) {
  const dim3 grid(p.grid.x, p.grid.y, p.grid.z), block(p.block.x, p.block.y, p.block.z);
  const bool pow2 = p.tile_scale == TileScale::pow2;
  const FastDiv bd = fast_div_below_2_31(a.block_size);
  if (a.in_dtype == DType::bf16)
    return launch_pdl(pow2 ? mla_cache_ds<__nv_bfloat16, true> : mla_cache_ds<__nv_bfloat16, false>,
                      grid, block, stream, a, bd, 0u);
  if (a.in_dtype == DType::f16)
    return launch_pdl(pow2 ? mla_cache_ds<__half, true> : mla_cache_ds<__half, false>, grid, block,
                      stream, a, bd, 0u);
  return cudaErrorInvalidValue;
}

cudaError_t launch_mla_cache_plain(const MlaCacheArgs& a, const MlaCachePlan& p,
                                   cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    if constexpr (sizeof(In) != 2 || sizeof(Out) == 4) {
      return cudaErrorInvalidValue;  // mla_cache_supported() refuses these pairs
    } else {
      constexpr int kWide = kVecWidth<In>;
      if (p.vec == kWide) return launch_plain<In, Out, kWide>(a, p, stream);
      if (p.vec == 1) return launch_plain<In, Out, 1>(a, p, stream);
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace kvbench::kernels
