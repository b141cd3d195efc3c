// `kvbench ab BASE CURRENT CONFIG`: two kvbench builds on one board in one run. Each round starts
// a fresh worker of each build (docs/workers.md), which run every open case in turn, the order
// alternating case by case and round by round (A B, B A, ...), so a drift of the board falls on
// both builds alike; fresh workers each round make the few percent by which two processes of one
// build differ a part of the rounds' spread. Each case's rounds give its verdict
// (core/sample_verdict.hpp, judge_rounds); an ambiguous case runs more rounds, up to
// --max-rounds. Nothing is stored between the builds: this is the gate a pull request's CI runs
// (docs/gate.md, "kvbench ab").
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "cli/supervisor.hpp"
#include "cli/worker_setup.hpp"
#include "core/ab_report.hpp"
#include "core/case.hpp"
#include "core/columns.hpp"
#include "core/csv.hpp"
#include "core/file_io.hpp"
#include "core/sidecar.hpp"
#include "core/sweep.hpp"

namespace kvbench::cli {
namespace {

struct AbArgs {
  std::string base, current, config_path;
  std::string seed;
  Overrides overrides;
  std::vector<std::size_t> cases;
  std::int64_t max_tokens = kAllTokens;
  std::uint64_t max_cases = kDefaultMaxCases;
  int rounds = 4, max_rounds = 16;
  std::string threshold = "5";
  std::string junit, output;
  double case_timeout_s = 900;
};

constexpr std::size_t kBase = 0, kCurrent = 1;
const char* const kSideName[] = {"BASE", "CURRENT"};

// What one build reported of one case, over the rounds so far.
struct Side {
  std::vector<std::vector<double>> rounds_us;  // each round's samples
  std::vector<std::string> key;                // the row's case-key fields
  std::string status, reason;
  bool timed = false;
  int rows = 0;
};

struct CaseState {
  Side side[2];
  bool open = true;
};

std::string program_path(const std::string& given, const char* what) {
  if (access(given.c_str(), X_OK) != 0 || std::filesystem::is_directory(given))
    throw std::invalid_argument(std::string(what) + ": not an executable file: " + given);
  return std::filesystem::absolute(given).string();
}

std::vector<std::size_t> ab_cases(const Config& config, const AbArgs& a) {
  std::vector<std::size_t> out;
  for (std::size_t i : a.cases)
    if (i >= config.cases.size())
      throw std::invalid_argument("--case " + std::to_string(i) + ": out of range (" +
                                  a.config_path + " has " + std::to_string(config.cases.size()) +
                                  " cases)");
  if (a.cases.empty())
    for (std::size_t i = 0; i < config.cases.size(); ++i) out.push_back(i);
  else
    out = a.cases;
  out.erase(
      std::remove_if(out.begin(), out.end(),
                     [&](std::size_t i) { return config.cases[i].num_tokens > a.max_tokens; }),
      out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) throw std::invalid_argument(a.config_path + ": no case selected");
  return out;
}

class AbRun {
 public:
  AbRun(const AbArgs& a, const Config& config, std::vector<std::size_t> cases, double threshold)
      : a_(a), config_(config), cases_(std::move(cases)), state_(config.cases.size()) {
    report_.base = a.base;
    report_.current = a.current;
    report_.config = a.config_path;
    report_.threshold = threshold;
  }

  // Runs rounds, each on fresh workers, until every case is decided (from --rounds on) or has
  // had --max-rounds; 0, or the signal.
  int run(SupervisorOptions options) {
    for (int r = 0; r < a_.max_rounds; ++r) {
      std::vector<std::size_t> jobs;
      options.worker_of.clear();
      std::size_t pos = 0;
      for (std::size_t k : cases_) {
        if (!state_[k].open) continue;
        const std::size_t first = (static_cast<std::size_t>(r) + pos++) % 2;
        for (std::size_t side : {first, 1 - first}) {
          jobs.push_back(k);
          options.worker_of.push_back(side);
        }
      }
      if (jobs.empty()) break;
      std::fprintf(stderr, "kvbench ab: round %d of %zu cases\n", r + 1, pos);
      SupervisorEvents events;
      events.ready = [this](std::size_t w, const std::string& json) { ready(w, json); };
      events.done = [this](const CaseOutcome& o) { done(o); };
      if (const int signal = supervise(jobs, options, events)) return signal;
      if (r + 1 >= a_.rounds) decide(r + 1 >= a_.max_rounds);
    }
    decide(true);
    return 0;
  }

  AbReport report() const {
    AbReport r = report_;
    for (std::size_t k : cases_) r.cases.push_back(verdict_of(k));
    return r;
  }

