// `kvbench schema`: the result CSV's columns (core/columns.hpp), for scripts that read or write
// rows of their own.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "core/columns.hpp"
#include "core/csv.hpp"

namespace kvbench::cli {

Command add_schema(CLI::App& app) {
  auto case_key = std::make_shared<bool>(false);
  auto columns = std::make_shared<bool>(false);
  CLI::App* schema = app.add_subcommand(
      "schema", "Print the result CSV's header line (for scripts that write rows of their own)");
  CLI::Option* key = schema->add_flag("--case-key", *case_key,
                                      "Only the columns that name a case (the gate's key)");
  schema
      ->add_flag("--columns", *columns,
                 "Every column with its role, as CSV: column,role (case_key, result or metadata)")
      ->excludes(key);
  return {schema, [case_key, columns] {
            if (*columns) {
              std::cout << "column,role\n";
              for (const ColumnInfo& c : kColumns)
                std::cout << c.name << ',' << to_string(c.role) << '\n';
            } else {
              std::cout << (*case_key ? join_csv(case_columns()) : csv_header()) << '\n';
            }
            check_stdout();
            return int{kOk};
          }};
}

}  // namespace kvbench::cli
