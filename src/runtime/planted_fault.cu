#include <cstdint>

#include "core/types.hpp"
#include "ops/launch.hpp"
#include "runtime/planted_fault.hpp"

namespace kvbench {
namespace {

__global__ void write_far_out_of_bounds(unsigned char* base) {
  base[(std::uint64_t{1} << 40) + threadIdx.x] = 1;  // far beyond any allocation
}

}  // namespace

LaunchOverride planted_fault_launch() {
  LaunchOverride o;
  for (const Kernel k : all_values<Kernel>())
    o.on_operation(k, [k](const void* args, cudaStream_t s) {
      write_far_out_of_bounds<<<1, 32, 0, s>>>(
          static_cast<unsigned char*>(backend(k).output(args)));
      return cudaGetLastError();
    });
  return o;
}

}  // namespace kvbench
