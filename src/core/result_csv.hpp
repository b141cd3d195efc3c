// Reading result CSVs back (the writer is core/csv.hpp), for the regression gate. Columns are
// found by name, so columns added later are ignored; a row's axes and variant stay strings, so a
// CSV written by a build that knows other variants still reads.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace kvbench {

// A malformed or unreadable result CSV. what() is one line: "FILE:LINE: column 'X': ...".
class ResultCsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
};

struct ResultRow {
  std::vector<std::string> axes;  // values of case_columns() (kernel, variant, sweep, ...)
  std::string device;
  std::string device_uuid;  // empty when the CSV has no such column
  Status status = Status::failed;
  std::string reason;
  std::optional<Timing> timing;  // set when the row was timed (median_us not empty)
  std::optional<std::int64_t> bytes, written_tokens;  // unset when the column is absent or empty
  int buffer_sets = 1;           // schema 2's column; schema-1 rows timed one set
  unsigned line = 0;             // line in its file
};

struct ResultTable {
  std::string path;
  std::vector<ResultRow> rows;  // empty for a zero-byte or header-only file
};

// The axis columns read into ResultRow::axes, in order. Equal to csv.hpp's case_columns()
// (test_gate checks it), so a new axis cannot be silently left out of the gate's case key.
const std::vector<std::string>& result_axis_columns();

// Reads every row. Throws ResultCsvError naming file:line and the column for a missing column,
// a value of the wrong type, a truncated or overlong line, or a schema_version other than
// 1 or kSchemaVersion; a file that cannot be opened names the path.
ResultTable read_results(const std::string& path);

}  // namespace kvbench
