#include "kernels/common/convert.cuh"
#include "tests/gpu/planted_kernels.hpp"

namespace kvbench::testing {
namespace {

using kernels::cast;
using kernels::fp8_e4m3_t;
using kernels::from_float;
using kernels::to_float;

template <class Out, class In>
__device__ Out planted_cast(In x, Bug bug) {
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, __nv_bfloat16>) {
    if (bug == Bug::truncation)
      return __ushort_as_bfloat16(static_cast<unsigned short>(__float_as_uint(x) >> 16));
  }
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, fp8_e4m3_t>) {
    if (bug == Bug::double_rounding)
      return from_float<fp8_e4m3_t>(__bfloat162float(__float2bfloat16_rn(x)));
  }
  return cast<Out>(x);
}

// One block per token, plain loops: these kernels are meant to be obviously wrong, not fast.
template <class In, class Out>
__global__ void planted_concat(kernels::ConcatArgs a, Bug bug) {
  const std::int64_t t = blockIdx.x;
  const std::int64_t width = a.nope_dim + a.rope_dim;
  const std::int64_t nope_s1 = bug == Bug::wrong_head_stride ? a.nope_dim : a.nope_s1;
  const In* nope = static_cast<const In*>(a.k_nope) + t * a.nope_s0;
  const In* rope = static_cast<const In*>(a.k_rope) + t * a.rope_s0;
  Out* k = static_cast<Out*>(a.k) + t * a.k_s0;
  for (std::int64_t i = threadIdx.x; i < a.num_heads * width; i += blockDim.x) {
    const std::int64_t h = i / width, d = i % width;
    if (bug == Bug::last_element_skipped && t == a.num_tokens - 1 && i == a.num_heads * width - 1)
      continue;
    if (d < a.nope_dim) {
      k[h * a.k_s1 + d] = planted_cast<Out>(nope[h * nope_s1 + d], bug);
    } else if (h == 0 || bug != Bug::rope_not_broadcast) {
      k[h * a.k_s1 + d] = planted_cast<Out>(rope[d - a.nope_dim], bug);
    }
  }
}

template <class In, class Out>
__global__ void planted_cache_write(kernels::CacheWriteArgs a, Bug bug) {
  const std::int64_t t = blockIdx.x;
  std::int64_t s = a.slot_mapping[t];
  if (bug == Bug::swa_before_negative && a.swa_slot_mapping != nullptr) {
    s = a.swa_slot_mapping[s];  // reads index -1 for a padding token
    if (s < 0) return;
  } else {
    if (s < 0 && bug != Bug::padding_written) return;
    if (a.swa_slot_mapping != nullptr && s >= 0) {
      s = a.swa_slot_mapping[s];
      if (s < 0) return;
    }
  }
  // skip_slot is -1 when unused: compare only real slots, or padding tokens would stop here.
  if (s >= 0 && s == a.skip_slot && bug != Bug::skip_slot_written) return;
  if (bug == Bug::slot_off_by_one) ++s;
  // Division truncates toward zero, so slot -1 gives block 0, offset -1: just before the cache.
  const std::int64_t b = s / a.block_size, o = s % a.block_size;
  const std::int64_t head_stride = bug == Bug::cache_head_stride ? a.head_size : a.head_stride;
  const In* key = static_cast<const In*>(a.key) + t * a.key_s0;
  const In* value = static_cast<const In*>(a.value) + t * a.value_s0;
  Out* kc = static_cast<Out*>(a.key_cache) + b * a.block_stride + o * a.slot_stride;
  Out* vc = static_cast<Out*>(a.value_cache) + b * a.block_stride + o * a.slot_stride;
  for (std::int64_t i = threadIdx.x; i < a.num_heads * a.head_size; i += blockDim.x) {
    const std::int64_t h = i / a.head_size, d = i % a.head_size;
    const float kx = to_float(key[h * a.key_s1 + d]), vx = to_float(value[h * a.value_s1 + d]);
    if (a.scale == ScaleMode::none) {
      kc[h * head_stride + d] = planted_cast<Out>(key[h * a.key_s1 + d], bug);
      vc[h * head_stride + d] = planted_cast<Out>(value[h * a.value_s1 + d], bug);
      continue;
    }
    const std::int64_t si = a.scale == ScaleMode::per_head ? h : 0;
    const float ks = a.k_scale[si], vs = a.v_scale[si];
    const float kq = bug == Bug::reciprocal_scale ? kx * (1.0f / ks) : __fdiv_rn(kx, ks);
    const float vq = bug == Bug::reciprocal_scale ? vx * (1.0f / vs) : __fdiv_rn(vx, vs);
    kc[h * head_stride + d] = from_float<Out>(kq);
    vc[h * head_stride + d] = from_float<Out>(vq);
  }
}

