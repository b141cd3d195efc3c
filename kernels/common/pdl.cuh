// Programmatic dependent launch (sm_90), as every optimized launch uses it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvbench::kernels {

// Programmatic dependent launch (sm_90): the next kernel in the stream may be scheduled while
// this one runs; it waits in pdl_wait() until this grid has finished and its writes are
// visible, so the semantics stay those of back-to-back launches. Both are no-ops when the
// kernel was launched without the attribute.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// pdl_wait() once its operands are computed. Address arithmetic from launch arguments may run
// while the previous grid finishes; written after a plain pdl_wait() it is compiled after the
// wait, on the critical path of a small launch. The addresses as operands keep it ahead
// (perf-notes/2026-12, "2026-12-03, 9fef309, 3537c4d, 897b29a").
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
