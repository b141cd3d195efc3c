#include <cstdint>

#include "kernels/cache_write/cache_write.hpp"
#include "kernels/concat_mla_k/concat_mla_k.hpp"
#include "runtime/planted_fault.hpp"

namespace kvbench {
namespace {

__global__ void write_far_out_of_bounds(unsigned char* base) {
  base[(std::uint64_t{1} << 40) + threadIdx.x] = 1;  // far beyond any allocation
}

cudaError_t launch_fault(void* base, cudaStream_t s) {
  write_far_out_of_bounds<<<1, 32, 0, s>>>(static_cast<unsigned char*>(base));
  return cudaGetLastError();
}

}  // namespace

LaunchOverride planted_fault_launch() {
  LaunchOverride o;
  o.on<kernels::ConcatArgs>(Kernel::concat_mla_k, [](const kernels::ConcatArgs& a, cudaStream_t s) {
    return launch_fault(a.k, s);
  });
  o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                [](const kernels::CacheWriteArgs& a, cudaStream_t s) {
                                  return launch_fault(a.key_cache, s);
                                });
  return o;
}

}  // namespace kvbench