// One block per token: slot, then the L + R values in order.
template <class In, class Out>
__global__ void planted_mla_cache(kernels::MlaCacheArgs a, Bug bug) {
  const std::int64_t t = blockIdx.x;
  std::int64_t s = a.slot_mapping[t];
  if (s < 0 && bug != Bug::padding_written) return;
  if (bug == Bug::slot_off_by_one) ++s;
  // Division truncates toward zero, so slot -1 gives block 0, offset -1: just before the cache.
  Out* entry = static_cast<Out*>(a.cache) + (s / a.block_size) * a.block_stride +
               (s % a.block_size) * a.entry_stride;
  const In* kv_c = static_cast<const In*>(a.kv_c) + t * a.kv_c_s0;
  const In* k_pe = static_cast<const In*>(a.k_pe) + t * a.k_pe_s0;
  const std::int64_t rope_at = bug == Bug::rope_boundary ? a.lora_rank - 1 : a.lora_rank;
  for (std::int64_t i = threadIdx.x; i < a.lora_rank + a.rope_dim; i += blockDim.x) {
    const bool is_rope = i >= a.lora_rank;
    const float x = to_float(is_rope ? k_pe[i - a.lora_rank] : kv_c[i]);
    const std::int64_t at = is_rope ? rope_at + (i - a.lora_rank) : i;
    if (bug == Bug::rope_boundary && i == a.lora_rank - 1) continue;  // overwritten by rope 0
    if (a.scale == nullptr) {
      entry[at] = from_float<Out>(x);
    } else {
      entry[at] = from_float<Out>(__fdiv_rn(x, *a.scale));
    }
  }
}

__device__ float planted_tile_scale(float amax, bool pow2) {
  const float q = __fdiv_rn(amax, 448.0f);
  if (!pow2) return fmaxf(q, 0x1p-126f);
  const float v = fmaxf(q, 1e-4f);
  if (isinf(v)) return v;
  unsigned bits = __float_as_uint(v);
  if (bits & 0x7FFFFFu) bits = ((bits >> 23) + 1u) << 23;
  return __uint_as_float(bits);
}

// fp8_ds_mla, one block per token: 4 threads take a tile's amax and scale each, then every
// thread quantizes by the IEEE division and the rope is copied (or cast) to bf16.
template <class In>
__global__ void planted_ds_mla(kernels::MlaCacheArgs a, Bug bug) {
  __shared__ float scales[4];
  const std::int64_t t = blockIdx.x;
  const std::int64_t s = a.slot_mapping[t];
  if (s < 0) return;  // the whole block
  unsigned char* entry = static_cast<unsigned char*>(a.cache) +
                         (s / a.block_size) * a.block_stride + (s % a.block_size) * a.entry_stride;
  const In* kv_c = static_cast<const In*>(a.kv_c) + t * a.kv_c_s0;
  const In* k_pe = static_cast<const In*>(a.k_pe) + t * a.k_pe_s0;
  const int early = bug == Bug::tile_boundary ? 1 : 0;
  const auto tile_of = [early](int j) { return min((j + early) / 128, 3); };
  if (threadIdx.x < 4) {
    float amax = 0.0f;
    for (int j = 0; j < 512; ++j)
      if (tile_of(j) == static_cast<int>(threadIdx.x)) amax = fmaxf(amax, fabsf(to_float(kv_c[j])));
    const bool pow2 =
        (a.tile_scale == kernels::TileScale::pow2) != (bug == Bug::scale_rule_swapped);
    float scale = planted_tile_scale(amax, pow2);
    if (bug == Bug::wrong_tile_scale) scale = nextafterf(scale, INFINITY);
    scales[threadIdx.x] = scale;
    memcpy(entry + 512 + 4 * threadIdx.x, &scale, 4);
  }
  __syncthreads();
  for (int j = static_cast<int>(threadIdx.x); j < 512; j += static_cast<int>(blockDim.x))
    entry[j] = from_float<fp8_e4m3_t>(__fdiv_rn(to_float(kv_c[j]), scales[tile_of(j)])).bits;
  // Each rope value is one 16-bit store (the entry is 16-byte aligned). Written as two byte
  // stores (memcpy), the fp16 -> bf16 values came out with wrong low bytes on an H100.
  unsigned short* rope = reinterpret_cast<unsigned short*>(entry + 528);
  for (int j = static_cast<int>(threadIdx.x); j < 64; j += static_cast<int>(blockDim.x)) {
    if (bug == Bug::rope_quantized)
      rope[j] = from_float<fp8_e4m3_t>(to_float(k_pe[j])).bits;
    else
      rope[j] = __bfloat16_as_ushort(cast<__nv_bfloat16>(k_pe[j]));
  }
}

