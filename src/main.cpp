// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps.
// main owns the CLI and turns every failure into one line on stderr and a documented exit code.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/csv.hpp"
#include "core/gate.hpp"
#include "core/metadata.hpp"
#include "core/progress.hpp"
#include "core/sweep.hpp"
#include "kvbench_version.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device_info.hpp"
#include "runtime/flush_study.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"

namespace {

// Exit codes (README.md, "Exit codes").
enum Exit : int {
  kOk = 0,
  kCaseFailed = 1,   // a case was incorrect, rejected or failed
  kUsage = 2,        // bad flag or config
  kIo = 3,           // cannot write results
  kCuda = 4,         // no CUDA device, or the device failed
};

using namespace kvbench;

struct Overrides {
  std::optional<std::uint64_t> seed;
  std::optional<std::string> mode, l2_flush;
  std::optional<int> warmup, min_samples, launches_per_sample;
  std::optional<double> min_time_s, target_noise, timeout_s;
};

void apply(const Overrides& o, RunSettings& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.mode) s.mode = from_string<TimingMode>(*o.mode);
  if (o.l2_flush) s.l2_flush = from_string<L2Flush>(*o.l2_flush);
  if (o.warmup) s.warmup = *o.warmup;
  if (o.min_samples) s.min_samples = *o.min_samples;
  if (o.launches_per_sample) s.launches_per_sample = *o.launches_per_sample;
  if (o.min_time_s) s.min_time_s = *o.min_time_s;
  if (o.target_noise) s.target_noise = *o.target_noise;
  if (o.timeout_s) s.timeout_s = *o.timeout_s;
}

// The regression gate's flags, shared by `compare` and `run --baseline`.
struct GateFlags {
  std::string baseline;
  std::string threshold = "5";
  std::string junit;
  bool allow_device_mismatch = false;
};

// "5" and "5%" both mean 5 percent.
double parse_threshold(std::string text) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  const double pct = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(pct >= 0 && pct < 1000))
    throw std::invalid_argument("--threshold: '" + text + "' is not a percentage in [0, 1000)");
  return pct / 100.0;
}

// Gates `current` against `baseline` (already read): markdown on stdout, JUnit if asked, one
// line on stderr when it fails. Returns the gate's exit code; throws on bad input.
int gate(const ResultTable& baseline, const std::string& current_path, const GateFlags& flags) {
  const GateOptions opt{parse_threshold(flags.threshold), flags.allow_device_mismatch};
  const GateReport report = run_gate(baseline, read_results(current_path), opt);
  std::cout << markdown_report(report) << std::flush;
  if (!flags.junit.empty()) {
    std::ofstream out(flags.junit, std::ios::trunc);
    out << junit_report(report);
    out.close();
    if (!out) throw std::runtime_error(flags.junit + ": cannot write the JUnit report");
  }
  const int code = report.exit_code();
  if (code != kGatePass)
    std::fprintf(stderr, "kvbench compare: %s%s\n", report.summary().c_str(),
                 report.board_note.empty() ? "" : " (other board than the baseline's)");
  return code;
}

// `compare` maps every bad input (flag, file, schema, device, duplicates) to exit 3.
int cmd_compare(const std::string& current_path, const GateFlags& flags) {
  try {
    parse_threshold(flags.threshold);  // before reading anything
    return gate(read_results(flags.baseline), current_path, flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kGateUsage;
  }
}

// A number in (lo, hi], or [lo, hi] when `lo_inclusive`; CLI11 prefixes the flag's name.
CLI::Validator number_in(double lo, bool lo_inclusive, double hi) {
  std::ostringstream range;
  range << (lo_inclusive ? "[" : "(") << lo << ", " << hi << "]";
  const std::string text = range.str();
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || value.empty()) return "expected a number, got '" + value + "'";
        const bool ok = (lo_inclusive ? v >= lo : v > lo) && v <= hi;  // false for NaN
        return ok ? std::string() : "expected a number in " + text + ", got " + value;
      },
      "NUMBER in " + text);
}

