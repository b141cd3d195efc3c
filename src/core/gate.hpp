// The regression gate: rows of a baseline and a current result CSV, matched by case key, become
// one verdict each, a markdown table, a JUnit report and an exit code. Pure: no file I/O here
// (core/result_csv.hpp reads the CSVs).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/result_csv.hpp"
#include "core/samples_file.hpp"
#include "core/types.hpp"

namespace kvbench {

// Exit codes of `kvbench compare` (docs/gate.md, "Exit codes"). When a run has both a
// regression and a validation failure or missing case, 2 wins: a wrong or absent result is worse
// than a slow one.
enum GateExit : int {
  kGatePass = 0,
  kGateRegression = 1,  // some case is slower
  kGateInvalid = 2,     // some case is incorrect or missing, or the current CSV has no rows
  kGateUsage = 3,       // bad flag, unreadable or malformed CSV, schema/device mismatch, ...
};

// Inputs the gate refuses to judge (duplicate keys, device mismatch, empty baseline): exit 3.
class GateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The largest noise allowance a row's own p10-p90 spread can claim (50%): a case whose spread is
// wider than that is not measured well enough to hide a regression behind (docs/gate.md).
inline constexpr double kMaxNoiseBand = 0.5;

// The threshold of a case whose baseline ran on another board of its model (device_uuid): 8%.
// Two H200 boards gave 532 cases of unchanged kernels a median change of 0.2%, 3.8% at the 99th
// percentile and 6.1% at most (a T = 131072 case); 8% is that largest change rounded up to the
// next even percent (docs/gate.md, "Another board").
inline constexpr double kOtherBoardThreshold = 0.08;

struct GateOptions {
  double threshold = 0.05;             // relative change below which a case is "same"
  bool allow_device_mismatch = false;  // match rows across devices (device leaves the key)
  // The threshold of a pair of rows from two boards (device_uuid): at least `threshold`.
  double other_board_threshold = kOtherBoardThreshold;
  // Each run's samples (run --save-samples), by case key: a timed pair with samples on both
  // sides is judged from them (core/sample_verdict.hpp), and may be `ambiguous`; null: none.
  const std::map<std::vector<std::string>, SampleSet>* baseline_samples = nullptr;
  const std::map<std::vector<std::string>, SampleSet>* current_samples = nullptr;
};

struct CaseVerdict {
  Verdict verdict = Verdict::unknown;
  const ResultRow* baseline = nullptr;  // rows of the tables given to run_gate, which must
  const ResultRow* current = nullptr;   // outlive the report
  double ratio = 0;                     // current / baseline median, when both were timed
  double tolerance = 0;                 // the band the ratio was judged against
  std::string note;                     // why, for unknown / incorrect / missing rows
  bool from_samples = false;            // judged from the samples; note: the interval
};

struct GateReport {
  std::string baseline_path, current_path;
  std::size_t baseline_rows = 0, current_rows = 0;
  std::size_t current_timed = 0;  // current rows with a median
  double threshold = 0;
  std::vector<CaseVerdict> cases;  // most severe first, then in file order
  std::map<Verdict, int> counts;
  // Non-empty when some matched case ran on another board (device_uuid) than its baseline:
  // boards of one model differ by a few percent on the smallest cases (docs/measurement.md).
  std::string board_note;
  int exit_code() const;
  std::string summary() const;  // one line: counts and the outcome
};

// Relative p10–p90 spread of a timing: its own noise.
double spread(const Timing& t);

// Same / faster / slower for two timed rows. The band is the larger of `threshold` and both
// rows' spreads, the spreads capped at kMaxNoiseBand; slower when current > baseline·(1 + band),
// faster when baseline > current·(1 + band) (symmetric in the ratio). Writes the band to
// *tolerance.
Verdict judge(const Timing& baseline, const Timing& current, double threshold, double* tolerance);

// `compare --variants BASE,CURRENT`: the rows of `table` of variant `keep`, each relabelled
// `as`, so that one variant's rows are gated against another's case by case (the seed's Triton
// against optimized, say). Throws GateError naming the file and the variant when none is left.
ResultTable rows_of_variant(const ResultTable& table, const std::string& keep,
                            const std::string& as);

// Throws GateError for a baseline that cannot be gated against: no rows, no timed row, or
// duplicate case keys (naming them). `run --baseline` calls it before the sweep.
void check_baseline(const ResultTable& baseline, const GateOptions& opt);

// Throws GateError for what check_baseline refuses, duplicate case keys in the current file,
// or, unless allowed, a current device that the baseline never ran on. The report points into
// both tables.
GateReport run_gate(const ResultTable& baseline, const ResultTable& current,
                    const GateOptions& opt);
// The report would point into a temporary: refused at compile time.
GateReport run_gate(ResultTable&&, const ResultTable&, const GateOptions&) = delete;
GateReport run_gate(const ResultTable&, ResultTable&&, const GateOptions&) = delete;
GateReport run_gate(ResultTable&&, ResultTable&&, const GateOptions&) = delete;

// "T=128 H=8 D=128 BS=16 bf16->bf16 ..." from a row's axes: the case without kernel/variant/sweep.
std::string describe_axes(const ResultRow& row);

// Text as XML attribute or element content: escaped, well-formed UTF-8, no control characters.
std::string xml_escape(const std::string& text);

std::string markdown_report(const GateReport& r);
void markdown_report(const GateReport& r, std::ostream& out);  // streamed, for large reports
std::string junit_report(const GateReport& r);

}  // namespace kvbench