 private:
  void ready(std::size_t worker, const std::string& json) {
    const DeviceIdentity d = device_identity(json);
    if (devices_[worker].empty())
      std::fprintf(stderr, "kvbench ab: %s (%s) on %s (%s)\n", kSideName[worker],
                   worker == kBase ? a_.base.c_str() : a_.current.c_str(), d.name.c_str(),
                   d.uuid.c_str());
    devices_[worker] = d.uuid;
    if (!devices_[0].empty() && !devices_[1].empty() && devices_[0] != devices_[1])
      throw WorkerFatal(kDevice, "the two builds' workers report different boards (" + devices_[0] +
                                     ", " + devices_[1] + ")");
  }

  void done(const CaseOutcome& o) {
    Side& s = state_[o.index].side[o.worker];
    ++s.rows;
    if (!o.failure.empty()) {
      s.status = "failed";
      s.reason = o.failure;
      return;
    }
    std::vector<std::string> f;
    try {
      f = split_csv(o.csv_line);
    } catch (const std::invalid_argument& e) {
      s.status = "failed";
      s.reason = std::string("the worker sent a malformed row (") + e.what() + ")";
      return;
    }
    const auto field = [&](Col c) { return index(c) < f.size() ? f[index(c)] : std::string(); };
    std::vector<std::string> key;
    for (const std::string& name : case_columns())
      for (std::size_t i = 0; i < csv_columns().size(); ++i)
        if (csv_columns()[i] == name) key.push_back(i < f.size() ? f[i] : "");
    if (s.key.empty()) s.key = key;
    const Side& other = state_[o.index].side[1 - o.worker];
    if (!other.key.empty() && other.key != key)
      throw WorkerFatal(
          kBadInput,
          "the builds expand " + a_.config_path + " differently: case " + std::to_string(o.index) +
              " is '" +
              join_csv(state_[o.index].side[kBase].key.empty() ? key
                                                               : state_[o.index].side[kBase].key) +
              "' in BASE and '" + join_csv(o.worker == kCurrent ? key : other.key) +
              "' in CURRENT (gate builds that list the same cases)");
    s.status = field(Col::status);
    s.reason = field(Col::reason);
    s.timed = !field(Col::median_us).empty();
    if (s.timed && o.samples_us.empty())
      throw WorkerFatal(kBadInput, std::string(kSideName[o.worker]) +
                                       " sent a timed row without its samples: a kvbench build "
                                       "without `samples` in its worker (older than `kvbench ab`)");
    s.rounds_us.push_back(o.samples_us);
  }

  static double step_of(const std::vector<std::vector<double>>& rounds) {
    std::vector<double> all;
    for (const auto& r : rounds) all.insert(all.end(), r.begin(), r.end());
    return timer_step(all);
  }

  static bool failed(const Side& s) {
    return s.status == "incorrect" || s.status == "failed" || s.status == "rejected";
  }

  int rounds_of(std::size_t k) const {
    return std::min(state_[k].side[kBase].rows, state_[k].side[kCurrent].rows);
  }

  void decide(bool last) {
    for (std::size_t k : cases_) {
      CaseState& c = state_[k];
      if (!c.open) continue;
      const AbCase v = verdict_of(k);
      if (v.verdict != Verdict::ambiguous || last) c.open = false;
    }
  }

  AbCase verdict_of(std::size_t k) const {
    const CaseState& c = state_[k];
    const Case& kase = config_.cases[k];
    AbCase v;
    v.index = k;
    v.kernel = to_string(kase.kernel);
    v.variant = to_string(kase.variant);
    v.sweep = kase.sweep;
    v.description = describe(kase);
    v.rounds = rounds_of(k);
    const Side &b = c.side[kBase], &cur = c.side[kCurrent];
    if (failed(cur)) {
      v.verdict = Verdict::incorrect;
      v.note = "CURRENT " + cur.status + ": " + cur.reason;
    } else if (failed(b)) {
      v.verdict = Verdict::unknown;
      v.note = "BASE " + b.status + ": " + b.reason;
    } else if (!b.timed || !cur.timed) {
      v.verdict = Verdict::unknown;
      v.note = "not timed (" + (b.timed ? cur.status : b.status) + ")";
    } else {
      v.judgement = judge_rounds(b.rounds_us, cur.rounds_us, report_.threshold);
      v.base_step_us = step_of(b.rounds_us);
      v.current_step_us = step_of(cur.rounds_us);
      v.verdict = v.rounds < a_.rounds ? Verdict::ambiguous : v.judgement.verdict;
    }
    return v;
  }

