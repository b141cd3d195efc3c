// One function per subcommand; main.cpp parses the command line and maps exceptions to exit
// codes (cli/exit_codes.hpp). Each returns its exit code and throws on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/flags.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {

struct RunArgs {
  std::string config_path;
  std::string output;  // empty: results/<config name>.csv
  Overrides overrides;
  GateFlags gate;  // gate.baseline empty: no gate
  ValidationOptions validation;
  std::vector<std::size_t> cases;  // empty: every case
  std::string shard;               // --shard I/N or slurm; empty: the whole sweep
  std::string devices;             // --devices all or 0,2,5; empty: one worker, device 0
  bool resume = false;             // --resume: append the cases missing from the output
  double case_timeout_s = 900;     // --case-timeout: a worker silent this long is killed
  std::uint64_t max_cases = kDefaultMaxCases;
};
int cmd_run(RunArgs args);

// The hidden `kvbench worker` that `run` supervises (docs/workers.md). `skip_floor`: a worker
// replacing one that died reports no launch floor (the parent has its predecessor's).
int cmd_worker(RunArgs args, bool skip_floor);

// Merges the CSVs of a sharded run (and their sidecars) into `output`; docs/scale-out.md.
int cmd_merge(const std::string& output, const std::vector<std::string>& shards,
              bool allow_missing, const std::string& config_override);

int cmd_compare(const std::string& current_path, const GateFlags& flags);

// `list --plan`: each case's launch plan, on the named device profile (h200, h100) or, when
// none is named, on the real device (NoDeviceError without one).
struct ListPlan {
  bool show = false;
  std::string device_profile;
};
// `shard`: --shard I/N or slurm, the cases of that shard only; empty: all.
// `max_cases`: the expanded case count past which the config is refused (--max-cases).
int cmd_list(const std::string& config_path, const std::string& format, const ListPlan& plan,
             const std::string& shard, std::uint64_t max_cases);

// The result CSV's header line, or with `case_key` only the columns that name a case.
int cmd_schema(bool case_key);

int cmd_calibrate(bool force, const std::string& output);

int cmd_flush_study(const std::vector<double>& mib, const Overrides& overrides);

int cmd_bounds(const std::string& results_path, const std::string& output,
               std::int64_t max_tokens, const std::string& variant, const Overrides& overrides);

}  // namespace kvbench::cli
