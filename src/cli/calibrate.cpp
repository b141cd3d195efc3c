// `kvbench calibrate` and `kvbench flush-study`: measurements of the device, not of a kernel.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/report.hpp"
#include "core/file_io.hpp"
#include "core/outputs.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/device_info.hpp"
#include "runtime/flush_study.hpp"

namespace kvbench::cli {

int cmd_calibrate(bool force, const std::string& output) {
  check_outputs({{"--output", output}}, {});
  open_device();
  const DeviceDetails details = device_details();
  const CalibrationResult r = load_or_calibrate(details, force);
  print_calibration(r);
  if (!output.empty()) write_file_atomic(output, calibration_to_json(r.calibration));
  return kOk;
}

int cmd_flush_study(const std::vector<double>& mib, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  open_device();
  const DeviceDetails d = device_details();
  std::vector<std::size_t> sizes;
  for (double m : mib) sizes.push_back(static_cast<std::size_t>(m * (1 << 20)));
  std::printf("L2 flush study on %s (L2 %.1f MiB): a 16-byte copy of MiB -> MiB, one launch per "
              "window\n", d.name.c_str(), static_cast<double>(d.l2_bytes) / (1 << 20));
  std::printf("%10s %-12s %5s %10s %10s %10s %9s\n", "MiB", "method", "sets", "median_us",
              "p10_us", "p90_us", "GB/s");
  for (const FlushStudyRow& r : flush_study(d, sizes, s)) {
    std::printf("%10.1f %-12s %5d %10.3f %10.3f %10.3f %9.1f\n",
                static_cast<double>(r.bytes) / (1 << 20), r.method.c_str(), r.buffer_sets,
                r.stats.median_us, r.stats.p10_us, r.stats.p90_us, r.gbps);
    std::fflush(stdout);
  }
  return kOk;
}

}  // namespace kvbench::cli
