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
  std::uint64_t max_cases = kDefaultMaxCases;
};
int cmd_run(RunArgs args);

int cmd_compare(const std::string& current_path, const GateFlags& flags);

int cmd_list(const std::string& config_path, const std::string& format,
             std::uint64_t max_cases);

// The result CSV's header line, or with `case_key` only the columns that name a case.
int cmd_schema(bool case_key);

int cmd_calibrate(bool force, const std::string& output);

int cmd_flush_study(const std::vector<double>& mib, const Overrides& overrides);

int cmd_bounds(const std::string& results_path, const std::string& output,
               std::int64_t max_tokens, const Overrides& overrides);

}  // namespace kvbench::cli
