#include "cli/report.hpp"

#include <unistd.h>

#include <cstdio>

namespace kvbench::cli {

void print_calibration(const CalibrationResult& r) {
  const Calibration& c = r.calibration;
  std::printf(
      "calibration (%s %s): copy %.0f GB/s (cudaMemcpyAsync %.0f, copy kernel %.0f; "
      "%.0f MiB buffers, read + write counted), theoretical %.0f GB/s (%.0f MHz x %d bit "
      "x 2); %s %s\n",
      c.device.c_str(), c.measured_at.c_str(), c.measured_peak_gbps, c.memcpy_gbps,
      c.copy_kernel_gbps, c.buffer_bytes / (1 << 20), c.theoretical_peak_gbps, c.memory_clock_mhz,
      c.bus_width_bits, r.measured ? "measured, cached in" : "cached in", r.path.c_str());
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

}  // namespace kvbench::cli
