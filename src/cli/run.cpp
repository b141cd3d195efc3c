// `kvbench run`: every case of a config validated, the passing ones timed, one CSV row each,
// the sidecar JSON written with the first row and again at the end; with --baseline, the gate.
// The cases run in worker processes (cli/supervisor.hpp); only this process writes the CSV and
// the sidecar, so a case that kills its worker costs one `failed` row, not the sweep.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "cli/plugins.hpp"
#include "cli/report.hpp"
#include "cli/supervisor.hpp"
#include "cli/worker_setup.hpp"
#include "core/csv.hpp"
#include "core/file_io.hpp"
#include "core/metadata.hpp"
#include "core/operation.hpp"
#include "core/outputs.hpp"
#include "core/progress.hpp"
#include "core/result_csv.hpp"
#include "core/samples_file.hpp"
#include "core/shard.hpp"
#include "core/sidecar.hpp"
#include "core/sweep.hpp"
#include "kvbench_version.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {
namespace {

struct RunArgs {
  std::string config_path;
  std::string output;  // empty: results/<config name>.csv
  std::string seed;    // --seed as typed; empty: settings.seed
  Overrides overrides;
  GateFlags gate;  // gate.baseline empty: no gate
  ValidationOptions validation;
  std::vector<std::size_t> cases;  // empty: every case
  std::string shard;               // --shard I/N or slurm; empty: the whole sweep
  std::string devices;             // --devices all or 0,2,5; empty: one worker, device 0
  bool resume = false;             // --resume: append the cases missing from the output
  double case_timeout_s = 900;     // --case-timeout: a worker silent this long is killed
  std::uint64_t max_cases = kDefaultMaxCases;
  std::vector<std::string> plugins;      // --plugin, in order
  std::string plugins_json;              // what was loaded (cli/plugins.hpp); empty: none
  std::vector<std::string> variants;     // --variants; empty: the config's
  std::int64_t max_tokens = kAllTokens;  // --max-tokens: only cases with num_tokens up to it
  bool save_samples = false;  // --save-samples: OUT.csv.samples.jsonl (core/samples_file.hpp)
};

std::string default_output(const std::string& config) {
  return (std::filesystem::path("results") / std::filesystem::path(config).stem()).string() +
         ".csv";
}

// The cases to run: those of --case (checked against the config), else all of them.
std::vector<std::size_t> selected_cases(const Config& config, const std::string& config_path,
                                        const std::vector<std::size_t>& selected) {
  std::set<std::size_t> seen;
  for (std::size_t i : selected) {
    if (i >= config.cases.size())
      throw std::invalid_argument("--case " + std::to_string(i) + ": out of range (" + config_path +
                                  " has " + std::to_string(config.cases.size()) +
                                  " cases, numbered from 0 by `kvbench list`)");
    if (!seen.insert(i).second)  // one case is one row: a CSV holds no case twice
      throw std::invalid_argument("--case " + std::to_string(i) + ": given twice");
  }
  if (!selected.empty()) return selected;
  std::vector<std::size_t> all(config.cases.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

// One line per finished case on stdout, from the row as the CSV holds it.
void print_row(std::size_t k, std::size_t n, const Case& c, const std::vector<std::string>& f) {
  constexpr std::size_t status = index(Col::status), reason = index(Col::reason),
                        median = index(Col::median_us), gbps = index(Col::gbps),
                        pct = index(Col::pct_of_measured_peak), converged = index(Col::converged),
                        sets = index(Col::buffer_sets);
  auto at = [&](std::size_t i) { return i < f.size() ? f[i] : std::string(); };
  if (!at(median).empty())
    std::printf("[%zu/%zu] %-9s %10.3f us %8.1f GB/s %5.1f%% %s %s%s\n", k, n, at(status).c_str(),
                std::atof(at(median).c_str()), std::atof(at(gbps).c_str()),
                std::atof(at(pct).c_str()), at(converged) == "true" ? "  " : "~ ",
                describe(c).c_str(),
                at(sets).empty() || at(sets) == "1" ? "" : (" (" + at(sets) + " sets)").c_str());
  else
    std::printf("[%zu/%zu] %-9s %s: %s\n", k, n, at(status).c_str(), describe(c).c_str(),
                at(reason).c_str());
  std::fflush(stdout);
}

bool is_failure(const std::string& status) {
  return status == "incorrect" || status == "failed" || status == "rejected";
}

// A row for a case whose worker gave none (it died, hung or faulted).
std::string failed_line(const Case& c, const std::string& reason, const DeviceIdentity& device) {
  Row row;
  row.c = c;
  row.status = Status::failed;
  row.reason = reason;
  row.device = device.name;
  row.device_uuid = device.uuid;
  row.git_sha = kGitSha;
  row.git_dirty = kGitDirty;
  return csv_line(row);
}

// --devices: CUDA_VISIBLE_DEVICES of each worker. Ordinals count the GPUs this process sees:
// through its own CUDA_VISIBLE_DEVICES when that is set (as Slurm sets it).
std::vector<std::string> worker_devices(const std::string& spec) {
  if (spec.empty()) return {""};
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  std::vector<std::string> visible;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream in(env);
    for (std::string item; std::getline(in, item, ',');) visible.push_back(item);
  }
  std::vector<std::size_t> ordinals;
  if (spec == "all") {
    if (count == 0) throw NoDeviceError("no CUDA device: --devices all found none");
    for (int i = 0; i < count; ++i) ordinals.push_back(static_cast<std::size_t>(i));
  } else {
    ordinals = parse_device_list(spec);  // every item read before any device is looked for
    // A stand-in worker (KVBENCH_WORKER, for tests) needs no device here.
    const char* stand_in = std::getenv("KVBENCH_WORKER");
    for (std::size_t d : ordinals)
      if (d >= static_cast<std::size_t>(count) && !(stand_in && *stand_in))
        throw NoDeviceError("--devices " + spec + ": no device " + std::to_string(d) + " (" +
                            std::to_string(count) + " visible)");
  }
  std::vector<std::string> out;
  for (std::size_t d : ordinals) out.push_back(d < visible.size() ? visible[d] : std::to_string(d));
  return out;
}

// The command line of `kvbench worker`: the config and the resolved settings, as one JSON
// object (cli/worker_setup.hpp), the sidecar's settings among them.
std::vector<std::string> worker_args(const std::string& config_path, const RunArgs& a,
                                     const RunSettings& settings) {
  WorkerSetup setup;
  setup.settings = settings;
  setup.max_cases = a.max_cases;
  setup.save_tensors_dir = a.validation.save_tensors_dir;
  setup.save_all = a.validation.save_all;
  setup.check_bounds = a.validation.check_bounds;
  setup.plugins = a.plugins_json;
  setup.variants = a.variants;
  setup.samples = a.save_samples;
  return {"worker", config_path, "--setup", worker_setup_to_json(setup)};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--resume: " + path + ": cannot read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunMetadata new_metadata(const RunArgs& args, const RunSettings& settings, const std::string& shard,
                         const std::string& config_text) {
  RunMetadata meta;
  meta.kvbench_version = kVersion;
  meta.git_sha = kGitSha;
  meta.git_dirty = kGitDirty;
  meta.host = host_name();
  meta.started_at = utc_now();
  meta.config_path = args.config_path;
  meta.config_fnv1a64 = fnv1a64_hex(config_text);
  meta.csv_path = args.output;
  meta.settings = settings;
  meta.selected_cases = args.cases;
  meta.shard = shard;
  meta.plugins = args.plugins_json;
  meta.variants = args.variants;
  return meta;
}

// "" when a worker's row reads back as every reader of the CSV will read it (its values, its
// width) and is of its case; else why, and the case fails with it rather than the CSV holding a
// row that compare, merge and --resume would refuse.
std::string row_problem(const Case& c, const std::string& line) {
  const std::string text = csv_header() + "\n" + line + "\n";
  try {
    parse_results(text, "the worker's row");
    const ResumeRows rows = parse_resume_rows(text, "the worker's row");
    if (rows.rows.size() != 1 || rows.rows[0].key != case_key(c))
      return "the worker sent a row of another case";
  } catch (const ResultCsvError& e) {
    return std::string("the worker sent a malformed row (") + e.what() + ")";
  }
  return "";
}

// The rows --resume keeps are this run's: this build, a GPU model of the resumed sidecar and,
// when timed, this run's mode. A row pasted in from another run would sit
// under a sidecar that does not describe it (merge refuses such a file).
void check_resumed_rows(const ResumeRows& rows, const RunSettings& settings,
                        const std::vector<std::string>& devices, const std::string& csv) {
  std::set<std::string> models;
  for (const std::string& d : devices) models.insert(device_identity(d).name);
  for (const ResumeRow& r : rows.rows) {
    const auto refuse = [&](const std::string& column, const std::string& value,
                            const std::string& expected) {
      throw std::invalid_argument("--resume: " + csv + ":" + std::to_string(r.line) + ": column '" +
                                  column + "' is '" + value + "', this run's is '" + expected +
                                  "' (rows of another run are not kept)");
    };
    if (r.git_sha != kGitSha) refuse("git_sha", r.git_sha, kGitSha);
    if (!r.device.empty() && !models.empty() && !models.count(r.device))
      refuse("device", r.device, *models.begin());
    // A row's context and timer may differ from the settings' (cold where rotation cannot
    // cover L2; events where CUPTI is missing); its mode may not.
    if (r.timed && r.mode != to_string(settings.mode))
      refuse("mode", r.mode, std::string(to_string(settings.mode)));
  }
}

// --resume: checks that `meta` (this run's) agrees with the sidecar of `csv`, drops from
// `indices` the cases whose rows `csv` holds, and carries over the sidecar's devices, start and
// counts. Throws std::invalid_argument naming what differs.
void resume(const Config& config, const std::string& csv, std::vector<std::size_t>& indices,
            RunMetadata& meta) {
  const std::string sidecar = sidecar_path(csv);
  const std::string before = read_text(sidecar);
  if (const std::string why = resume_mismatch(before, metadata_to_json(meta), sidecar);
      !why.empty())
    throw std::invalid_argument("--resume: " + why);
  // The rows already there: each must be a case this run selects, once (core/result_csv.hpp).
  const std::string text = read_text(csv);
  std::vector<std::vector<std::string>> keys;
  for (std::size_t i : indices) keys.push_back(case_key(config.cases[i]));
  std::vector<bool> done(indices.size(), false);
  ResumeRows rows;
  try {
    rows = parse_resume_rows(text, csv);
    for (std::size_t k : match_resume_rows(rows, keys, csv)) done[k] = true;
  } catch (const ResultCsvError& e) {
    throw std::invalid_argument(std::string("--resume: ") + e.what());
  }
  check_resumed_rows(rows, config.settings, sidecar_devices(before, sidecar), csv);
  // A last line without its newline is not a row (keep_bytes ends before it): the file's
  // writer cuts it off when it appends the first new row.
  std::vector<std::size_t> rest;
  for (std::size_t k = 0; k < indices.size(); ++k)
    if (!done[k]) rest.push_back(indices[k]);
  meta.cases = indices.size();
  meta.cases_done = indices.size() - rest.size();
  meta.cases_failed = 0;
  for (const ResumeRow& r : rows.rows) meta.cases_failed += r.failed;
  meta.devices = sidecar_devices(before, sidecar);
  if (const std::string s = sidecar_started_at(before, sidecar); !s.empty()) meta.started_at = s;
  indices = rest;
}

// The config read once: parsed, with the settings the flags override. Its text is hashed for the
// sidecar and handed to the workers, so a FIFO or `<(...)` config works and every worker runs
// what was hashed.
struct LoadedConfig {
  std::string text;
  Config config;
};

LoadedConfig load_run_config(const RunArgs& args) {
  LoadedConfig c{read_config_text(args.config_path), {}};
  c.config = parse_config(c.text, args.config_path, args.max_cases);
  apply(args.overrides, c.config.settings);
  if (!args.variants.empty()) c.config.cases = with_variants(c.config.cases, args.variants);
  return c;
}

// Every output against every input and each other, before anything is read further or written:
// the CSV and its sidecar must be regular files (--resume reads them back). With --baseline,
// everything checkable about the gate is checked before any GPU time is spent: the threshold,
// the baseline (readable, rows, a timed row, no duplicate keys) and the JUnit path.
std::optional<ResultTable> check_outputs_and_baseline(const RunArgs& args) {
  std::vector<InputFile> inputs = {{"the config", args.config_path},
                                   {"the baseline", args.gate.baseline}};
  if (!args.gate.baseline.empty())  // the gate reads its sidecar (the timing context)
    inputs.push_back({"the baseline's sidecar", sidecar_path(args.gate.baseline)});
  for (const std::string& p : args.plugins) inputs.push_back({"--plugin", p});
  for (const plugin::PluginInfo& i : load_plugin_variants(args.plugins).info())
    if (i.in_process) inputs.push_back({"a variant's source", i.path});
  check_outputs({{"--output", args.output, NonRegular::refuse, true},
                 {"--output's sidecar", sidecar_path(args.output), NonRegular::refuse, true},
                 {"--junit", args.gate.junit}},
                inputs);
  if (args.gate.baseline.empty()) return std::nullopt;
  const GateOptions opt{
      parse_threshold(args.gate.threshold), args.gate.allow_device_mismatch,
      parse_threshold(args.gate.other_board_threshold, "--other-board-threshold")};
  ResultTable baseline = read_results(args.gate.baseline);
  check_baseline(baseline, opt);
  return baseline;
}

std::string context_note(Context c) { return " (context " + std::string(to_string(c)) + ")"; }

// The run in progress: the CSV and sidecar it writes, and what it does as workers report.
// Nothing is written before the first row: a run that cannot start (no device, a worker that
// fails, an interrupt first) leaves the CSV, its sidecar and its folder as they were.
class ActiveRun {
 public:
  ActiveRun(const RunArgs& args, const Config& config, RunMetadata meta, bool append,
            std::size_t to_run, std::size_t workers)
      : args_(args),
        config_(config),
        sidecar_(sidecar_path(args.output)),
        meta_(std::move(meta)),
        resumed_(meta_.cases_done),
        failed_(meta_.cases_failed),
        to_run_(to_run),
        csv_(args.output, csv_header(), append ? RowFile::Mode::append : RowFile::Mode::replace),
        samples_(args.output + kSamplesSuffix, samples_header(),
                 append ? RowFile::Mode::append : RowFile::Mode::replace),
        worker_device_(workers),
        progress_(to_run) {
    if (resumed_)
      std::fprintf(stderr, "kvbench: --resume: %zu cases already in %s, %zu to run\n", resumed_,
                   args.output.c_str(), to_run);
  }

  SupervisorEvents events() {
    SupervisorEvents e;
    e.ready = [this](std::size_t w, const std::string& json) { ready(w, json); };
    e.done = [this](const CaseOutcome& o) { done(o); };
    e.note = [this](std::size_t, const std::string& note) {
      if (note == "blocking_kernel_timed_out") meta_.blocking_kernel_timed_out = true;
    };
    return e;
  }

  // A worker that cannot run ends the run with its exit code; the sidecar keeps the counts (left
  // as it was when this run was refused before its first row).
  int fatal(const WorkerFatal& e) {
    progress_.clear();
    if (!refused_) write_sidecar();
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return e.code();
  }

  // The run's end: the sidecar's last state, then the summary line or the interruption's.
  int finish(int signal, const std::optional<ResultTable>& baseline) {
    progress_.clear();
    meta_.finished_at = utc_now();
    meta_.interrupted = signal != 0;
    if (!signal) csv_.commit();  // a run of no cases (an empty shard) still writes its header
    if (!signal && args_.save_samples) samples_.commit();
    write_sidecar();
    const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    if (signal && !csv_.committed()) {
      std::fprintf(stderr, "kvbench: interrupted by %s before the first case ended; %s unchanged\n",
                   name, args_.output.c_str());
      return 128 + signal;
    }
    if (signal) {
      std::fprintf(stderr,
                   "kvbench: interrupted by %s after %zu of %zu cases; rows in %s, "
                   "the rest runs with the same command and --resume\n",
                   name, meta_.cases_done, meta_.cases, args_.output.c_str());
      return 128 + signal;
    }
    std::printf(
        "%zu cases, %zu passed or not supported, %zu failed; results in %s (~: noise target "
        "not met before the timeout)\n",
        meta_.cases, meta_.cases - failed_, failed_, args_.output.c_str());
    if (baseline)
      return gate(*baseline, args_.output, args_.gate);  // the gate's verdict replaces the run's
    return failed_ ? kFailed : kOk;
  }

 private:
  void write_sidecar() {
    if (csv_.committed()) write_file_atomic(sidecar_, metadata_to_json(meta_));
  }

  void ready(std::size_t worker, const std::string& device_json) {
    worker_device_[worker] = device_identity(device_json);
    refuse_other_model(worker_device_[worker]);
    bool known = false;
    for (const std::string& d : meta_.devices)
      known = known || device_identity(d).uuid == worker_device_[worker].uuid;
    if (known) return;
    meta_.devices.push_back(device_json);
    write_sidecar();
    const RunSettings& settings = meta_.settings;
    std::fprintf(
        stderr, "kvbench %s: %zu cases on %s (%s), mode %s, rotate %s%s, writing %s and %s\n",
        kVersion, to_run_, worker_device_[worker].name.c_str(), worker_device_[worker].uuid.c_str(),
        std::string(to_string(settings.mode)).c_str(), rotate_text(settings.rotate).c_str(),
        settings.hot_inputs                         ? " (hot inputs)"
        : settings.context == Context::back_to_back ? ""
                                                    : context_note(settings.context).c_str(),
        args_.output.c_str(), sidecar_.c_str());
  }

  // --resume on another GPU model than the rows already there ran on: one CSV, one model (the
  // gate compares a CSV with a baseline of one model). The devices of the resumed sidecar are
  // the first entries of meta_.devices.
  void refuse_other_model(const DeviceIdentity& d) {
    if (resumed_devices_ == 0) return;
    std::string theirs;
    for (std::size_t i = 0; i < resumed_devices_; ++i) {
      const std::string name = device_identity(meta_.devices[i]).name;
      if (name == d.name) return;
      if (theirs.empty()) theirs = name;
    }
    refused_ = finished_ == 0;
    throw WorkerFatal(kBadInput, "--resume: " + args_.output + "'s rows ran on '" + theirs +
                                     "', this run's device is '" + d.name +
                                     "' (rows of two GPU models are not mixed into one CSV; run "
                                     "without --resume or to another -o)");
  }

  void done(const CaseOutcome& o) {
    const Case& c = config_.cases[o.index];
    std::string failure = o.failure;
    if (!o.csv_line.empty()) failure = row_problem(c, o.csv_line);
    const std::string line = o.csv_line.empty() || !failure.empty()
                                 ? failed_line(c, failure, worker_device_[o.worker])
                                 : o.csv_line;
    const bool first = !csv_.committed();
    csv_.write(line);
    const std::vector<std::string> fields = split_csv(line);
    if (args_.save_samples && failure.empty() && !o.samples_us.empty())
      samples_.write(samples_record(fields, o.samples_us));
    constexpr std::size_t status = index(Col::status);
    failed_ += status < fields.size() && is_failure(fields[status]);
    ++finished_;
    meta_.cases_done = resumed_ + finished_;
    meta_.cases_failed = failed_;
    progress_.clear();
    print_row(resumed_ + finished_, meta_.cases, c, fields);
    progress_.show(finished_);
    // The sidecar's counts, kept current for readers of a run in progress (at most every 2 s).
    const auto now = std::chrono::steady_clock::now();
    if (first || now - last_sidecar_ > std::chrono::seconds(2)) {
      write_sidecar();
      last_sidecar_ = now;
    }
  }

  const RunArgs& args_;
  const Config& config_;
  const std::string sidecar_;
  RunMetadata meta_;
  const std::size_t resumed_;
  std::size_t failed_;
  const std::size_t to_run_;
  RowFile csv_;
  RowFile samples_;  // written only with --save-samples
  std::vector<DeviceIdentity> worker_device_;
  Progress progress_;
  std::size_t finished_ = 0;
  const std::size_t resumed_devices_ = meta_.devices.size();  // from the resumed sidecar
  bool refused_ = false;  // refused before this run's first row: its files stay as they were
  std::chrono::steady_clock::time_point last_sidecar_ = std::chrono::steady_clock::now();
};

int cmd_run(RunArgs args) {
  // Plugins before the config, which may name their variants; a bad one ends the run here. The
  // record holds the in-process variants' sources too (include/kvbench/host.h).
  const plugin::Plugins& plugins = load_plugin_variants(args.plugins);
  if (!plugins.info().empty()) args.plugins_json = plugins_json(plugins);
  check_recorded_path("CONFIG", args.config_path);
  const LoadedConfig loaded = load_run_config(args);
  const Config& config = loaded.config;
  if (args.output.empty()) args.output = default_output(args.config_path);
  check_recorded_path("--output", args.output);
  const std::optional<ResultTable> baseline = check_outputs_and_baseline(args);
  const std::optional<OutputLock> lock = lock_output("--output", args.output);
  if (baseline) check_baseline_context(args.gate.baseline, settings_to_json(config.settings));
  std::vector<std::size_t> indices = selected_cases(config, args.config_path, args.cases);
  if (args.max_tokens < kAllTokens) {
    indices.erase(
        std::remove_if(indices.begin(), indices.end(),
                       [&](std::size_t i) { return config.cases[i].num_tokens > args.max_tokens; }),
        indices.end());
    if (indices.empty())
      throw std::invalid_argument("--max-tokens " + std::to_string(args.max_tokens) +
                                  ": no selected case of " + args.config_path +
                                  " has num_tokens up to it");
    args.cases = indices;  // the sidecar's selected_cases: what --case and --max-tokens select
  }
  Shard shard;
  if (!args.shard.empty()) {
    shard = parse_shard(args.shard, [](const char* name) { return std::getenv(name); });
    indices = shard_cases(indices, shard);
  }
  RunMetadata meta =
      new_metadata(args, config.settings, args.shard.empty() ? "" : shard.text(), loaded.text);

  // --resume: the rows already written stay; their cases are not run again.
  const bool append = args.resume && std::filesystem::exists(args.output);
  const std::size_t total = indices.size();
  if (append) resume(config, args.output, indices, meta);
  meta.cases = total;
  meta.cases_done = total - indices.size();

  SupervisorOptions options;
  const SealedText config_copy(loaded.text);
  options.worker_args = worker_args(config_copy.path(), args, config.settings);
  options.devices = worker_devices(args.devices);
  options.case_timeout_s = args.case_timeout_s;

  ActiveRun active(args, config, std::move(meta), append, indices.size(), options.devices.size());
  install_interrupt_handlers();
  int signal = 0;
  try {
    signal = supervise(indices, options, active.events());
  } catch (const WorkerFatal& e) {
    return active.fatal(e);
  }
  return active.finish(signal, baseline);
}

}  // namespace

Command add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run =
      app.add_subcommand("run", "Validate every case of CONFIG, time those that pass, write a CSV");
  run->add_option("config", a->config_path, "YAML sweep file")->required();
  run->add_option("-o,--output", a->output, "CSV to write (default: results/<config name>.csv)")
      ->check(non_empty());
  run->add_option("--seed", a->seed, "Input seed (overrides settings.seed), 0 to 2^64-1")
      ->check(non_empty());
  run->add_option("--max-cases", a->max_cases,
                  "Refuse a config expanding to more cases than this (default 100000)")
      ->transform(integer_in(1, UINT64_MAX));
  run->add_option("--case", a->cases,
                  "Run only these cases (numbers as `kvbench list` prints them)")
      ->transform(integer_in(0, SIZE_MAX));
  add_max_tokens_flag(run, a->max_tokens);
  add_timing_flags(run, a->overrides);
  add_rotation_flags(run, a->overrides);
  add_timer_flag(run, a->overrides);
  add_gate_flags(
      run, a->gate,
      run->add_option("--baseline", a->gate.baseline,
                      "After the run, gate its CSV against this one (exit codes of compare)")
          ->check(non_empty()));
  run->add_option("--save-tensors", a->validation.save_tensors_dir,
                  "Write inputs and outputs of failing cases as .npy files under DIR/caseNNNN/")
      ->check(non_empty())
      ->check(CLI::Validator(
          [](std::string& dir) -> std::string {
            std::error_code ec;
            return std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)
                       ? "'" + dir + "' exists and is not a folder"
                       : "";
          },
          ""));
  run->add_flag("--save-tensors-all", a->validation.save_all,
                "With --save-tensors: of every validated case")
      ->needs(run->get_option("--save-tensors"));
  run->add_flag("--save-samples", a->save_samples,
                "Also write every timed sample of every row to OUT.csv.samples.jsonl");
  run->add_flag(
      "--check-bounds", a->validation.check_bounds,
      "Check slot ranges on the device before each cache write; report the first bad token");
  run->add_option("--shard", a->shard,
                  "Run shard I of N (cases whose index % N == I), or `slurm` (the array task's)")
      ->check(non_empty());
  run->add_option("--devices", a->devices,
                  "GPUs to run on, one worker each: all, or numbers like 0,2,5 (default: device 0)")
      ->check(non_empty());
  add_plugin_flags(run, a->plugins, a->variants);
  run->add_flag("--resume", a->resume,
                "Keep the rows already in the output and run only the missing cases");
  run->add_option("--case-timeout", a->case_timeout_s,
                  "Seconds a case may take before its worker is killed (default 900)")
      ->check(number_in(0, false, 86400));
  return {run, [a] {
            if (!a->seed.empty()) a->overrides.seed = parse_seed_flag(a->seed);
            return cmd_run(*a);
          }};
}

}  // namespace kvbench::cli
