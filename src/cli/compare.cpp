// `kvbench compare` and `kvbench schema`: no GPU involved.
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/csv.hpp"

namespace kvbench::cli {

int cmd_compare(const std::string& current_path, const GateFlags& flags) {
  parse_threshold(flags.threshold);  // before reading anything
  return gate(read_results(flags.baseline), current_path, flags);
}

int cmd_schema(bool case_key) {
  std::cout << (case_key ? join_csv(case_columns()) : csv_header()) << '\n';
  check_stdout();
  return kOk;
}

}  // namespace kvbench::cli
