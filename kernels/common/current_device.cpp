// current_device_props(): the real device's SM count and L2 size, and the occupancy API asked
// about each kernel instantiation a plan names.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <utility>

#include "kernels/common/device_props.hpp"

namespace kvbench::kernels {

// Each op answers for its own kernels (their optimized.cu): the occupancy API needs the function.
int concat_resident_blocks(const KernelRef& k, int threads);
int cache_write_resident_blocks(const KernelRef& k, int threads);

namespace {

// Each kernel a plan names to the op that owns it.
int resident_blocks(const KernelRef& k, int threads) {
  switch (k.kernel) {
    case KernelRef::Kernel::concat_2d:
    case KernelRef::Kernel::concat_walk:
    case KernelRef::Kernel::concat_flat:
      return concat_resident_blocks(k, threads);
    case KernelRef::Kernel::cache_write_optimized:
      return cache_write_resident_blocks(k, threads);
  }
  return 0;
}

}  // namespace

const DeviceProps& current_device_props() {
  constexpr int kDevices = 64;
  static DeviceProps props[kDevices];
  static bool asked[kDevices] = {};
  static const DeviceProps none{"none", 0, 0, [](const KernelRef&, int) { return 1; }};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) {
    cudaGetLastError();
    return none;
  }
  if (!asked[dev]) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
      cudaGetLastError();
      return none;
    }
    // Asked once per kernel and block size (kvbench runs on one device).
    auto cache = std::make_shared<std::map<std::pair<std::string, int>, int>>();
    props[dev] = {p.name, p.multiProcessorCount, p.l2CacheSize,
                  [cache](const KernelRef& k, int threads) {
                    const auto key = std::make_pair(k.name(), threads);
                    const auto it = cache->find(key);
                    if (it != cache->end()) return it->second;
                    const int n = resident_blocks(k, threads);
                    (*cache)[key] = n;
                    return n;
                  }};
    asked[dev] = true;
  }
  return props[dev];
}

}  // namespace kvbench::kernels
