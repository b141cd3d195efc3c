// The exit codes of every subcommand (README.md, "Exit codes"; CHANGELOG.md), and the one mapping
// of an exception onto them, shared by main and the worker (which reports it to `run`).
#pragma once

#include <string>

#include "core/gate.hpp"

namespace kvbench::cli {

enum Exit : int {
  kOk = 0,
  kRegression = 1,  // some case is slower than its baseline
  kFailed = 2,      // some case is incorrect, failed or missing
  kBadInput = 3,    // bad command line, config or input file; an output that cannot be written
  kDevice = 4,      // no CUDA device, or the device failed
};

static_assert(int{kGatePass} == int{kOk} && int{kGateRegression} == int{kRegression} &&
                  int{kGateInvalid} == int{kFailed} && int{kGateUsage} == int{kBadInput},
              "the gate's verdicts are the CLI's exit codes");

// An exception as the user sees it: the exit code and the one-line message after "kvbench: ".
struct Failure {
  Exit code = kBadInput;
  std::string message;
};

// The failure of the exception being handled; call only inside a catch block. No CUDA device
// and CUDA errors: kDevice; anything else (configs, flags, input files, outputs): kBadInput.
Failure current_failure();

}  // namespace kvbench::cli
