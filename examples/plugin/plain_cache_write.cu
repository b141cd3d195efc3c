// An example kvbench plugin: reshape_and_cache_flash written as plainly as CUDA allows, one
// thread per (token, head, element), to show the plugin ABI (include/kvbench/kvbench.h) rather
// than speed. Build it with CMake (the target kvbench_example_plugin), then
//   kvbench run configs/validation.yaml --plugin build/examples/plugin/kvbench_example_plugin.so
// validates and times it beside kvbench's own variants (docs/plugins.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "kvbench/kvbench.h"

namespace {

// Inputs widen to fp32 exactly; outputs round once, to nearest even (fp8: saturating to the
// largest finite value, as docs/spec.md defines `cast`).
__device__ float to_float(float x) { return x; }
__device__ float to_float(__half x) { return __half2float(x); }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class Out>
__device__ Out from_float(float x);
template <>
__device__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  __nv_fp8_e4m3 out;
  out.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  return out;
}
template <>
__device__ __nv_fp8_e5m2 from_float<__nv_fp8_e5m2>(float x) {
  __nv_fp8_e5m2 out;
  out.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  return out;
}

template <class In, class Out>
__global__ void cache_write(kvb_cache_write_args a) {
  const long long per_token = a.num_heads * a.head_size;
  const long long total = a.num_tokens * per_token;
  for (long long i = blockIdx.x * 1ll * blockDim.x + threadIdx.x; i < total;
       i += 1ll * gridDim.x * blockDim.x) {
    const long long t = i / per_token, h = (i % per_token) / a.head_size, d = i % a.head_size;
    long long slot = a.slot_mapping[t];
    if (slot < 0) continue;  // a padding token
    if (a.swa_slot_mapping != nullptr) slot = a.swa_slot_mapping[slot];
    if (slot < 0 || slot == a.skip_slot) continue;
    const long long block = slot / a.block_size, offset = slot % a.block_size;
    const long long dst = block * a.block_stride + offset * a.slot_stride + h * a.head_stride + d;
    float k = to_float(static_cast<const In*>(a.key)[t * a.key_s0 + h * a.key_s1 + d]);
    float v = to_float(static_cast<const In*>(a.value)[t * a.value_s0 + h * a.value_s1 + d]);
    if (a.scale_mode != KVB_SCALE_NONE) {
      const int s = a.scale_mode == KVB_SCALE_PER_HEAD ? static_cast<int>(h) : 0;
      k = k / a.k_scale[s];  // IEEE division: nvcc's default -prec-div=true
      v = v / a.v_scale[s];
    }
    static_cast<Out*>(a.key_cache)[dst] = from_float<Out>(k);
    static_cast<Out*>(a.value_cache)[dst] = from_float<Out>(v);
  }
}

template <class In, class Out>
cudaError_t launch_typed(const kvb_cache_write_args& a, cudaStream_t stream) {
  const long long total = a.num_tokens * a.num_heads * a.head_size;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  cache_write<In, Out>
      <<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), threads, 0, stream>>>(a);
  return cudaGetLastError();
}

template <class In>
cudaError_t launch_in(const kvb_cache_write_args& a, cudaStream_t stream) {
  switch (a.out_dtype) {
    case KVB_DTYPE_F32:
      return launch_typed<In, float>(a, stream);
    case KVB_DTYPE_F16:
      return launch_typed<In, __half>(a, stream);
    case KVB_DTYPE_BF16:
      return launch_typed<In, __nv_bfloat16>(a, stream);
    case KVB_DTYPE_FP8_E4M3:
      return launch_typed<In, __nv_fp8_e4m3>(a, stream);
    case KVB_DTYPE_FP8_E5M2:
      return launch_typed<In, __nv_fp8_e5m2>(a, stream);
  }
  return cudaErrorInvalidValue;
}

const char* supports(const kvb_args* args) {
  const kvb_cache_write_args& a = *args->cache_write;
  if (a.in_dtype != KVB_DTYPE_F32 && a.in_dtype != KVB_DTYPE_F16 && a.in_dtype != KVB_DTYPE_BF16)
    return "inputs must be f32, f16 or bf16";
  if (a.out_dtype < KVB_DTYPE_F32 || a.out_dtype > KVB_DTYPE_FP8_E5M2) return "unknown cache dtype";
  return nullptr;
}

int32_t launch(const kvb_args* args, void* stream, char* message, size_t message_size) {
  const kvb_cache_write_args& a = *args->cache_write;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaErrorInvalidValue;
  switch (a.in_dtype) {
    case KVB_DTYPE_F32:
      e = launch_in<float>(a, s);
      break;
    case KVB_DTYPE_F16:
      e = launch_in<__half>(a, s);
      break;
    case KVB_DTYPE_BF16:
      e = launch_in<__nv_bfloat16>(a, s);
      break;
  }
  if (e == cudaSuccess) return 0;
  std::snprintf(message, message_size, "plain_cache_write: %s", cudaGetErrorString(e));
  return 1;
}

}  // namespace

KVBENCH_PLUGIN_EXPORT_ABI;

extern "C" KVBENCH_PLUGIN_API int32_t kvbench_plugin_init(uint32_t abi_version,
                                                          const kvb_host* host) {
  if (abi_version != KVBENCH_ABI_VERSION) return 1;
  const kvb_variant v = {"plain", "one thread per element: the plugin ABI shown plainly",
                         KVB_OP_CACHE_WRITE, supports, launch};
  return host->add_variant(host->context, &v);
}
