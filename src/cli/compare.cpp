// `kvbench compare`: the regression gate between two result CSVs; no GPU involved.
#include <memory>

#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "core/result_csv.hpp"

namespace kvbench::cli {

Command add_compare(CLI::App& app) {
  struct Args {
    GateFlags gate;
    std::string current;
  };
  auto a = std::make_shared<Args>();
  CLI::App* compare = app.add_subcommand(
      "compare", "Gate CURRENT against BASELINE: verdict per case, markdown table, exit code");
  compare->add_option("baseline", a->gate.baseline, "Baseline result CSV")->required();
  compare->add_option("current", a->current, "Current result CSV")->required();
  add_gate_flags(compare, a->gate, nullptr);
  return {compare, [a] {
            parse_threshold(a->gate.threshold);  // before reading anything
            return gate(read_results(a->gate.baseline), a->current, a->gate);
          }};
}

}  // namespace kvbench::cli
