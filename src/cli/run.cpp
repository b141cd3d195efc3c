// `kvbench run`: every case of a config validated, the passing ones timed, one CSV row each,
// the sidecar JSON written before the first case and again at the end; with --baseline, the gate.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/report.hpp"
#include "core/csv.hpp"
#include "core/file_io.hpp"
#include "core/metadata.hpp"
#include "core/progress.hpp"
#include "core/sweep.hpp"
#include "kvbench_version.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"

namespace kvbench::cli {
namespace {

std::string default_output(const std::string& config) {
  return (std::filesystem::path("results") / std::filesystem::path(config).stem()).string() + ".csv";
}

// The cases to run: those of --case (checked against the config), else all of them.
std::vector<std::size_t> selected_cases(const Config& config, const std::string& config_path,
                                        const std::vector<std::size_t>& selected) {
  for (std::size_t i : selected)
    if (i >= config.cases.size())
      throw std::invalid_argument("--case " + std::to_string(i) + ": out of range (" + config_path +
                                  " has " + std::to_string(config.cases.size()) +
                                  " cases, numbered from 0 by `kvbench list`)");
  if (!selected.empty()) return selected;
  std::vector<std::size_t> all(config.cases.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

// One line per finished case on stdout.
void print_row(std::size_t k, std::size_t n, const Row& row) {
  if (row.timed)
    std::printf("[%zu/%zu] %-9s %10.3f us %8.1f GB/s %5.1f%% %s %s\n", k + 1, n, "passed",
                row.stats.median_us, row.gbps, row.pct_of_measured_peak,
                row.converged ? "  " : "~ ", describe(row.c).c_str());
  else
    std::printf("[%zu/%zu] %-9s %s: %s\n", k + 1, n, std::string(to_string(row.status)).c_str(),
                describe(row.c).c_str(), row.reason.c_str());
  std::fflush(stdout);
}

bool is_failure(Status s) {
  return s == Status::incorrect || s == Status::failed || s == Status::rejected;
}

}  // namespace

int cmd_run(RunArgs args) {
  Config config = load_config(args.config_path, args.max_cases);
  apply(args.overrides, config.settings);
  if (args.output.empty()) args.output = default_output(args.config_path);
  // With --baseline, everything checkable about the gate is checked before any GPU time is
  // spent: the threshold, the baseline (readable, rows, a timed row, no duplicate keys) and
  // the JUnit path (its folder exists, it is not an input).
  std::optional<ResultTable> baseline;
  if (!args.gate.baseline.empty()) {
    const GateOptions opt{parse_threshold(args.gate.threshold), args.gate.allow_device_mismatch};
    check_output_path("--junit", args.gate.junit,
                      {args.gate.baseline, args.output, args.config_path});
    std::error_code ec;
    if (args.output == args.gate.baseline ||
        std::filesystem::equivalent(args.output, args.gate.baseline, ec))
      throw std::invalid_argument("--output " + args.output +
                                  ": is also the baseline; it would be overwritten");
    baseline = read_results(args.gate.baseline);
    check_baseline(*baseline, opt);
  }
  const std::vector<std::size_t> indices =
      selected_cases(config, args.config_path, args.cases);
  const RunSettings& settings = config.settings;

  const DeviceInfo device = open_device();
  const DeviceDetails details = device_details();
  const std::filesystem::path out_path(args.output);
  if (out_path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(out_path.parent_path(), ec);
  }
  CsvWriter csv(args.output);
  const std::string sidecar = args.output + ".json";
  std::fprintf(stderr, "kvbench %s: %zu cases on %s, mode %s, writing %s and %s\n", kVersion,
               indices.size(), device.name.c_str(), std::string(to_string(settings.mode)).c_str(),
               args.output.c_str(), sidecar.c_str());

  RunMetadata meta;
  meta.kvbench_version = kVersion;
  meta.git_sha = kGitSha;
  meta.git_dirty = kGitDirty;
  meta.host = host_name();
  meta.started_at = utc_now();
  meta.config_path = args.config_path;
  meta.config_fnv1a64 = fnv1a64_hex(read_file(args.config_path));
  meta.csv_path = args.output;
  meta.settings = settings;
  meta.device = details;
  meta.cases = indices.size();
  if (!args.cases.empty()) meta.selected_cases = args.cases;

  // The floor before the calibration: measured after one in the same process, the graph-mode
  // floor reads higher (docs/measurement.md, "Launch floor").
  for (const LaunchFloor& f : measure_launch_floor(settings)) {
    meta.launch_floor.push_back({f.mode, f.m.stats, f.m.launches_per_sample, f.m.sm_clock_mhz});
    std::printf("launch floor (empty kernel), %-5s %8.3f us  (p10 %.3f, p90 %.3f, %d samples, "
                "SM clock %.0f MHz)\n",
                std::string(to_string(f.mode)).c_str(), f.m.stats.median_us, f.m.stats.p10_us,
                f.m.stats.p90_us, f.m.stats.samples, f.m.sm_clock_mhz);
  }
  const CalibrationResult cal = load_or_calibrate(details, false);
  meta.calibration = cal.calibration;
  print_calibration(cal);
  std::fflush(stdout);
  write_file_atomic(sidecar, metadata_to_json(meta));

  std::size_t failed = 0;
  ValidationOptions validation = args.validation;
  Progress progress(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    progress.show(k);
    const Case& c = config.cases[indices[k]];
    char tag[32];
    std::snprintf(tag, sizeof tag, "case%04zu", indices[k]);  // the case's index in `kvbench list`
    validation.case_tag = tag;
    Row row = run_case(c, settings, device, validation);
    add_derived(row, cal.calibration.measured_peak_gbps, cal.calibration.theoretical_peak_gbps,
                details.max_sm_clock_mhz);
    csv.write(row);
    failed += is_failure(row.status);
    progress.clear();
    print_row(k, indices.size(), row);
    if (row.clock_low)
      std::fprintf(stderr, "kvbench: warning: case %zu ran at %.0f MHz, below %.0f%% of the %.0f MHz "
                   "maximum (throttled?)\n", indices[k], row.sm_clock_mhz, 100 * kClockLowFraction,
                   details.max_sm_clock_mhz);
    if (row.status == Status::failed) ensure_device_usable();
    meta.cases_done = k + 1;
    meta.cases_failed = failed;
  }
  progress.clear();
  meta.finished_at = utc_now();
  meta.blocking_kernel_timed_out = blocking_kernel_timed_out();
  write_file_atomic(sidecar, metadata_to_json(meta));
  std::printf("%zu cases, %zu passed or not supported, %zu failed; results in %s (~: noise target "
              "not met before the timeout)\n",
              indices.size(), indices.size() - failed, failed, args.output.c_str());
  if (baseline) return gate(*baseline, args.output, args.gate);  // the gate's verdict replaces the run's
  return failed ? kFailed : kOk;
}

}  // namespace kvbench::cli
