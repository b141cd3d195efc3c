// The exit codes of every subcommand (README.md, "Exit codes"; CHANGELOG.md).
#pragma once

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

}  // namespace kvbench::cli
