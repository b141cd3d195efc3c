#include "core/result_csv.hpp"

// fccp's strncpy of file names trips GCC's truncation analysis once inlined (it terminates the
// buffer itself); silenced for this header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#include <libfccp/csv.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <tuple>

#include "core/csv.hpp"

namespace kvbench {
namespace {

// The columns the gate reads. fccp wants their count at compile time, hence literals here and
// not case_columns(); test_gate checks the axis part equals it.
constexpr std::array<const char*, 16> kAxisColumns = {
    "kernel",   "variant",        "sweep",    "num_tokens", "num_heads", "head_dim",
    "rope_dim", "block_size",     "in_dtype", "out_dtype",  "layout",    "scale",
    "swa",      "kv_interleaved", "strides",  "slots"};
constexpr std::array<const char*, 11> kOtherColumns = {
    "schema_version", "status",      "reason", "median_us",     "p10_us",
    "p90_us",         "device",      "device_uuid", "bytes", "written_tokens", "buffer_sets"};
// Read when present (the gate's board note, `kvbench bounds`' byte split, schema 2's set
// count), not required.
constexpr std::array<const char*, 4> kOptionalColumns = {"device_uuid", "bytes", "written_tokens",
                                                         "buffer_sets"};
constexpr std::size_t kColumns = kAxisColumns.size() + kOtherColumns.size();
// Axis columns that hold integers, checked so a garbled value is reported, not keyed.
constexpr std::array<const char*, 5> kIntegerAxes = {"num_tokens", "num_heads", "head_dim",
                                                     "rope_dim", "block_size"};

using Reader = io::CSVReader<kColumns, io::trim_chars<' '>, io::double_quote_escape<',', '"'>>;
using Fields = std::array<std::string, kColumns>;

std::array<const char*, kColumns> column_names() {
  std::array<const char*, kColumns> names{};
  std::size_t i = 0;
  for (const char* c : kAxisColumns) names[i++] = c;
  for (const char* c : kOtherColumns) names[i++] = c;
  return names;
}

std::string where(const std::string& path, unsigned line) {
  return path + ":" + std::to_string(line) + ": ";
}

ResultCsvError missing_column(const std::string& path, const std::string& column) {
  return ResultCsvError(where(path, 1) + "missing column '" + column +
                        "' in the header (is this a kvbench result CSV?)");
}

// fccp's exceptions carry the file and line in English prose; restate them as FILE:LINE: text.
[[noreturn]] void rethrow_fccp(const std::string& path, const io::error::base& e) {
  if (auto* m = dynamic_cast<const io::error::missing_column_in_header*>(&e))
    throw missing_column(path, m->column_name);
  if (auto* d = dynamic_cast<const io::error::duplicated_column_in_header*>(&e))
    throw ResultCsvError(where(path, 1) + "column '" + d->column_name +
                         "' appears twice in the header");
  if (auto* f = dynamic_cast<const io::error::too_few_columns*>(&e))
    throw ResultCsvError(where(path, static_cast<unsigned>(f->file_line)) +
                         "too few columns (truncated line?)");
  if (auto* f = dynamic_cast<const io::error::too_many_columns*>(&e))
    throw ResultCsvError(where(path, static_cast<unsigned>(f->file_line)) + "too many columns");
  if (auto* f = dynamic_cast<const io::error::escaped_string_not_closed*>(&e))
    throw ResultCsvError(where(path, static_cast<unsigned>(f->file_line)) +
                         "quoted field not closed (truncated line?)");
  if (dynamic_cast<const io::error::can_not_open_file*>(&e))
    throw ResultCsvError(path + ": cannot open result CSV");
  throw ResultCsvError(path + ": " + e.what());
}

// A non-negative finite number, or nothing when the field is empty.
std::optional<double> number(const std::string& text, const std::string& at, const char* column) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
    throw ResultCsvError(at + "column '" + column + "': '" + text +
                         "' is not a non-negative number");
  return v;
}

void check_integer(const std::string& text, const std::string& at, const char* column) {
  const bool ok = !text.empty() && text.size() <= 18 &&
                  text.find_first_not_of("0123456789") == std::string::npos;
  if (!ok) throw ResultCsvError(at + "column '" + column + "': '" + text + "' is not an integer");
}

// A non-negative integer, or nothing when the field is empty.
std::optional<std::int64_t> integer(const std::string& text, const std::string& at,
                                    const char* column) {
  if (text.empty()) return std::nullopt;
  check_integer(text, at, column);
  return std::stoll(text);
}

bool optional_column(const char* c) {
  for (const char* o : kOptionalColumns)
    if (std::string(o) == c) return true;
  return false;
}

// First pass: only schema_version, so a CSV of another schema is refused for that reason and
// not for whichever of its columns happens to differ.
void check_schema(const std::string& path) {
  io::CSVReader<1, io::trim_chars<' '>, io::double_quote_escape<',', '"'>> in(path);
  std::string version;
  try {
    in.read_header(io::ignore_extra_column, "schema_version");
  } catch (const io::error::header_missing&) {
    return;  // zero bytes: no rows
  } catch (const io::error::base& e) {
    rethrow_fccp(path, e);
  }
  try {
    while (in.read_row(version)) {
      if (version != "1" && version != std::to_string(kSchemaVersion))
        throw ResultCsvError(where(path, in.get_file_line()) + "column 'schema_version': '" +
                             version + "', but this kvbench reads schemas 1 to " +
                             std::to_string(kSchemaVersion));
    }
  } catch (const io::error::base& e) {
    rethrow_fccp(path, e);
  }
}

}  // namespace

