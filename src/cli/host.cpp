// The library's C API (include/kvbench/host.h): the command line of the executable, in-process
// variants, and the host's worker command. No C++ exception crosses it.
#include "kvbench/host.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/plugins.hpp"
#include "cli/supervisor.hpp"

// Debian's libyaml-cpp.a is position-independent for an executable only: it reaches glibc's
// __libc_single_threaded with a PC-relative relocation, which a shared object cannot hold. This
// hidden definition gives those references (and the static libstdc++'s) a copy of its own.
// 0 says "threads may exist": libstdc++ then always takes its atomic paths, which are right in
// every process.
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}

namespace {

void copy_message(const std::string& text, char* message, std::size_t size) {
  if (message == nullptr || size == 0) return;
  const std::size_t n = std::min(text.size(), size - 1);
  std::memcpy(message, text.data(), n);
  message[n] = '\0';
}

}  // namespace

extern "C" int kvbench_main(int argc, const char* const* argv) {
  // `run` takes SIGINT and SIGTERM for its workers; the host gets its own handlers back after.
  struct sigaction old_int {
  }, old_term{}, old_pipe{};
  sigaction(SIGINT, nullptr, &old_int);
  sigaction(SIGTERM, nullptr, &old_term);
  sigaction(SIGPIPE, nullptr, &old_pipe);
  int code;
  try {
    code = kvbench::cli::run_command_line(argc, argv);
  } catch (...) {
    const kvbench::cli::Failure f = kvbench::cli::current_failure();
    std::fprintf(stderr, "kvbench: %s\n", f.message.c_str());
    code = f.code;
  }
  std::fflush(stdout);  // the host's own output comes after kvbench's
  std::fflush(stderr);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  return code;
}

extern "C" int32_t kvbench_add_variant(const kvb_variant* variant, const char* source_path,
                                       char* message, size_t message_size) {
  copy_message("", message, message_size);
  try {
    if (variant == nullptr) throw std::invalid_argument("kvbench_add_variant: no variant");
    kvbench::cli::add_in_process_variant(*variant, source_path ? source_path : "");
    return kvbench::cli::kOk;
  } catch (...) {
    copy_message(kvbench::cli::current_failure().message, message, message_size);
    return kvbench::cli::kBadInput;
  }
}

extern "C" int32_t kvbench_set_worker_command(int argc, const char* const* argv) {
  try {
    std::vector<std::string> command;
    for (int i = 0; i < argc; ++i) command.emplace_back(argv[i]);
    kvbench::cli::set_worker_command(std::move(command));
    return kvbench::cli::kOk;
  } catch (...) {  // out of memory: kvbench's own executable stays the worker
    return kvbench::cli::kBadInput;
  }
}
