// `kvbench list`: the cases a config expands to, without a GPU.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/csv.hpp"
#include "core/sweep.hpp"

namespace kvbench::cli {

int cmd_list(const std::string& config_path, const std::string& format,
             std::uint64_t max_cases) {
  const Config config = load_config(config_path, max_cases);
  if (format == "csv") {
    // The case columns of the result CSV, so scripts can run the same cases elsewhere.
    std::cout << "case," << join_csv(case_columns()) << '\n';
    for (std::size_t i = 0; i < config.cases.size(); ++i)
      std::cout << i << ',' << join_csv(case_fields(config.cases[i])) << '\n';
  } else {
    for (std::size_t i = 0; i < config.cases.size(); ++i)
      std::cout << i << ' ' << describe(config.cases[i]) << '\n';
  }
  check_stdout();
  return kOk;
}

}  // namespace kvbench::cli
