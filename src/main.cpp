// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps. The command
// line is cli/entry.cpp's, shared with the library (include/kvbench/host.h).
#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"

// With a plugin loaded, the process ends without running its destructors (or anyone's): a
// plugin's destructor that crashes would turn a finished command's exit code into a signal.
// Every output is written and closed by then; the streams are flushed here.
int main(int argc, char** argv) {
  const int code = kvbench::cli::run_command_line(argc, argv);
  if (!kvbench::cli::plugin_loaded()) return code;
  std::fflush(nullptr);
  std::_Exit(code);
}
