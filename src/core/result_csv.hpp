// Reading result CSVs back (the writer is core/csv.hpp), for the regression gate. Columns are
// found by name, so columns added later are ignored; a row's axes and variant stay strings, so a
// CSV written by a build that knows other variants still reads.
//
// One streaming pass: the input is read once, front to back, so pipes, FIFOs, process
// substitution and /dev/stdin work; the schema check happens in the same pass. Rows keep their
// strings interned (one copy of each distinct value per process), so memory grows with the rows
// kept (about 150 bytes each, plus each distinct axis value once), not with the file.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/columns.hpp"
#include "core/types.hpp"

namespace kvbench {

// A malformed or unreadable result CSV. what() is one line: "FILE:LINE: column 'X': ...".
class ResultCsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A string stored once per process (never freed): rows of a large CSV share their repeated
// values. Compares by identity, which is equality of the text.
class Text {
 public:
  Text() = default;
  Text(std::string_view s);  // NOLINT(google-explicit-constructor): a string in, a string out
  Text(const std::string& s) : Text(std::string_view(s)) {}
  Text(const char* s) : Text(std::string_view(s)) {}
  const std::string& str() const;
  operator const std::string&() const { return str(); }
  bool empty() const { return id_ == 0; }
  const char* c_str() const { return str().c_str(); }
  std::uint32_t id() const { return id_; }
  friend bool operator==(Text a, Text b) { return a.id_ == b.id_; }
  friend bool operator!=(Text a, Text b) { return a.id_ != b.id_; }
  friend bool operator==(Text a, const std::string& b) { return a.str() == b; }
  friend bool operator==(Text a, const char* b) { return a.str() == b; }
  friend std::string operator+(const std::string& a, Text b) { return a + b.str(); }
  friend std::string operator+(const char* a, Text b) { return a + b.str(); }
  friend std::string operator+(Text a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(Text a, const char* b) { return a.str() + b; }
  friend std::ostream& operator<<(std::ostream& out, Text t) { return out << t.str(); }

 private:
  std::uint32_t id_ = 0;  // 0: the empty string
};

// The values of the case-key columns (core/columns.hpp), in order: axes[Col::num_tokens].
class AxisValues {
 public:
  static constexpr std::size_t kCount = kKeyColumnCount;
  AxisValues() = default;
  AxisValues(std::initializer_list<std::string_view> values);
  AxisValues(const std::vector<std::string>& values);
  const std::string& operator[](std::size_t i) const { return values_[i].str(); }
  // A case-key column's value; std::out_of_range for a column outside the key.
  const std::string& operator[](Col c) const { return values_.at(key_index(c)).str(); }
  Text& at(std::size_t i) { return values_[i]; }
  Text& at(Col c) { return values_.at(key_index(c)); }
  std::size_t size() const { return kCount; }
  operator std::vector<std::string>() const;
  std::uint64_t hash() const;
  friend bool operator==(const AxisValues& a, const AxisValues& b) {
    return a.values_ == b.values_;
  }
  friend bool operator!=(const AxisValues& a, const AxisValues& b) { return !(a == b); }

 private:
  std::array<Text, kCount> values_{};
};

struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
};

struct ResultRow {
  AxisValues axes;  // values of case_columns() (kernel, variant, sweep, ...)
  Text device;
  Text device_uuid;  // empty when the CSV has no such column
  Status status = Status::failed;
  Text reason;
  std::optional<Timing> timing;  // set when the row was timed (median_us not empty)
  std::optional<std::int64_t> bytes, written_tokens;  // unset when the column is absent or empty
  int buffer_sets = 1;  // schema 2's column; schema-1 rows timed one set
  Text mode;            // the `mode` column: how the row was timed; empty when untimed
  Text context;         // schema 3's `context` column; empty when untimed or of an older schema
  Text timer;           // schema 4's `timer` column; empty when untimed or of an older schema
  unsigned line = 0;    // line in its file
};

struct ResultTable {
  std::string path;
  std::deque<ResultRow> rows;  // empty for a zero-byte or header-only file (a deque: no
                               // reallocation peak while a large file is read)
};

// The axis columns read into ResultRow::axes, in order: the case-key columns of kColumns, as
// csv.hpp's case_columns().
const std::vector<std::string>& result_axis_columns();

// Longest line a result CSV may have; kvbench writes lines of a few hundred bytes.
inline constexpr std::size_t kMaxResultLine = 1 << 20;

// Reads every row in one pass. Throws ResultCsvError naming file:line and the column for a
// missing column, a value of the wrong type, inconsistent timing (negative, NaN, infinite, or
// not p10 <= median <= p90), a truncated or overlong line, or a schema_version other than
// 1 or kSchemaVersion. Only regular files and pipes (FIFOs, /dev/stdin, process substitution) are
// read; a directory or a device is refused naming the path, as is a file that cannot be opened.
ResultTable read_results(const std::string& path);

// The same reader over text in memory; `path` names it in messages (tests and the fuzz target).
ResultTable parse_results(std::string_view text, const std::string& path);

// What `run --resume` reads from its own CSV: this build's header (csv_header()), then rows of
// exactly csv_columns() fields. A last line without its newline (a writer killed mid-line) is
// not a row: `keep_bytes` is the length up to the last complete line, which --resume cuts the
// file to.
struct ResumeRow {
  std::vector<std::string> key;  // the case_columns() fields, unquoted
  unsigned long long line = 0;
  bool failed = false;  // status incorrect, failed or rejected
  // What says which run wrote it: the build, the GPU model and, when timed, how.
  std::string git_sha, device, mode, context, timer;
  bool timed = false;  // median_us set
};
struct ResumeRows {
  std::vector<ResumeRow> rows;
  std::size_t keep_bytes = 0;
};
// Throws ResultCsvError naming path:line for another header, a row of another width or a NUL.
ResumeRows parse_resume_rows(std::string_view text, const std::string& path);

// For each row, its index in `cases` (the case keys this run selects: its config, --case and
// --shard). Throws ResultCsvError naming path:line and the case for a row that is not one of
// them (rows of another config or selection) or that repeats an earlier row's case.
std::vector<std::size_t> match_resume_rows(const ResumeRows& rows,
                                           const std::vector<std::vector<std::string>>& cases,
                                           const std::string& path);

}  // namespace kvbench
