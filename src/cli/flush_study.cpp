// `kvbench flush-study`: L2 flush methods compared on a copy kernel (docs/measurement.md).
#include "runtime/flush_study.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {
namespace {

int cmd_flush_study(const std::vector<double>& mib, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  open_device();
  const DeviceDetails d = device_details();
  std::vector<std::size_t> sizes;
  for (double m : mib) sizes.push_back(static_cast<std::size_t>(m * (1 << 20)));
  std::printf(
      "L2 flush study on %s (L2 %.1f MiB): a 16-byte copy of MiB -> MiB, one launch per "
      "window\n",
      d.name.c_str(), static_cast<double>(d.l2_bytes) / (1 << 20));
  std::printf("%10s %-12s %5s %10s %10s %10s %9s\n", "MiB", "method", "sets", "median_us", "p10_us",
              "p90_us", "GB/s");
  for (const FlushStudyRow& r : flush_study(d, sizes, s)) {
    std::printf("%10.1f %-12s %5d %10.3f %10.3f %10.3f %9.1f\n",
                static_cast<double>(r.bytes) / (1 << 20), r.method.c_str(), r.buffer_sets,
                r.stats.median_us, r.stats.p10_us, r.stats.p90_us, r.gbps);
    std::fflush(stdout);
  }
  return kOk;
}

}  // namespace

Command add_flush_study(CLI::App& app) {
  struct Args {
    std::vector<double> mib = {4, 16, 28, 128};
    Overrides overrides;
  };
  auto a = std::make_shared<Args>();
  CLI::App* study = app.add_subcommand(
      "flush-study", "Compare L2 flush methods on a copy kernel (docs/measurement.md)");
  study->add_option("--mib", a->mib, "Buffer sizes in MiB (source; the destination is as large)")
      ->check(number_in(0, false, 65536));
  add_timing_flags(study, a->overrides);
  return {study, [a] { return cmd_flush_study(a->mib, a->overrides); }};
}

}  // namespace kvbench::cli
