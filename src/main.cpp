// kvbench: validate and benchmark KV-cache write kernels over YAML-described sweeps. The command
// line is cli/entry.cpp's, shared with the library (include/kvbench/host.h).
#include "cli/commands.hpp"

int main(int argc, char** argv) { return kvbench::cli::run_command_line(argc, argv); }
