// The result row and its CSV form: one struct, one column list. Failed, rejected and skipped
// rows fill every column too (timing columns empty).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/stats.hpp"

namespace kvbench {

inline constexpr int kSchemaVersion = 1;

struct Row {
  Case c;
  Status status = Status::failed;
  std::string reason;             // empty when passed
  std::int64_t mismatches = 0;    // differing output elements (incorrect rows)
  std::int64_t written_tokens = 0;
  std::int64_t bytes = 0;         // logical bytes of SPEC.md §4
  std::string mode;               // timing mode; empty when not timed
  bool timed = false;
  Stats stats;
  double gbps = 0;                // bytes / median time
  std::string device;
  std::string git_sha;
};

// The columns that identify a case (also `kvbench list --format csv`), and their values.
const std::vector<std::string>& case_columns();
std::vector<std::string> case_fields(const Case& c);
std::string join_csv(const std::vector<std::string>& fields);

const std::vector<std::string>& csv_columns();
std::string csv_header();
std::string csv_line(const Row& row);

// Writes the header on open and flushes after every row, so an interrupted run leaves every
// finished row parseable. Throws std::runtime_error naming the path on I/O failure.
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path);
  void write(const Row& row);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace kvbench
