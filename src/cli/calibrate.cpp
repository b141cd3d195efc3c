// `kvbench calibrate`: the device's copy bandwidth, a measurement of the device, not of a kernel.
#include "runtime/calibrate.hpp"

#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "cli/report.hpp"
#include "core/file_io.hpp"
#include "core/outputs.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {

Command add_calibrate(CLI::App& app) {
  struct Args {
    bool force = false;
    std::string output;
  };
  auto a = std::make_shared<Args>();
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Measure the device's copy bandwidth (cached per device; run uses it)");
  calibrate->add_flag("--force", a->force, "Measure again even if the cache holds a result");
  calibrate->add_option("-o,--output", a->output, "Also write the calibration JSON here")
      ->check(non_empty());
  return {calibrate, [a] {
            check_outputs({{"--output", a->output}}, {});
            open_device();
            const DeviceDetails details = device_details();
            const CalibrationResult r = load_or_calibrate(details, a->force);
            print_calibration(r);
            if (!a->output.empty())
              write_file_atomic(a->output, calibration_to_json(r.calibration));
            return int{kOk};
          }};
}

}  // namespace kvbench::cli
