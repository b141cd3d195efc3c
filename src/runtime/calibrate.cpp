#include "runtime/calibrate.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "kvbench_version.hpp"
#include "runtime/copy_kernel.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/timer.hpp"

namespace kvbench {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// At least 4x L2 and 256 MiB, but no more than a quarter of free memory per buffer.
std::size_t buffer_bytes(const DeviceDetails& d) {
  std::size_t want = std::max<std::size_t>(4 * d.l2_bytes, 256 * kMiB);
  std::size_t free_bytes = 0, total = 0;
  KVB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  want = std::min(want, free_bytes / 4);
  return want / kMiB * kMiB;
}

}  // namespace

RunSettings calibration_settings() {
  RunSettings s;
  s.mode = TimingMode::graph;
  s.warmup = 3;
  s.min_samples = 10;
  s.min_time_s = 0.05;
  s.target_noise = 0.002;
  s.timeout_s = 10;
  s.launches_per_sample = 5;
  return s;
}

Calibration calibrate(const DeviceDetails& d) {
  const std::size_t bytes = buffer_bytes(d);
  const DeviceBuffer src(bytes), dst(bytes);
  const Stream stream;
  KVB_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, bytes, stream.get()));
  KVB_CUDA_CHECK(cudaMemsetAsync(dst.get(), 0, bytes, stream.get()));
  const RunSettings s = calibration_settings();
  const double moved = 2.0 * static_cast<double>(bytes);  // read once, written once

  const Measurement memcpy_m = measure(
      [&](cudaStream_t st) {
        return cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, st);
      },
      stream.get(), s);
  const int sms = d.sm_count;
  const Measurement kernel_m =
      measure([&](cudaStream_t st) { return launch_copy16(src.get(), dst.get(), bytes, sms, st); },
              stream.get(), s);

  Calibration c;
  c.device = d.name;
  c.device_uuid = d.uuid;
  c.measured_at = utc_now();
  c.kvbench_version = kVersion;
  c.git_sha = kGitSha;
  c.mode = s.mode;
  c.buffer_bytes = static_cast<double>(bytes);
  c.memcpy_median_us = memcpy_m.stats.median_us;
  c.copy_kernel_median_us = kernel_m.stats.median_us;
  c.memcpy_gbps = moved / memcpy_m.stats.median_us / 1e3;
  c.copy_kernel_gbps = moved / kernel_m.stats.median_us / 1e3;
  c.measured_peak_gbps = std::max(c.memcpy_gbps, c.copy_kernel_gbps);
  c.memory_clock_mhz = d.memory_clock_mhz;
  c.bus_width_bits = d.bus_width_bits;
  c.theoretical_peak_gbps = theoretical_peak_gbps(d.memory_clock_mhz, d.bus_width_bits);
  return c;
}

CalibrationResult load_or_calibrate(const DeviceDetails& d, bool force) {
  const std::string path = calibration_cache_path(
      d.uuid, std::getenv("KVBENCH_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  if (!force) {
    std::ifstream in(path);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      try {
        Calibration c = calibration_from_json(text.str(), path);
        if (c.device_uuid == d.uuid) return {c, path, false};
        std::fprintf(stderr, "kvbench: %s: for device %s, not %s; measuring again\n", path.c_str(),
                     c.device_uuid.c_str(), d.uuid.c_str());
      } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "kvbench: %s; measuring again\n", e.what());
      }
    }
  }
  const Calibration c = calibrate(d);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << calibration_to_json(c);
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": cannot write the calibration cache");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path + ": cannot write the calibration cache: " + ec.message());
  return {c, path, true};
}

}  // namespace kvbench
