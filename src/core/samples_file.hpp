// The samples file beside a result CSV (`run --save-samples`: OUT.csv.samples.jsonl): every timed
// sample of every timed row, so that a verdict can be recomputed from the data and not only from
// the row's median (docs/gate.md, "Verdicts from samples"). JSON Lines: a first line naming the
// format, then one record per timed row, written as the row is:
//   {"kvbench_samples": 1}
//   {"key": {"kernel": "...", ...}, "timer": "cupti", "timer_step_us": 0.032, "samples_us": [...]}
// `key` holds the row's case-key columns (results.md) as the CSV has them; `timer_step_us` is
// timer_step() of the samples (the step of a quantized timer; 0 with fewer than two values).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kvbench {

inline constexpr const char* kSamplesSuffix = ".samples.jsonl";
std::string samples_header();

struct SampleSet {
  std::string timer;
  double step_us = 0;
  std::vector<double> samples_us;
};

// A record from a CSV row's fields (in csv_header() order) and its samples.
std::string samples_record(const std::vector<std::string>& row_fields,
                           const std::vector<double>& samples_us);

// The records of a samples file's text, by case key (the case-key columns' values in order).
// Throws std::invalid_argument naming `name`, the line and what is wrong.
std::map<std::vector<std::string>, SampleSet> parse_samples(const std::string& text,
                                                            const std::string& name);

}  // namespace kvbench
