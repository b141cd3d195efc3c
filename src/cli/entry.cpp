// The command line: parses it, runs the one subcommand it names (each registers its own options
// in src/cli/<command>.cpp) and turns every failure into one line on stderr and an exit code of
// the one table every subcommand shares (cli/exit_codes.hpp). The executable's main and the
// library's kvbench_main (cli/host.cpp) are this function.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "kvbench_version.hpp"

namespace kvbench::cli {
namespace {

// CLI11 would say "A subcommand is required" for a misspelt one; name it and the choices.
bool unknown_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return false;
    if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  std::fprintf(stderr, "kvbench: unknown subcommand '%s' (expected one of %s)\n", argv[1],
               names.c_str());
  return true;
}

}  // namespace

int run_command_line(int argc, const char* const* argv) {
  CLI::App app{"kvbench: validate and benchmark KV-cache write kernels"};
  app.set_version_flag("--version", std::string("kvbench ") + kvbench::kVersion + " (git " +
                                        kvbench::kGitSha + (kvbench::kGitDirty ? "+dirty" : "") +
                                        ")");
  app.require_subcommand(1);
  const std::vector<Command> commands = add_commands(app);
  if (unknown_subcommand(app, argc, argv)) return kBadInput;

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "kvbench: %s (see --help)\n", e.what());
    return kBadInput;
  }

  try {
    for (const Command& command : commands)
      if (command.app->parsed()) return command.run();
    return kBadInput;  // not reached: the parse requires one subcommand
  } catch (...) {      // anything: the library's caller must never see a C++ exception
    const Failure f = current_failure();
    std::fprintf(stderr, "kvbench: %s\n", f.message.c_str());
    return f.code;
  }
}

}  // namespace kvbench::cli
