// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps.
// main owns the CLI and turns every failure into one line on stderr and a documented exit code.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/csv.hpp"
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

int cmd_run(const std::string& config_path, std::string output, const Overrides& overrides) {
  Config config = load_config(config_path);
  apply(overrides, config.settings);
  if (output.empty()) output = default_output(config_path);

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
    const Row row = run_case(config.cases[i], config.settings, device);
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
  return failed ? kCaseFailed : kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvbench: validate and benchmark KV-cache write kernels"};
  app.set_version_flag("--version", std::string("kvbench ") + kVersion + " (git " + kGitSha + ")");
  app.require_subcommand(1);

  std::string config_path, output, format = "text";
  Overrides overrides;

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

  CLI::App* list = app.add_subcommand("list", "Print the cases CONFIG expands to; touches no GPU");
  list->add_option("config", config_path, "YAML sweep file")->required();
  list->add_option("--format", format, "text or csv")->check(CLI::IsMember({"text", "csv"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "kvbench: %s (see --help)\n", e.what());
    return kUsage;
  }

  try {
    if (list->parsed()) return cmd_list(config_path, format);
    return cmd_run(config_path, output, overrides);
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
