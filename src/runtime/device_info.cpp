#include "runtime/device_info.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "core/metadata.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench {
namespace {

// The few NVML entry points used, declared here: the toolkit ships no nvml.h on every machine,
// and nothing links against the library.
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockMem = 2;

struct Nvml {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  int (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  int (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;

  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown"));
    driver_version =
        reinterpret_cast<int (*)(char*, unsigned)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    by_uuid = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(
        dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    max_clock = reinterpret_cast<int (*)(NvmlDevice, int, unsigned*)>(
        dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    if (!init || !shutdown || init() != kNvmlSuccess) {
      dlclose(lib);
      lib = nullptr;
    }
  }
  ~Nvml() {
    if (lib) {
      shutdown();
      dlclose(lib);
    }
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
};

int attribute(cudaDeviceAttr a) {
  int v = 0;
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, 0));
  return v;
}

}  // namespace

DeviceDetails device_details() {
  DeviceDetails d;
  cudaDeviceProp prop{};
  KVB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  d.name = prop.name;
  d.uuid = format_uuid(prop.uuid.bytes);
  d.compute_capability = prop.major * 10 + prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  d.global_memory_bytes = prop.totalGlobalMem;
  d.max_sm_clock_mhz = attribute(cudaDevAttrClockRate) / 1e3;  // kHz
  d.memory_clock_mhz = attribute(cudaDevAttrMemoryClockRate) / 1e3;
  d.bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth);
  KVB_CUDA_CHECK(cudaDriverGetVersion(&d.cuda_driver_version));
  KVB_CUDA_CHECK(cudaRuntimeGetVersion(&d.cuda_runtime_version));
  d.driver_version = "cuda " + std::to_string(d.cuda_driver_version / 1000) + "." +
                     std::to_string(d.cuda_driver_version % 1000 / 10);

  const Nvml nvml;
  if (nvml.lib) {
    char buf[96] = {};
    if (nvml.driver_version && nvml.driver_version(buf, sizeof buf) == kNvmlSuccess)
      d.driver_version = buf;
    NvmlDevice dev = nullptr;
    unsigned mhz = 0;
    if (d.memory_clock_mhz <= 0 && nvml.by_uuid && nvml.max_clock &&
        nvml.by_uuid(d.uuid.c_str(), &dev) == kNvmlSuccess &&
        nvml.max_clock(dev, kNvmlClockMem, &mhz) == kNvmlSuccess)
      d.memory_clock_mhz = mhz;
  }
  return d;
}

}  // namespace kvbench
