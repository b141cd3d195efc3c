// The subcommands. Each src/cli/<command>.cpp registers its subcommand and its options on the
// app and returns what runs it; main.cpp only parses the command line and maps exceptions onto
// the exit codes (cli/exit_codes.hpp). A command returns its exit code and throws on bad input.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace kvbench::cli {

// One registered subcommand: CLI11's, and what runs it once the command line names it.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_run(CLI::App& app);          // run.cpp
Command add_worker(CLI::App& app);       // worker.cpp: hidden, started by `run`
Command add_merge(CLI::App& app);        // merge.cpp
Command add_compare(CLI::App& app);      // compare.cpp
Command add_calibrate(CLI::App& app);    // calibrate.cpp
Command add_flush_study(CLI::App& app);  // flush_study.cpp
Command add_bounds(CLI::App& app);       // bounds.cpp
Command add_list(CLI::App& app);         // list.cpp
Command add_schema(CLI::App& app);       // schema.cpp
Command add_ab(CLI::App& app);           // ab.cpp

// Every subcommand, registered on `app` in the order `kvbench --help` lists them.
std::vector<Command> add_commands(CLI::App& app);

// Whether this process has loaded a plugin (plugin/loader.hpp): its destructors would run at
// exit, so the executable's main ends with _Exit then.
bool plugin_loaded();

// The whole command line (argv[0] is the program's name): the exit code, with every failure one
// line on stderr (entry.cpp).
int run_command_line(int argc, const char* const* argv);

}  // namespace kvbench::cli