  const AbArgs& a_;
  const Config& config_;
  const std::vector<std::size_t> cases_;
  std::vector<CaseState> state_;
  std::string devices_[2];
  AbReport report_;
};

int cmd_ab(AbArgs a) {
  if (!a.seed.empty()) a.overrides.seed = parse_seed_flag(a.seed);
  const double threshold = parse_threshold(a.threshold);
  if (a.max_rounds < a.rounds)
    throw std::invalid_argument("--max-rounds " + std::to_string(a.max_rounds) +
                                " is below --rounds " + std::to_string(a.rounds));
  SupervisorOptions options;
  options.programs = {program_path(a.base, "BASE"), program_path(a.current, "CURRENT")};
  const std::string text = read_config_text(a.config_path);
  Config config = parse_config(text, a.config_path, a.max_cases);
  apply(a.overrides, config.settings);
  const std::vector<std::size_t> cases = ab_cases(config, a);
  check_outputs({{"--junit", a.junit}, {"--output", a.output}},
                {{"the config", a.config_path}, {"BASE", a.base}, {"CURRENT", a.current}});

  const SealedText config_copy(text);
  WorkerSetup setup;
  setup.settings = config.settings;
  setup.max_cases = a.max_cases;
  setup.samples = true;
  options.worker_args = {"worker", config_copy.path(), "--setup", worker_setup_to_json(setup)};
  options.devices = {"", ""};  // one GPU: the two workers take turns
  options.case_timeout_s = a.case_timeout_s;

  AbRun run(a, config, cases, threshold);
  install_interrupt_handlers();
  try {
    if (const int signal = run.run(options)) {
      std::fprintf(stderr, "kvbench ab: interrupted by signal %d; no verdict\n", signal);
      return 128 + signal;
    }
  } catch (const WorkerFatal& e) {
    std::fprintf(stderr, "kvbench: %s\n", e.what());
    return e.code();
  }
  const AbReport report = run.report();
  std::fputs(ab_markdown(report).c_str(), stdout);
  if (!a.junit.empty()) write_file_atomic(a.junit, ab_junit(report));
  if (!a.output.empty()) write_file_atomic(a.output, ab_csv(report));
  if (report.exit_code() != 0) std::fprintf(stderr, "kvbench ab: %s\n", report.summary().c_str());
  return report.exit_code();
}

}  // namespace

Command add_ab(CLI::App& app) {
  auto a = std::make_shared<AbArgs>();
  CLI::App* ab = app.add_subcommand(
      "ab", "Time two kvbench builds on one board, interleaved; a verdict from samples per case");
  ab->add_option("base", a->base, "The baseline build: a kvbench executable")->required();
  ab->add_option("current", a->current, "The build under test: a kvbench executable")->required();
  ab->add_option("config", a->config_path, "YAML sweep file")->required();
  ab->add_option("--seed", a->seed, "Input seed (overrides settings.seed), 0 to 2^64-1")
      ->check(non_empty());
  ab->add_option("--max-cases", a->max_cases,
                 "Refuse a config expanding to more cases than this (default 100000)")
      ->transform(integer_in(1, UINT64_MAX));
  ab->add_option("--case", a->cases, "Only these cases (numbers as `kvbench list` prints them)")
      ->transform(integer_in(0, SIZE_MAX));
  add_max_tokens_flag(ab, a->max_tokens);
  add_timing_flags(ab, a->overrides);
  add_rotation_flags(ab, a->overrides);
  add_timer_flag(ab, a->overrides);
  ab->add_option("--rounds", a->rounds,
                 "Rounds every case runs, each build once a round (default 4)")
      ->check(number_in(2, true, 1000));
  ab->add_option("--max-rounds", a->max_rounds,
                 "Rounds an ambiguous case may take before it is called ambiguous (default 16)")
      ->check(number_in(2, true, 1000));
  ab->add_option("--threshold", a->threshold,
                 "Percent: same within it, slower or faster beyond half of it (default 5)")
      ->check(non_empty());
  ab->add_option("--junit", a->junit, "Also write JUnit XML (ambiguous cases skipped)")
      ->check(non_empty());
  ab->add_option("-o,--output", a->output, "Also write one CSV line of figures per case")
      ->check(non_empty());
  ab->add_option("--case-timeout", a->case_timeout_s,
                 "Seconds a case may take before its worker is killed (default 900)")
      ->check(number_in(0, false, 86400));
  return {ab, [a] { return cmd_ab(*a); }};
}

}  // namespace kvbench::cli
