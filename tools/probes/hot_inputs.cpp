// Where the optimized cache write's extra time with hot inputs comes from: two experiments on
// the cache write at T=1 H=8 D=128, rotated (`--rotate auto`), each printing medians.
//   pdl:   the optimized kernel launched as planned (PDL) and with PDL off, beside seed_port,
//          with cold and with hot inputs (`--hot-inputs`): which launch attribute the
//          hot-inputs time depends on.
//   dirty: a copy of the case's K and V launched right before the kernel inside the timed
//          window, either onto them from a shadow copy (they end dirty in L2, as a producer
//          leaves them) or from them onto the shadow (they end clean in L2). The two copies move
//          the same bytes, so what differs between the medians is how the kernel reads lines
//          that are dirty rather than clean; optimized against seed_port.
// A probe, not a test: it asserts nothing about the figures. It exits 1 when a case does not
// pass or a CUDA call fails, 2 on a bad argument, 4 without a CUDA device.
// Usage: probe_hot_inputs [pdl|dirty]   (both when no argument is given)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/case.hpp"
#include "core/operation.hpp"
#include "core/rotation.hpp"
#include "kernels/cache_write/cache_write.hpp"
#include "kernels/cache_write/plan.hpp"
#include "kernels/common/device_props.hpp"
#include "ops/cache_write/params.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench {
namespace {

Case cache_t1() {
  Case c = operation(Kernel::cache_write).default_case();
  c.num_tokens = 1;
  c.num_heads = 8;
  params_of<CacheWriteParams>(c).head_size = 128;
  params_of<CacheWriteParams>(c).block_size = 16;
  return c;
}

RunSettings probe_settings() {
  RunSettings s;
  s.min_samples = 20;
  s.min_time_s = 0.02;
  s.timeout_s = 2;
  s.rotate = kRotateAuto;
  return s;
}

const Row& passed(const Row& r) {
  if (r.status != Status::passed) throw std::runtime_error("a case did not pass: " + r.reason);
  return r;
}

void pdl_probe(const DeviceInfo& device) {
  RunSettings s = probe_settings();
  Case c = cache_t1();
  LaunchOverride no_pdl;
  no_pdl.on<kernels::CacheWriteArgs>(
      Kernel::cache_write, [](const kernels::CacheWriteArgs& a, cudaStream_t st) {
        kernels::CacheWritePlan p =
            kernels::plan_cache_write(a, Variant::optimized, kernels::current_device_props());
        p.pdl = false;
        return kernels::launch_cache_write(a, p, st);
      });
  for (bool hot : {false, true}) {
    s.hot_inputs = hot;
    c.variant = Variant::optimized;
    const Row pdl = passed(run_case(c, s, device));
    const Row plain = passed(run_case(c, s, device, {}, no_pdl));
    c.variant = Variant::seed_port;
    const Row seed = passed(run_case(c, s, device));
    std::printf(
        "cache T=1 H=8 D=128, %s, %d sets: optimized %.3f us, optimized without PDL "
        "%.3f us, seed_port %.3f us\n",
        hot ? "hot inputs" : "cold", pdl.buffer_sets, pdl.stats.median_us, plain.stats.median_us,
        seed.stats.median_us);
  }
}

void dirty_probe(const DeviceInfo& device) {
  const RunSettings s = probe_settings();
  Case c = cache_t1();
  const std::size_t bytes = static_cast<std::size_t>(c.num_tokens * c.num_heads *
                                                     params_of<CacheWriteParams>(c).head_size) *
                            2;
  for (Variant v : {Variant::optimized, Variant::seed_port}) {
    c.variant = v;
    double us[3] = {0, 0, 0};
    for (int mode = 0; mode < 3; ++mode) {                          // none, dirty, clean
      std::map<const void*, std::unique_ptr<DeviceBuffer>> shadow;  // per set: K then V
      LaunchOverride o;
      o.on<kernels::CacheWriteArgs>(Kernel::cache_write, [&](const kernels::CacheWriteArgs& a,
                                                             cudaStream_t st) {
        auto& sh = shadow[a.key];
        if (!sh) {  // the set's first launch (validation, before any capture): copy its inputs
          sh = std::make_unique<DeviceBuffer>(2 * bytes);
          KVB_CUDA_CHECK(cudaMemcpyAsync(sh->get(), a.key, bytes, cudaMemcpyDeviceToDevice, st));
          KVB_CUDA_CHECK(cudaMemcpyAsync(sh->as<unsigned char>() + bytes, a.value, bytes,
                                         cudaMemcpyDeviceToDevice, st));
        }
        auto* k = const_cast<void*>(a.key);
        auto* val = const_cast<void*>(a.value);
        unsigned char* sk = sh->as<unsigned char>();
        if (mode == 1) {
          KVB_CUDA_CHECK(cudaMemcpyAsync(k, sk, bytes, cudaMemcpyDeviceToDevice, st));
          KVB_CUDA_CHECK(cudaMemcpyAsync(val, sk + bytes, bytes, cudaMemcpyDeviceToDevice, st));
        } else if (mode == 2) {
          KVB_CUDA_CHECK(cudaMemcpyAsync(sk, k, bytes, cudaMemcpyDeviceToDevice, st));
          KVB_CUDA_CHECK(cudaMemcpyAsync(sk + bytes, val, bytes, cudaMemcpyDeviceToDevice, st));
        }
        return kernels::launch_cache_write(a, v, st);
      });
      us[mode] = passed(run_case(c, s, device, {}, o)).stats.median_us;
    }
    std::printf(
        "cache T=1 H=8 D=128 %s: alone %.3f us; after a copy onto its inputs (dirty) "
        "%.3f us, from them (clean) %.3f us\n",
        std::string(to_string(v)).c_str(), us[0], us[1], us[2]);
  }
}

}  // namespace
}  // namespace kvbench

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && which != "pdl" && which != "dirty")) {
    std::fprintf(stderr, "usage: probe_hot_inputs [pdl|dirty]\n");
    return 2;
  }
  kvbench::DeviceInfo device;
  try {
    device = kvbench::open_device();
  } catch (const kvbench::NoDeviceError& e) {
    std::fprintf(stderr, "probe_hot_inputs: %s\n", e.what());
    return 4;
  }
  try {
    if (which != "dirty") kvbench::pdl_probe(device);
    if (which != "pdl") kvbench::dirty_probe(device);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe_hot_inputs: %s\n", e.what());
    return 1;
  }
  return 0;
}
