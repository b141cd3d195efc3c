// Slot range check, one thread per token; atomicMin keeps the first bad token whatever the
// order in which blocks run.
#include "kernels/cache_write/slot_check.hpp"

namespace kvbench::kernels {
namespace {

__global__ void slot_check_kernel(SlotCheckArgs a) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < a.num_tokens; t += stride) {
    std::int64_t s = a.slot_mapping[t];
    if (s < 0) continue;  // padding: tested before the SWA lookup (SPEC §2 step 1)
    if (a.swa_slot_mapping != nullptr) {
      if (s >= a.swa_size) {
        atomicMin(a.first_bad, static_cast<unsigned long long>(t));
        continue;
      }
      s = a.swa_slot_mapping[s];
      if (s < 0) continue;
    }
    if (s >= a.num_slots) atomicMin(a.first_bad, static_cast<unsigned long long>(t));
  }
}

}  // namespace

cudaError_t launch_slot_check(const SlotCheckArgs& a, cudaStream_t stream) {
  if (a.num_tokens <= 0 || a.first_bad == nullptr || a.slot_mapping == nullptr)
    return cudaErrorInvalidValue;
  const cudaError_t err =
      cudaMemsetAsync(a.first_bad, 0xFF, sizeof(unsigned long long), stream);  // kNoBadToken
  if (err != cudaSuccess) return err;
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::int64_t>((a.num_tokens + 255) / 256, 1024));
  slot_check_kernel<<<blocks, 256, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace kvbench::kernels
