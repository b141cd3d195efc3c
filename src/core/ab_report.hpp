// The report of `kvbench ab`: one verdict from samples per case (core/sample_verdict.hpp), as a
// markdown table, JUnit XML, a verdict CSV and an exit code (docs/gate.md, "kvbench ab"). Pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/sample_verdict.hpp"
#include "core/types.hpp"

namespace kvbench {

struct AbCase {
  std::size_t index = 0;  // in `kvbench list`
  std::string kernel, variant, sweep, description;
  Verdict verdict = Verdict::ambiguous;
  SampleJudgement judgement;  // of the samples of every round, when both builds timed the case
  double base_step_us = 0, current_step_us = 0;
  int rounds = 0;    // rounds that timed both builds
  std::string note;  // why, for a case not judged from samples (a failure, not_supported)
};

struct AbReport {
  std::string base, current, config;
  double threshold = 0.05;
  std::vector<AbCase> cases;  // in case order
  int exit_code() const;      // 2: some case incorrect; else 1: some case slower; else 0
  std::string summary() const;
};

std::string ab_markdown(const AbReport& r);  // most severe first
std::string ab_junit(
    const AbReport& r);  // slower, incorrect: failures; ambiguous, unknown: skipped
// One line per case: the case-key description and every figure of its verdict.
std::string ab_csv(const AbReport& r);

}  // namespace kvbench