// per_token_head (SPEC.md §7), one block per token, one thread per head: each row's amax and
// scale, then its codes by the IEEE division, K then V.
template <class In>
__global__ void planted_token_head(kernels::CacheWriteArgs a, Bug bug) {
  const std::int64_t t = blockIdx.x;
  std::int64_t s = a.slot_mapping[t];
  if (bug == Bug::swa_before_negative && a.swa_slot_mapping != nullptr) {
    s = a.swa_slot_mapping[s];  // reads index -1 for a padding token
    if (s < 0) return;
  } else {
    if (s < 0 && bug != Bug::padding_written) return;
    if (a.swa_slot_mapping != nullptr && s >= 0) {
      s = a.swa_slot_mapping[s];
      if (s < 0) return;
    }
  }
  if (s >= 0 && s == a.skip_slot && bug != Bug::skip_slot_written) return;
  if (bug == Bug::slot_off_by_one) ++s;
  // Division truncates toward zero, so slot -1 gives block 0, offset -1: just before the cache.
  const std::int64_t b = s / a.block_size, o = s % a.block_size, D = a.head_size;
  for (std::int64_t h = threadIdx.x; h < a.num_heads; h += blockDim.x)
    for (const bool v : {false, true}) {
      const In* x = static_cast<const In*>(v ? a.value : a.key) + t * (v ? a.value_s0 : a.key_s0) +
                    h * (v ? a.value_s1 : a.key_s1);
      unsigned char* row = static_cast<unsigned char*>(v ? a.value_cache : a.key_cache) +
                           b * a.block_stride + o * a.slot_stride + h * a.head_stride;
      float amax = 0.0f;
      const std::int64_t first = bug == Bug::token_scale_shared ? -h : 0;
      const std::int64_t last = bug == Bug::token_scale_shared ? a.num_heads - h : 1;
      for (std::int64_t hh = first; hh < last; ++hh)
        for (std::int64_t d = 0; d < D; ++d)
          amax = fmaxf(amax, fabsf(to_float(x[hh * (v ? a.value_s1 : a.key_s1) + d])));
      float scale = fmaxf(__fdiv_rn(amax, 448.0f), 1e-6f);
      if (bug == Bug::row_scale_wrong) scale = nextafterf(scale, INFINITY);
      const std::int64_t codes_at = bug == Bug::row_scale_first ? 4 : 0;
      for (std::int64_t d = 0; d < D; ++d)
        row[codes_at + d] = from_float<fp8_e4m3_t>(__fdiv_rn(to_float(x[d]), scale)).bits;
      // One 4-byte store (rows are 4-byte aligned), not byte stores through memcpy.
      *reinterpret_cast<float*>(row + (bug == Bug::row_scale_first ? 0 : D)) = scale;
    }
}

}  // namespace

cudaError_t launch_planted_mla_cache(const kernels::MlaCacheArgs& a, Bug bug, cudaStream_t stream) {
  return kernels::dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    if (a.entry == kernels::MlaEntry::fp8_ds_mla) {
      if constexpr (sizeof(In) == 2)
        planted_ds_mla<In><<<static_cast<unsigned>(a.num_tokens), 128, 0, stream>>>(a, bug);
    } else {
      planted_mla_cache<In, Out><<<static_cast<unsigned>(a.num_tokens), 128, 0, stream>>>(a, bug);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_planted_concat(const kernels::ConcatArgs& a, Bug bug, cudaStream_t stream) {
  return kernels::dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    planted_concat<In, Out><<<static_cast<unsigned>(a.num_tokens), 128, 0, stream>>>(a, bug);
    return cudaGetLastError();
  });
}

cudaError_t launch_planted_cache_write(const kernels::CacheWriteArgs& a, Bug bug,
                                       cudaStream_t stream) {
  return kernels::dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    if (a.scale == ScaleMode::per_token_head) {
      if constexpr (sizeof(In) == 2)
        planted_token_head<In><<<static_cast<unsigned>(a.num_tokens), 128, 0, stream>>>(a, bug);
    } else {
      planted_cache_write<In, Out><<<static_cast<unsigned>(a.num_tokens), 128, 0, stream>>>(a, bug);
    }
    return cudaGetLastError();
  });
}

}  // namespace kvbench::testing
