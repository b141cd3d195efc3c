// The result row and its CSV form: one struct, and the one column list of core/columns.hpp,
// which csv.cpp writes and reads back column by column. Failed, rejected and skipped rows fill
// every column too (timing columns empty).
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/case.hpp"
#include "core/columns.hpp"
#include "core/stats.hpp"

namespace kvbench {

// 2: the buffer_sets column (1 adds nothing else; readers take schema-1 rows as buffer_sets 1).
// 3: the context column (readers take rows of schemas 1 and 2 as of no stated context).
// 4: timer, gap_us and span_us (readers take older rows as of no stated timer, timed by events).
inline constexpr int kSchemaVersion = 4;

struct Row {
  Case c;
  Status status = Status::failed;
  std::string reason;           // empty when passed
  std::int64_t mismatches = 0;  // differing output elements (incorrect rows)
  std::int64_t written_tokens = 0;
  std::int64_t bytes = 0;          // logical bytes of SPEC.md §4
  std::optional<TimingMode> mode;  // unset when not timed
  int buffer_sets = 1;             // independent buffer sets validated and timed (settings.rotate)
  std::optional<Context> context;  // what ran before each timed launch; unset when not timed
  std::optional<Timer> timer;      // what read the times (settings.timer, or its fallback)
  bool timed = false;
  Stats stats;
  std::vector<double> samples_us;  // every timed sample, in order (not a column: --save-samples)
  int launches_per_sample = 0;     // launches per timed window
  bool converged = false;          // the noise target was met before the timeout
  // The cupti timer's figures beside the launch's own duration (unset with the event timer):
  // the median from the previous kernel's end to the launch's start (negative: the launch
  // started before it ended, a programmatic dependent launch), and the median replay span.
  std::optional<double> gap_us, span_us;
  double gbps = 0;                     // bytes / median time
  double pct_of_measured_peak = 0;     // gbps / calibrated copy bandwidth; 0: unknown
  double pct_of_theoretical_peak = 0;  // gbps / memory clock x bus width; 0: unknown
  double sm_clock_mhz = 0;             // effective SM clock while sampling; 0: unknown
  bool clock_low = false;  // sm_clock_mhz below kClockLowFraction of the device's maximum
  std::string device;
  std::string device_uuid;
  std::string git_sha;
  bool git_dirty = false;  // the build had uncommitted changes
};

// A case whose SM clock averaged below this fraction of the maximum ran throttled.
inline constexpr double kClockLowFraction = 0.9;

// Fills the derived columns of a timed row: gbps, the two percentages of peak (a peak of 0 means
// unknown and leaves its percentage 0) and clock_low (a max clock of 0 means unknown).
void add_derived(Row& row, double measured_peak_gbps, double theoretical_peak_gbps,
                 double max_sm_clock_mhz);

// The columns that identify a case (the case_key columns of kColumns; also `kvbench list
// --format csv`), and their values.
const std::vector<std::string>& case_columns();
std::vector<std::string> case_fields(const Case& c);
// The same fields unquoted, as the readers read them (split_csv, read_results).
std::vector<std::string> case_key(const Case& c);
// The case of a key's fields, unquoted (split_csv): the inverse of case_fields. Throws
// std::invalid_argument naming the first bad value ("swa 'x' is not true or false").
Case case_of_key(const std::vector<std::string>& key);
std::string join_csv(const std::vector<std::string>& fields);
// RFC 4180 quoting for free text (line breaks become spaces); a plain token is returned as is.
std::string csv_quoted(const std::string& s);
// The RFC 4180 fields of one CSV line (no line break inside quotes: csv_quoted writes none),
// spaces around a field trimmed: the rows csv_line writes, and every result CSV kvbench reads.
// Fields go to `f` (reused, never shrunk); their count is returned. std::invalid_argument for a
// quoted field not closed or followed by text.
std::size_t split_csv(std::string_view line, std::vector<std::string>& f);
// The same, as a vector of exactly the line's fields.
std::vector<std::string> split_csv(const std::string& line);

// Every column's name (kColumns), the header line, and one row's line.
const std::vector<std::string>& csv_columns();
std::string csv_header();
std::string csv_line(const Row& row);
// The row of a line's fields, unquoted (split_csv): the inverse of csv_line, which writes back
// the same line. Throws std::invalid_argument naming the first bad value. Timing figures come
// back at the precision the line holds.
Row row_of_fields(const std::vector<std::string>& fields);

}  // namespace kvbench
