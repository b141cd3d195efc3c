// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps.
// main parses the command line, runs one subcommand (src/cli/) and turns every failure into one
// line on stderr and an exit code of the one table every subcommand shares (cli/exit_codes.hpp).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/result_csv.hpp"
#include "core/sweep.hpp"
#include "kvbench_version.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/runner.hpp"

using namespace kvbench;
using namespace kvbench::cli;

int main(int argc, char** argv) {
  CLI::App app{"kvbench: validate and benchmark KV-cache write kernels"};
  app.set_version_flag("--version", std::string("kvbench ") + kVersion + " (git " + kGitSha +
                                        (kGitDirty ? "+dirty" : "") + ")");
  app.require_subcommand(1);

  RunArgs run_args;
  GateFlags& gate_flags = run_args.gate;
  Overrides& overrides = run_args.overrides;
  std::string config_path, output, format = "text", current;
  // Gate flags, on `run` (after --baseline) and on `compare`.
  auto add_gate_flags = [&gate_flags](CLI::App* cmd, CLI::Option* needs) {
    auto* t = cmd->add_option("--threshold", gate_flags.threshold,
                              "Slower/faster only beyond this change, in percent (default 5)");
    auto* j = cmd->add_option("--junit", gate_flags.junit, "Also write a JUnit XML report here")
                  ->check(non_empty());
    auto* d = cmd->add_flag("--allow-device-mismatch", gate_flags.allow_device_mismatch,
                            "Compare rows measured on different devices");
    if (needs) {
      t->needs(needs);
      j->needs(needs);
      d->needs(needs);
    }
  };

  CLI::App* run = app.add_subcommand("run", "Validate every case of CONFIG, time those that pass, write a CSV");
  run->add_option("config", run_args.config_path, "YAML sweep file")->required();
  run->add_option("-o,--output", run_args.output,
                  "CSV to write (default: results/<config name>.csv)")
      ->check(non_empty());
  std::string seed_text;
  run->add_option("--seed", seed_text, "Input seed (overrides settings.seed), 0 to 2^64-1");
  run->add_option("--max-cases", run_args.max_cases,
                  "Refuse a config expanding to more cases than this (default 100000)")
      ->transform(integer_in(1, UINT64_MAX));
  run->add_option("--case", run_args.cases,
                  "Run only these cases (numbers as `kvbench list` prints them)")
      ->transform(integer_in(0, SIZE_MAX));
  add_timing_flags(run, overrides);
  add_rotation_flags(run, overrides);
  add_gate_flags(
      run, run->add_option("--baseline", gate_flags.baseline,
                           "After the run, gate its CSV against this one (exit codes of compare)")
               ->check(non_empty()));
  ValidationOptions& validation = run_args.validation;
  run->add_option("--save-tensors", validation.save_tensors_dir,
                  "Write inputs and outputs of failing cases as .npy files under DIR/caseNNNN/")
      ->check(non_empty());
  run->add_flag("--save-tensors-all", validation.save_all, "With --save-tensors: of every validated case")
      ->needs(run->get_option("--save-tensors"));
  run->add_flag("--check-bounds", validation.check_bounds,
                "Check slot ranges on the device before each cache write; report the first bad token");
  run->add_option("--shard", run_args.shard,
                  "Run shard I of N (cases whose index % N == I), or `slurm` (the array task's)")
      ->check(non_empty());
  run->add_option("--devices", run_args.devices,
                  "GPUs to run on, one worker each: all, or numbers like 0,2,5 (default: device 0)")
      ->check(non_empty());
  run->add_flag("--resume", run_args.resume,
                "Keep the rows already in the output and run only the missing cases");
  run->add_option("--case-timeout", run_args.case_timeout_s,
                  "Seconds a case may take before its worker is killed (default 900)")
      ->check(number_in(0, false, 86400));

  // Hidden: the worker `run` starts (docs/workers.md).
  RunArgs worker_args;
  CLI::App* worker = app.add_subcommand("worker", "");
  worker->group("");
  worker->add_option("config", worker_args.config_path)->required();
  worker->add_option("--seed", worker_args.overrides.seed);
  worker->add_option("--max-cases", worker_args.max_cases);
  add_timing_flags(worker, worker_args.overrides);
  add_rotation_flags(worker, worker_args.overrides);
  worker->add_option("--save-tensors", worker_args.validation.save_tensors_dir);
  worker->add_flag("--save-tensors-all", worker_args.validation.save_all);
  worker->add_flag("--check-bounds", worker_args.validation.check_bounds);
  bool skip_floor = false;
  worker->add_flag("--skip-floor", skip_floor);

  std::vector<std::string> merge_inputs;
  std::string merge_config;
  bool allow_missing = false;
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge the CSVs of a sharded run (--shard) into OUT, with one sidecar");
  merge->add_option("output", output, "Merged CSV to write (and OUT.json)")->required();
  merge->add_option("shards", merge_inputs, "Shard CSVs, each with its sidecar")->required();
  merge->add_flag("--allow-missing", allow_missing, "Exit 0 even if some cases are in no shard");
  merge
      ->add_option("--config", merge_config,
                   "The config the shards ran (default: the path their sidecars name)")
      ->check(non_empty());

  CLI::App* compare = app.add_subcommand(
      "compare", "Gate CURRENT against BASELINE: verdict per case, markdown table, exit code");
  compare->add_option("baseline", gate_flags.baseline, "Baseline result CSV")->required();
  compare->add_option("current", current, "Current result CSV")->required();
  add_gate_flags(compare, nullptr);

  bool force = false;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Measure the device's copy bandwidth (cached per device; run uses it)");
  calibrate->add_flag("--force", force, "Measure again even if the cache holds a result");
  calibrate->add_option("-o,--output", output, "Also write the calibration JSON here")
      ->check(non_empty());

  std::vector<double> mib = {4, 16, 28, 128};
  CLI::App* study = app.add_subcommand(
      "flush-study", "Compare L2 flush methods on a copy kernel (docs/measurement.md)");
  study->add_option("--mib", mib, "Buffer sizes in MiB (source; the destination is as large)")
      ->check(number_in(0, false, 65536));
  add_timing_flags(study, overrides);

  std::string bounds_input, bounds_variant;
  std::int64_t max_tokens = std::int64_t{1} << 40;
  CLI::App* bounds = app.add_subcommand(
      "bounds", "Time the fastest plain kernels moving each case's bytes to its places (its bound)");
  bounds->add_option("results", bounds_input, "Result CSV of `kvbench run`")->required();
  bounds->add_option("-o,--output", output, "CSV to write")->required()->check(non_empty());
  bounds
      ->add_option("--max-tokens", max_tokens,
                   "Only cases with num_tokens up to this (default: all)")
      ->transform(integer_in(1, std::uint64_t{1} << 40));
  bounds->add_option("--variant", bounds_variant, "Only rows of this variant (e.g. optimized)")
      ->check(non_empty());
  bounds->add_option("--seed", seed_text,
                     "The run's input seed, which gives each case's slots (settings.seed; default 1)");
  add_timing_flags(bounds, overrides);

  ListPlan list_plan;
  CLI::App* list = app.add_subcommand(
      "list", "Print the cases CONFIG expands to (with --plan, each case's launch plan)");
  list->add_option("config", config_path, "YAML sweep file")->required();
  list->add_option("--format", format, "text or csv")->check(CLI::IsMember({"text", "csv"}));
  std::uint64_t list_max_cases = kDefaultMaxCases;
  list->add_option("--max-cases", list_max_cases,
                   "Refuse a config expanding to more cases than this (default 100000)")
      ->transform(integer_in(1, UINT64_MAX));
  CLI::Option* plan_flag =
      list->add_flag("--plan", list_plan.show, "Print each case's launch plan (docs/kernels.md)");
  list->add_option("--device-profile", list_plan.device_profile,
                   "Plan for this device instead of the real one: h200 or h100 (no GPU needed)")
      ->needs(plan_flag)
      ->check(non_empty());
  std::string list_shard;
  list->add_option("--shard", list_shard, "Only shard I of N (I/N), or `slurm`; numbers unchanged")
      ->check(non_empty());

  bool case_key = false;
  CLI::App* schema = app.add_subcommand(
      "schema", "Print the result CSV's header line (for scripts that write rows of their own)");
  schema->add_flag("--case-key", case_key, "Only the columns that name a case (the gate's key)");

  // CLI11 would say "A subcommand is required" for a misspelt one; name it and the choices.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "kvbench: unknown subcommand '%s' (expected one of %s)\n", argv[1],
                   names.c_str());
      return kBadInput;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "kvbench: %s (see --help)\n", e.what());
    return kBadInput;
  }

  try {
    if (compare->parsed()) return cmd_compare(current, gate_flags);
    if (schema->parsed()) return cmd_schema(case_key);
    if (list->parsed()) return cmd_list(config_path, format, list_plan, list_shard, list_max_cases);
    if (worker->parsed()) return cmd_worker(worker_args, skip_floor);
    if (merge->parsed()) return cmd_merge(output, merge_inputs, allow_missing, merge_config);
    if (calibrate->parsed()) return cmd_calibrate(force, output);
    if (study->parsed()) return cmd_flush_study(mib, overrides);
    if (!seed_text.empty()) overrides.seed = parse_seed_flag(seed_text);
    if (bounds->parsed()) return cmd_bounds(bounds_input, output, max_tokens, bounds_variant, overrides);
    return cmd_run(run_args);
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kDevice;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "kvbench: CUDA error: %s\n", e.what());
    return kDevice;
  } catch (const std::exception& e) {  // configs, flags, input files, outputs
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return kBadInput;
  }
}
