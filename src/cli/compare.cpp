// `kvbench compare`: the regression gate between two result CSVs; no GPU involved.
#include <sys/stat.h>

#include <memory>
#include <string>

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
  compare
      ->add_option("--variants", a->gate.variants,
                   "BASE,CURRENT: gate CURRENT's rows of one variant against BASELINE's rows of "
                   "another, case by case (the two files may be one)")
      ->check([](const std::string& v) -> std::string {
        const std::size_t comma = v.find(',');
        const auto ok = [](const std::string& name) {
          return !name.empty() && name.size() <= 32 &&
                 name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
                     std::string::npos;
        };
        if (comma == std::string::npos || !ok(v.substr(0, comma)) || !ok(v.substr(comma + 1)))
          return "expected two variant names, BASE,CURRENT, got '" + v + "'";
        return "";
      });
  return {compare, [a] {
            parse_threshold(a->gate.threshold);  // before reading anything
            parse_threshold(a->gate.other_board_threshold, "--other-board-threshold");
            // One pipe named twice (/dev/stdin for both, as --variants invites) reads once: the
            // current side would be empty and the gate would fail for want of rows.
            struct stat b {
            }, c{};
            if (::stat(a->gate.baseline.c_str(), &b) == 0 && ::stat(a->current.c_str(), &c) == 0 &&
                S_ISFIFO(b.st_mode) && b.st_dev == c.st_dev && b.st_ino == c.st_ino)
              throw ResultCsvError(a->gate.baseline + " and " + a->current +
                                   " are one pipe, which can be read once: name a file");
            return gate(read_results(a->gate.baseline), a->current, a->gate);
          }};
}

}  // namespace kvbench::cli