// The timing flags shared by `run` and `flush-study`; each is checked here so that a nonsense
// value is refused with the flag named (exit 2), as the YAML keys are.
void add_timing_flags(CLI::App* cmd, Overrides& o) {
  const auto names = [](const auto& values) {
    std::vector<std::string> v;
    for (auto x : values) v.emplace_back(to_string(x));
    return v;
  };
  cmd->add_option("--mode", o.mode, "Timing mode (settings.mode)")
      ->check(CLI::IsMember(names(all_values<TimingMode>())));
  cmd->add_option("--l2-flush", o.l2_flush, "How cold mode empties L2 (settings.l2_flush)")
      ->check(CLI::IsMember(names(all_values<L2Flush>())));
  cmd->add_option("--warmup", o.warmup, "Untimed samples before sampling (settings.warmup)")
      ->check(CLI::Range(1, kMaxWarmup));
  cmd->add_option("--min-samples", o.min_samples, "Timed samples, at least (settings.min_samples)")
      ->check(CLI::Range(1, kMaxMinSamples));
  cmd->add_option("--min-time", o.min_time_s,
                  "Seconds of timed windows, at least (settings.min_time_s)")
      ->check(number_in(0, true, kMaxTimeoutS));
  cmd->add_option("--target-noise", o.target_noise,
                  "Stop once the median's 95% CI is within this fraction (settings.target_noise)")
      ->check(number_in(0, false, 1));
  cmd->add_option("--timeout", o.timeout_s, "Wall-clock seconds of sampling per case, at most (settings.timeout_s)")
      ->check(number_in(0, false, kMaxTimeoutS));
  cmd->add_option("--launches-per-sample", o.launches_per_sample,
                  "Launches per timed window in hot and graph modes (settings.launches_per_sample)")
      ->check(CLI::Range(1, kMaxLaunchesPerSample));
}

// Writes `text` to `path` through a temporary file and a rename, so readers never see half.
void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path + ": cannot write: " + ec.message());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

void print_calibration(const CalibrationResult& r) {
  const Calibration& c = r.calibration;
  std::printf("calibration (%s %s): copy %.0f GB/s (cudaMemcpyAsync %.0f, copy kernel %.0f; "
              "%.0f MiB buffers, read + write counted), theoretical %.0f GB/s (%.0f MHz x %d bit "
              "x 2); %s %s\n",
              c.device.c_str(), c.measured_at.c_str(), c.measured_peak_gbps, c.memcpy_gbps,
              c.copy_kernel_gbps, c.buffer_bytes / (1 << 20), c.theoretical_peak_gbps,
              c.memory_clock_mhz, c.bus_width_bits, r.measured ? "measured, cached in" : "cached in",
              r.path.c_str());
}

