// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps.
// main owns the CLI and turns every failure into one line on stderr and a documented exit code.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "core/csv.hpp"
#include "core/gate.hpp"
#include "core/sweep.hpp"
#include "kvbench_version.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/runner.hpp"

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
  std::optional<int> warmup, samples, graph_launches;
  std::optional<std::string> mode;
};

void apply(const Overrides& o, RunSettings& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.warmup) s.warmup = *o.warmup;
  if (o.samples) s.samples = *o.samples;
  if (o.graph_launches) s.graph_launches = *o.graph_launches;
  if (o.mode) s.mode = timing_mode_from_string(*o.mode);
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
  if (code != kGatePass) std::fprintf(stderr, "kvbench compare: %s\n", report.summary().c_str());
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
            const GateFlags& gate_flags, ValidationOptions validation) {
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

  const DeviceInfo device = open_device();
  const std::filesystem::path out_path(output);
  if (out_path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(out_path.parent_path(), ec);
  }
  CsvWriter csv(output);
  std::fprintf(stderr, "kvbench %s: %zu cases on %s, mode %s, writing %s\n", kVersion,
               config.cases.size(), device.name.c_str(),
               std::string(to_string(config.settings.mode)).c_str(), output.c_str());

  int failed = 0;
  for (std::size_t i = 0; i < config.cases.size(); ++i) {
    char tag[32];
    std::snprintf(tag, sizeof tag, "case%04zu", i);  // the case's index in `kvbench list`
    validation.case_tag = tag;
    const Row row = run_case(config.cases[i], config.settings, device, validation);
    csv.write(row);
    const bool bad = row.status == Status::incorrect || row.status == Status::failed ||
                     row.status == Status::rejected;
    failed += bad;
    if (row.timed)
      std::printf("[%zu/%zu] %-9s %10.3f us %8.1f GB/s  %s\n", i + 1, config.cases.size(), "passed",
                  row.stats.median_us, row.gbps, describe(row.c).c_str());
    else
      std::printf("[%zu/%zu] %-9s %s: %s\n", i + 1, config.cases.size(),
                  std::string(to_string(row.status)).c_str(), describe(row.c).c_str(),
                  row.reason.c_str());
    std::fflush(stdout);
    if (row.status == Status::failed) ensure_device_usable();
  }
  std::printf("%zu cases, %zu passed or not supported, %d failed; results in %s\n",
              config.cases.size(), config.cases.size() - static_cast<std::size_t>(failed), failed,
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvbench: validate and benchmark KV-cache write kernels"};
  app.set_version_flag("--version", std::string("kvbench ") + kVersion + " (git " + kGitSha + ")");
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
  run->add_option("--warmup", overrides.warmup, "Untimed launches before sampling")
      ->check(CLI::PositiveNumber);
  run->add_option("--samples", overrides.samples, "Timed samples per case")->check(CLI::PositiveNumber);
  run->add_option("--graph-launches", overrides.graph_launches, "Launches per CUDA graph (graph mode)")
      ->check(CLI::PositiveNumber);
  run->add_option("--mode", overrides.mode, "Timing mode")->check(CLI::IsMember({"graph", "hot"}));
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
    return cmd_run(config_path, output, overrides, gate_flags, validation);
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