ResultTable read_results(const std::string& path) {
  ResultTable table;
  table.path = path;
  try {
    check_schema(path);
    Reader in(path);
    const auto names = column_names();
    try {
      std::apply(
          [&](auto... n) {
            in.read_header(io::ignore_extra_column | io::ignore_missing_column, n...);
          },
          names);
    } catch (const io::error::header_missing&) {
      return table;  // zero bytes: no rows
    }
    for (const char* c : names)
      if (!optional_column(c) && !in.has_column(c)) throw missing_column(path, c);
    Fields f;
    while (std::apply([&](auto&... v) { return in.read_row(v...); }, f)) {
      ResultRow row;
      row.line = in.get_file_line();
      const std::string at = where(path, row.line);
      const std::size_t n_axes = kAxisColumns.size();
      row.axes.assign(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n_axes));
      for (const char* col : kIntegerAxes)
        for (std::size_t i = 0; i < n_axes; ++i)
          if (std::string(kAxisColumns[i]) == col) check_integer(f[i], at, col);
      // f[n_axes] is schema_version, checked by check_schema().
      try {
        row.status = from_string<Status>(f[n_axes + 1]);
      } catch (const std::invalid_argument& e) {
        throw ResultCsvError(at + "column 'status': " + e.what());
      }
      row.reason = f[n_axes + 2];
      const auto median = number(f[n_axes + 3], at, "median_us");
      const auto p10 = number(f[n_axes + 4], at, "p10_us");
      const auto p90 = number(f[n_axes + 5], at, "p90_us");
      if (median) {
        if (!p10 || !p90)
          throw ResultCsvError(at + "column '" + std::string(p10 ? "p90_us" : "p10_us") +
                               "': empty, but median_us is set");
        row.timing = Timing{*median, *p10, *p90};
      }
      row.device = f[n_axes + 6];
      row.device_uuid = f[n_axes + 7];
      row.bytes = integer(f[n_axes + 8], at, "bytes");
      row.written_tokens = integer(f[n_axes + 9], at, "written_tokens");
      // Schema 1 has no buffer_sets: one set, as every schema-1 run timed.
      const auto sets = integer(f[n_axes + 10], at, "buffer_sets");
      if (sets && *sets < 1)
        throw ResultCsvError(at + "column 'buffer_sets': '" + f[n_axes + 10] + "' is not positive");
      row.buffer_sets = sets ? static_cast<int>(std::min<std::int64_t>(*sets, 1 << 30)) : 1;
      table.rows.push_back(std::move(row));
    }
  } catch (const io::error::base& e) {
    rethrow_fccp(path, e);
  }
  return table;
}

const std::vector<std::string>& result_axis_columns() {
  static const std::vector<std::string> cols(kAxisColumns.begin(), kAxisColumns.end());
  return cols;
}

}  // namespace kvbench
