#include "cli/commands.hpp"

namespace kvbench::cli {

std::vector<Command> add_commands(CLI::App& app) {
  return {add_run(app),  add_worker(app),    add_merge(app),       add_compare(app),
          add_ab(app),   add_calibrate(app), add_flush_study(app), add_bounds(app),
          add_list(app), add_schema(app)};
}

}  // namespace kvbench::cli