// The terminal's progress line on stderr; inactive (silent) when stderr is not a terminal.
class Progress {
 public:
  explicit Progress(std::size_t total)
      : total_(total), active_(isatty(STDERR_FILENO) == 1), t0_(std::chrono::steady_clock::now()) {}
  void show(std::size_t done) {
    if (!active_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    std::fprintf(stderr, "\r\033[K%s", progress_line(done, total_, s).c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (active_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  std::size_t total_;
  bool active_;
  std::chrono::steady_clock::time_point t0_;
};

std::string default_output(const std::string& config) {
  return (std::filesystem::path("results") / std::filesystem::path(config).stem()).string() + ".csv";
}

int cmd_list(const std::string& config_path, const std::string& format) {
  const Config config = load_config(config_path);
  if (format == "csv") {
    // The case columns of the result CSV, so scripts can run the same cases elsewhere.
    std::cout << "case," << join_csv(case_columns()) << '\n';
    for (std::size_t i = 0; i < config.cases.size(); ++i)
      std::cout << i << ',' << join_csv(case_fields(config.cases[i])) << '\n';
  } else {
    for (std::size_t i = 0; i < config.cases.size(); ++i)
      std::cout << i << ' ' << describe(config.cases[i]) << '\n';
  }
  return kOk;
}

int cmd_run(const std::string& config_path, std::string output, const Overrides& overrides,
            const GateFlags& gate_flags, ValidationOptions validation,
            const std::vector<std::size_t>& selected) {
  Config config = load_config(config_path);
  apply(overrides, config.settings);
  if (output.empty()) output = default_output(config_path);
  // With --baseline, a bad baseline or threshold is reported before any GPU time is spent.
  std::optional<ResultTable> baseline;
  if (!gate_flags.baseline.empty()) {
    try {
      parse_threshold(gate_flags.threshold);
      baseline = read_results(gate_flags.baseline);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kvbench: %s\n", e.what());
      return kGateUsage;
    }
  }
  std::vector<std::size_t> indices = selected;
  for (std::size_t i : indices)
    if (i >= config.cases.size())
      throw std::invalid_argument("--case " + std::to_string(i) + ": out of range (" + config_path +
                                  " has " + std::to_string(config.cases.size()) +
                                  " cases, numbered from 0 by `kvbench list`)");
  if (indices.empty())
    for (std::size_t i = 0; i < config.cases.size(); ++i) indices.push_back(i);
  const RunSettings& settings = config.settings;

  const DeviceInfo device = open_device();
  const DeviceDetails details = device_details();
  const std::filesystem::path out_path(output);
  if (out_path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(out_path.parent_path(), ec);
  }
  CsvWriter csv(output);
  const std::string sidecar = output + ".json";
  std::fprintf(stderr, "kvbench %s: %zu cases on %s, mode %s, writing %s and %s\n", kVersion,
               indices.size(), device.name.c_str(), std::string(to_string(settings.mode)).c_str(),
               output.c_str(), sidecar.c_str());

  RunMetadata meta;
  meta.kvbench_version = kVersion;
  meta.git_sha = kGitSha;
  meta.git_dirty = kGitDirty;
  meta.host = host_name();
  meta.started_at = utc_now();
  meta.config_path = config_path;
  meta.config_fnv1a64 = fnv1a64_hex(read_file(config_path));
  meta.csv_path = output;
  meta.settings = settings;
  meta.device = details;
  meta.cases = indices.size();
  if (!selected.empty()) meta.selected_cases = selected;

  // The floor before the calibration: measured after one in the same process, the graph-mode
  // floor read 0.94 µs where it reads 0.73 µs otherwise on one H200 (docs/measurement.md).
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

  int failed = 0;
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
    const bool bad = row.status == Status::incorrect || row.status == Status::failed ||
                     row.status == Status::rejected;
    failed += bad;
    progress.clear();
    if (row.timed)
      std::printf("[%zu/%zu] %-9s %10.3f us %8.1f GB/s %5.1f%% %s %s\n", k + 1, indices.size(),
                  "passed", row.stats.median_us, row.gbps, row.pct_of_measured_peak,
                  row.converged ? "  " : "~ ", describe(row.c).c_str());
    else
      std::printf("[%zu/%zu] %-9s %s: %s\n", k + 1, indices.size(),
                  std::string(to_string(row.status)).c_str(), describe(row.c).c_str(),
                  row.reason.c_str());
    std::fflush(stdout);
    if (row.clock_low)
      std::fprintf(stderr, "kvbench: warning: case %zu ran at %.0f MHz, below %.0f%% of the %.0f MHz "
                   "maximum (throttled?)\n", indices[k], row.sm_clock_mhz, 100 * kClockLowFraction,
                   details.max_sm_clock_mhz);
    if (row.status == Status::failed) ensure_device_usable();
    meta.cases_done = k + 1;
    meta.cases_failed = static_cast<std::size_t>(failed);
  }
  progress.clear();
  meta.finished_at = utc_now();
  meta.blocking_kernel_timed_out = blocking_kernel_timed_out();
  write_file_atomic(sidecar, metadata_to_json(meta));
  std::printf("%zu cases, %zu passed or not supported, %d failed; results in %s (~: noise target "
              "not met before the timeout)\n",
              indices.size(), indices.size() - static_cast<std::size_t>(failed), failed,
              output.c_str());
  if (baseline) {
    try {
      return gate(*baseline, output, gate_flags);  // the gate's verdict replaces the run's
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kvbench: %s\n", e.what());
      return kGateUsage;
    }
  }
  return failed ? kCaseFailed : kOk;
}

int cmd_calibrate(bool force, const std::string& output) {
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

// Bad input in RESULTS (unreadable, not a result CSV, a timed row without its bytes) is a usage
// error (2), as a bad config is; a result that cannot be written is 3.
int cmd_bounds(const std::string& results_path, const std::string& output,
               std::int64_t max_tokens, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  ResultTable results;
  try {
    results = read_results(results_path);
    bound_cases(results, max_tokens);  // refuse bad rows before touching the GPU
  } catch (const ResultCsvError& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kUsage;
  }
  open_device();
  const std::vector<BoundRow> rows =
      measure_bounds(results, max_tokens, s, [](std::size_t done, std::size_t total) {
        std::fprintf(stderr, "\rkvbench bounds: %zu/%zu byte splits timed", done, total);
        if (done == total) std::fprintf(stderr, "\n");
      });
  const DeviceDetails d = device_details();
  std::string text = bounds_header() + "\n";
  for (BoundRow r : rows) {
    r.device = d.name;
    r.device_uuid = d.uuid;
    r.git_sha = std::string(kGitSha) + (kGitDirty ? "+dirty" : "");
    text += bounds_line(r) + "\n";
  }
  write_file_atomic(output, text);
  std::printf("%s: %zu rows of num_tokens <= %lld from %s\n", output.c_str(), rows.size(),
              static_cast<long long>(max_tokens), results_path.c_str());
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvbench: validate and benchmark KV-cache write kernels"};
  app.set_version_flag("--version", std::string("kvbench ") + kVersion + " (git " + kGitSha +
                                        (kGitDirty ? "+dirty" : "") + ")");
  app.require_subcommand(1);

  std::string config_path, output, format = "text", current;
  Overrides overrides;
  GateFlags gate_flags;
  // Gate flags, on `run` (after --baseline) and on `compare`.
  auto add_gate_flags = [&gate_flags](CLI::App* cmd, CLI::Option* needs) {
    auto* t = cmd->add_option("--threshold", gate_flags.threshold,
                              "Slower/faster only beyond this change, in percent (default 5)");
    auto* j = cmd->add_option("--junit", gate_flags.junit, "Also write a JUnit XML report here");
    auto* d = cmd->add_flag("--allow-device-mismatch", gate_flags.allow_device_mismatch,
                            "Compare rows measured on different devices");
    if (needs) {
      t->needs(needs);
      j->needs(needs);
      d->needs(needs);
    }
  };
  ValidationOptions validation;
  bool save_all = false;

  CLI::App* run = app.add_subcommand("run", "Validate every case of CONFIG, time those that pass, write a CSV");
  run->add_option("config", config_path, "YAML sweep file")->required();
  run->add_option("-o,--output", output, "CSV to write (default: results/<config name>.csv)");
  run->add_option("--seed", overrides.seed, "Input seed (overrides settings.seed)");
  std::vector<std::size_t> cases;
  run->add_option("--case", cases, "Run only these cases (numbers as `kvbench list` prints them)");
  add_timing_flags(run, overrides);

  add_gate_flags(run, run->add_option("--baseline", gate_flags.baseline,
                                      "After the run, gate its CSV against this one (exit codes of compare)"));

  CLI::App* compare = app.add_subcommand(
      "compare", "Gate CURRENT against BASELINE: verdict per case, markdown table, exit code");
  compare->add_option("baseline", gate_flags.baseline, "Baseline result CSV")->required();
  compare->add_option("current", current, "Current result CSV")->required();
  add_gate_flags(compare, nullptr);
  run->add_option("--save-tensors", validation.save_tensors_dir,
                  "Write inputs and outputs of failing cases as .npy files under DIR/caseNNNN/");
  run->add_flag("--save-tensors-all", save_all, "With --save-tensors: of every validated case")
      ->needs(run->get_option("--save-tensors"));
  run->add_flag("--check-bounds", validation.check_bounds,
                "Check slot ranges on the device before each cache write; report the first bad token");

  bool force = false;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Measure the device's copy bandwidth (cached per device; run uses it)");
  calibrate->add_flag("--force", force, "Measure again even if the cache holds a result");
  calibrate->add_option("-o,--output", output, "Also write the calibration JSON here");

  std::vector<double> mib = {4, 16, 28, 128};
  CLI::App* study = app.add_subcommand(
      "flush-study", "Compare L2 flush methods on a copy kernel (docs/measurement.md)");
  study->add_option("--mib", mib, "Buffer sizes in MiB (source; the destination is as large)")
      ->check(number_in(0, false, 65536));
  add_timing_flags(study, overrides);

  std::string bounds_input;
  std::int64_t max_tokens = 128;
  CLI::App* bounds = app.add_subcommand(
      "bounds",
      "Time the fastest plain write and move of each small case's bytes (docs/targets.md)");
  bounds->add_option("results", bounds_input, "Result CSV of `kvbench run`")->required();
  bounds->add_option("-o,--output", output, "CSV to write")->required();
  bounds->add_option("--max-tokens", max_tokens, "Cases with num_tokens up to this (default 128)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  add_timing_flags(bounds, overrides);

  CLI::App* list = app.add_subcommand("list", "Print the cases CONFIG expands to; touches no GPU");
  list->add_option("config", config_path, "YAML sweep file")->required();
  list->add_option("--format", format, "text or csv")->check(CLI::IsMember({"text", "csv"}));

  CLI::App* schema = app.add_subcommand(
      "schema", "Print the result CSV's header line (for scripts that write rows of their own)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "kvbench: %s (see --help)\n", e.what());
    const bool comparing = argc > 1 && std::string(argv[1]) == "compare";
    return comparing ? int{kGateUsage} : int{kUsage};  // compare documents 3 for usage errors
  }

  if (compare->parsed()) return cmd_compare(current, gate_flags);
  if (schema->parsed()) {
    std::cout << csv_header() << '\n';
    return kOk;
  }
  try {
    if (list->parsed()) return cmd_list(config_path, format);
    validation.save_all = save_all;
    if (calibrate->parsed()) return cmd_calibrate(force, output);
    if (study->parsed()) return cmd_flush_study(mib, overrides);
    if (bounds->parsed()) return cmd_bounds(bounds_input, output, max_tokens, overrides);
    return cmd_run(config_path, output, overrides, gate_flags, validation, cases);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kUsage;
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kCuda;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "kvbench: CUDA error: %s\n", e.what());
    return kCuda;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kIo;
  }
}
