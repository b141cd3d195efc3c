#include "core/result_csv.hpp"

// fccp's strncpy of file names trips GCC's truncation analysis once inlined (it terminates the
// buffer itself); silenced for this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <libfccp/csv.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/csv.hpp"
#include "core/sweep.hpp"

namespace kvbench {
namespace {

// The interned strings: index 0 is "". A deque keeps references stable as it grows.
struct Pool {
  std::mutex mutex;
  std::deque<std::string> strings{std::string()};
  std::unordered_map<std::string_view, std::uint32_t> ids{{std::string_view(), 0}};
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: rows may outlive static destruction order
  return *p;
}

// The columns the gate reads beside the case key (core/columns.hpp), found by name.
enum Other : std::size_t {
  kSchemaCol,
  kStatusCol,
  kReasonCol,
  kMedianCol,
  kP10Col,
  kP90Col,
  kDeviceCol,
  kUuidCol,
  kBytesCol,
  kWrittenCol,
  kSetsCol,
  kModeCol,
  kContextCol,
  kTimerCol,
  kDirtyCol,
  kOtherCount
};
constexpr std::array<Col, kOtherCount> kOtherColumns = {
    Col::schema_version, Col::status, Col::reason,      Col::median_us, Col::p10_us,
    Col::p90_us,         Col::device, Col::device_uuid, Col::bytes,     Col::written_tokens,
    Col::buffer_sets,    Col::mode,   Col::context,     Col::timer,     Col::git_dirty};
// Read when present (the gate's board note, `kvbench bounds`' byte split, how a row was timed),
// not required. buffer_sets is required of schema-2 rows (read_lines checks it per row).
bool optional_column(std::size_t other) {
  return other == kUuidCol || other == kBytesCol || other == kWrittenCol || other == kSetsCol ||
         other == kModeCol || other == kContextCol || other == kTimerCol || other == kDirtyCol;
}
// The name of a case-key column by its place in the key, and of the other columns.
const std::string& axis_name(std::size_t axis) { return case_columns()[axis]; }
const std::string& other_name(std::size_t other) {
  static const auto names = [] {
    std::array<std::string, kOtherCount> n;
    for (std::size_t o = 0; o < kOtherCount; ++o) n[o] = std::string(name(kOtherColumns[o]));
    return n;
  }();
  return names[other];
}
// Axis columns that hold integers, checked so a garbled value is reported, not keyed.
bool integer_axis(std::size_t axis) {
  for (Col c : {Col::num_tokens, Col::num_heads, Col::head_dim, Col::rope_dim, Col::block_size})
    if (key_index(c) == axis) return true;
  return false;
}

std::string where(const std::string& path, unsigned long long line) {
  return path + ":" + std::to_string(line) + ": ";
}

// The open result CSV as fccp's byte source. io::LineReader takes a short read for the end of
// the input, so a read fills the whole request unless the input ends (a pipe hands out what its
// writer has written so far); EINTR is retried. Reads run on fccp's reader thread, whose
// exceptions io::LineReader rethrows on the reading one.
// fccp hands lines on as C strings, which a NUL byte would cut short without a word: a result CSV
// is text, so one is refused where it is met.
void refuse_nul(const std::string& path, const char* bytes, long long n, long long offset) {
  if (const void* p = std::memchr(bytes, 0, static_cast<std::size_t>(n)))
    throw ResultCsvError(path + ": a NUL byte at offset " +
                         std::to_string(offset + (static_cast<const char*>(p) - bytes)) +
                         " (a result CSV is text)");
}

class FdByteSource : public io::ByteSourceBase {
 public:
  // last: set to the last byte read (fccp's LineReader drops its byte source once it is read).
  FdByteSource(int fd, const std::string& path, char& last) : fd_(fd), path_(path), last_(last) {}
  int read(char* buffer, int size) override {
    int got = 0;
    while (got < size) {
      const ssize_t n = ::read(fd_, buffer + got, static_cast<std::size_t>(size - got));
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        throw ResultCsvError(path_ + ": cannot read result CSV (" + std::strerror(errno) + ")");
      }
      got += static_cast<int>(n);
    }
    refuse_nul(path_, buffer, got, offset_);
    offset_ += got;
    if (got > 0) last_ = buffer[got - 1];
    return got;
  }

 private:
  int fd_;
  const std::string& path_;
  long long offset_ = 0;
  char& last_;
};

// Lines of the input from fccp's io::LineReader, which reads in blocks (one pass: pipes and FIFOs
// read) and drops the UTF-8 byte order mark, each line's '\n' and a '\r' before it. Its block
// length (2^24 bytes) bounds a line; kMaxResultLine, the lower ceiling, is checked here.
class LineSource {
 public:
  // last_byte: the input's last byte once it is read ('\n' when empty).
  LineSource(std::unique_ptr<io::ByteSourceBase> bytes, const std::string& path,
             const char& last_byte)
      : path_(path), reader_(path, std::move(bytes)), last_byte_(last_byte) {}

  bool next(std::string_view& out) {
    char* line = nullptr;
    try {
      line = reader_.next_line();
    } catch (const io::error::line_length_limit_exceeded&) {
      throw too_long();
    } catch (const io::error::base& e) {
      throw ResultCsvError(where(path_, number_ + 1) + "cannot read result CSV (" + e.what() + ")");
    }
    if (!line) return false;
    ++number_;
    out = std::string_view(line, std::strlen(line));
    if (out.size() > kMaxResultLine) {
      --number_;
      throw too_long();
    }
    return true;
  }

  unsigned long long number() const { return number_; }
  // Whether the last line ended with its newline: kvbench writes whole lines, so one without it
  // is a row cut short (a writer killed mid-row, a truncated copy).
  bool ended_with_newline() const { return last_byte_ == '\n'; }

 private:
  ResultCsvError too_long() const {
    return ResultCsvError(where(path_, number_ + 1) + "line longer than " +
                          std::to_string(kMaxResultLine) + " bytes (is this a result CSV?)");
  }

  const std::string& path_;
  io::LineReader reader_;
  const char& last_byte_;
  unsigned long long number_ = 0;  // counted here: fccp's own count is an unsigned int
};

// The fields of one line (split_csv, core/csv.hpp), a malformed one refused as the CSV's.
std::size_t split(std::string_view line, std::vector<std::string>& f, const std::string& at) {
  try {
    return split_csv(line, f);
  } catch (const std::invalid_argument& e) {
    throw ResultCsvError(at + e.what());
  }
}

// A finite non-negative decimal number, or nothing when the field is empty.
std::optional<double> number(const std::string& text, const std::string& at,
                             const std::string& column) {
  if (text.empty()) return std::nullopt;
  const bool decimal = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  const double v = decimal ? std::strtod(text.c_str(), &end) : 0;
  if (!decimal || errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
    throw ResultCsvError(at + "column '" + column + "': '" + text +
                         "' is not a non-negative number");
  return v;
}

void check_integer(const std::string& text, const std::string& at, const std::string& column) {
  const bool ok = !text.empty() && text.size() <= 18 &&
                  text.find_first_not_of("0123456789") == std::string::npos;
  if (!ok)
    throw ResultCsvError(at + "column '" + column + "': '" + text +
                         "' is not an integer (up to 18 digits)");
}

// A non-negative integer, or nothing when the field is empty.
std::optional<std::int64_t> integer(const std::string& text, const std::string& at,
                                    const std::string& column) {
  if (text.empty()) return std::nullopt;
  check_integer(text, at, column);
  return std::stoll(text);
}

std::string format_us(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

constexpr std::size_t kNone = SIZE_MAX;

// The header of a result CSV: where each column the gate reads is, and the schema its columns
// are of.
struct Header {
  std::size_t width = 0;
  std::array<std::size_t, AxisValues::kCount> axis_pos;
  std::array<std::size_t, kOtherCount> other_pos;
  std::string missing;        // the first required column it lacks, reported after row 1's schema
  std::string header_schema;  // 4 added timer, 3 context, 2 buffer_sets
};

Header read_header(std::string_view line, std::vector<std::string>& f, const std::string& at) {
  Header h;
  h.width = split(line, f, at);
  h.axis_pos.fill(kNone);
  h.other_pos.fill(kNone);
  for (std::size_t i = 0; i < h.width; ++i) {
    std::size_t* slot = nullptr;
    for (std::size_t a = 0; a < AxisValues::kCount; ++a)
      if (f[i] == axis_name(a)) slot = &h.axis_pos[a];
    for (std::size_t o = 0; o < kOtherCount; ++o)
      if (f[i] == other_name(o)) slot = &h.other_pos[o];
    if (!slot) continue;
    if (*slot != kNone)
      throw ResultCsvError(at + "column '" + f[i] + "' appears twice in the header");
    *slot = i;
  }
  // Missing columns other than the schema's are reported after the first row's schema check, so
  // a CSV of another schema is refused for that reason and not for whichever column differs.
  for (std::size_t a = 0; a < AxisValues::kCount && h.missing.empty(); ++a)
    if (h.axis_pos[a] == kNone) h.missing = axis_name(a);
  for (std::size_t o = 0; o < kOtherCount && h.missing.empty(); ++o)
    if (h.other_pos[o] == kNone && !optional_column(o)) h.missing = other_name(o);
  const auto& o = h.other_pos;
  h.header_schema = o[kTimerCol] != kNone     ? "4"
                    : o[kContextCol] != kNone ? "3"
                    : o[kSetsCol] != kNone    ? "2"
                                              : "1";
  return h;
}

// Decodes the rows of one result CSV under its header, each field checked where it is read.
class RowDecoder {
 public:
  RowDecoder(const Header& h, const std::string& path) : h_(h), path_(path) {}

  ResultCsvError missing_column(const std::string& column) const {
    return ResultCsvError(where(path_, 1) + "missing column '" + column +
                          "' in the header (is this a kvbench result CSV?)");
  }

  // The row of fields f (n of them) at line `number`.
  ResultRow decode(const std::vector<std::string>& f, std::size_t n, unsigned long long number) {
    f_ = &f;
    at_ = where(path_, number);
    check_shape(n);
    ResultRow row;
    row.line = static_cast<unsigned>(number);
    for (std::size_t a = 0; a < AxisValues::kCount; ++a) {
      const std::string& v = f[h_.axis_pos[a]];
      if (integer_axis(a)) check_integer(v, at_, axis_name(a));
      row.axes.at(a) = intern(a, v);
    }
    try {
      row.status = from_string<Status>(field(kStatusCol));
    } catch (const std::invalid_argument& e) {
      throw ResultCsvError(at_ + "column '" + other_name(kStatusCol) + "': " + e.what());
    }
    row.reason = intern(AxisValues::kCount, field(kReasonCol));
    row.timing = timing(row.status);
    row.device = intern(AxisValues::kCount + 1, field(kDeviceCol));
    row.device_uuid = intern(AxisValues::kCount + 2, field(kUuidCol));
    row.bytes = integer(field(kBytesCol), at_, other_name(kBytesCol));
    row.written_tokens = integer(field(kWrittenCol), at_, other_name(kWrittenCol));
    row.buffer_sets = buffer_sets(row.timing.has_value());
    how_timed(row);
    return row;
  }

 private:
  const std::string& field(std::size_t other) const {
    static const std::string kEmpty;
    return h_.other_pos[other] == kNone ? kEmpty : (*f_)[h_.other_pos[other]];
  }
  const std::string& schema() const { return (*f_)[h_.other_pos[kSchemaCol]]; }

  // The row's schema is one this kvbench reads, the header has every column, the row is as wide.
  void check_shape(std::size_t n) const {
    const std::string latest = std::to_string(kSchemaVersion);
    if (n > h_.other_pos[kSchemaCol] && schema() != "1" && schema() != "2" && schema() != "3" &&
        schema() != latest)
      throw ResultCsvError(at_ + "column '" + other_name(kSchemaCol) + "': '" + schema() +
                           "', but this kvbench reads schemas 1 to " + latest);
    if (!h_.missing.empty()) throw missing_column(h_.missing);
    if (n < h_.width) throw ResultCsvError(at_ + "too few columns (truncated line?)");
    if (n > h_.width) throw ResultCsvError(at_ + "too many columns");
    // true or false; empty where the writer did not know (rows of early Triton baselines).
    if (const std::string& dirty = field(kDirtyCol);
        !dirty.empty() && dirty != "true" && dirty != "false")
      throw ResultCsvError(at_ + "column '" + other_name(kDirtyCol) + "': '" + dirty +
                           "' is not true or false");
  }

  // median, p10 and p90: all three or none, ordered, and only where something was launched.
  std::optional<Timing> timing(Status status) const {
    const std::string &median_us = other_name(kMedianCol), &p10_us = other_name(kP10Col),
                      &p90_us = other_name(kP90Col);
    const auto median = number(field(kMedianCol), at_, median_us);
    const auto p10 = number(field(kP10Col), at_, p10_us);
    const auto p90 = number(field(kP90Col), at_, p90_us);
    if (!median) {
      if (p10 || p90)
        throw ResultCsvError(at_ + "column '" + median_us + "': empty, but " +
                             (p10 ? p10_us : p90_us) + " is set");
      return std::nullopt;
    }
    if (!p10 || !p90)
      throw ResultCsvError(at_ + "column '" + (p10 ? p90_us : p10_us) + "': empty, but " +
                           median_us + " is set");
    if (*p10 > *p90)
      throw ResultCsvError(at_ + "column '" + p10_us + "': " + format_us(*p10) + " is above " +
                           p90_us + " " + format_us(*p90));
    if (*median < *p10 || *median > *p90)
      throw ResultCsvError(at_ + "column '" + median_us + "': " + format_us(*median) +
                           " is outside " + p10_us + ".." + p90_us + " [" + format_us(*p10) + ", " +
                           format_us(*p90) + "]");
    // Nothing is launched for a case not supported or rejected: times there were edited in.
    if (status == Status::not_supported || status == Status::rejected)
      throw ResultCsvError(at_ + "column '" + median_us + "': set in a " +
                           std::string(to_string(status)) + " row (nothing was launched)");
    if (*median <= 0)  // a launch takes time: 0 is a lost or edited number
      throw ResultCsvError(at_ + "column '" + median_us + "': 0 in a timed row");
    return Timing{*median, *p10, *p90};
  }

  // Schema 1 has no buffer_sets: one set, as every schema-1 run timed. Schema 2 has the column,
  // and a timed row of it says how many sets it was timed over (the gate keeps counts apart).
  int buffer_sets(bool timed) const {
    const bool schema2 = schema() != "1";  // 2 or later
    if (schema2 && h_.other_pos[kSetsCol] == kNone)
      throw ResultCsvError(where(path_, 1) + "missing column '" + other_name(kSetsCol) +
                           "' in the header (schema 2 has it)");
    const auto sets = integer(field(kSetsCol), at_, other_name(kSetsCol));
    if (sets && (*sets < 1 || *sets > kMaxBufferSets))
      throw ResultCsvError(at_ + "column '" + other_name(kSetsCol) + "': '" + field(kSetsCol) +
                           "' is not in [1, " + std::to_string(kMaxBufferSets) + "]");
    if (!sets && schema2 && timed)
      throw ResultCsvError(at_ + "column '" + other_name(kSetsCol) + "': empty in a timed row");
    return sets ? static_cast<int>(*sets) : 1;
  }

  // A name of enum E in column `other`, or empty; the text as read.
  template <class E>
  const std::string& name_of(std::size_t other) const {
    const std::string& v = field(other);
    if (!v.empty()) {
      try {
        from_string<E>(v);
      } catch (const std::invalid_argument& err) {
        throw ResultCsvError(at_ + "column '" + other_name(other) + "': " + err.what());
      }
    }
    return v;
  }

  // How the row was timed (mode, context, timer): names, each empty in an untimed row only.
  void how_timed(ResultRow& row) {
    // A row is read with its schema's meanings (one buffer set, any context, any timer), so it
    // must be of the schema its header's columns are: each schema added one of them.
    if (schema() != h_.header_schema)
      throw ResultCsvError(at_ + "column '" + other_name(kSchemaCol) + "': '" + schema() +
                           "', but the header has the columns of schema " + h_.header_schema +
                           " (a row of another schema pasted in?)");
    row.mode = intern(AxisValues::kCount + 3, name_of<TimingMode>(kModeCol));
    named_if_timed(row, row.mode, kModeCol);
    row.context = intern(AxisValues::kCount + 4, name_of<Context>(kContextCol));
    row.timer = intern(AxisValues::kCount + 5, name_of<Timer>(kTimerCol));
    named_if_timed(row, row.context, kContextCol);
    named_if_timed(row, row.timer, kTimerCol);
  }

  // A timed row of a schema with column `col` says how it was timed there.
  void named_if_timed(const ResultRow& row, const Text& text, std::size_t col) const {
    if (text.empty() && row.timing && h_.other_pos[col] != kNone)
      throw ResultCsvError(at_ + "column '" + other_name(col) + "': empty in a timed row");
  }

  // Consecutive rows mostly repeat a column's value (kernel, dtype, device): the last one per
  // column skips the interning table's lookup.
  Text intern(std::size_t slot, const std::string& v) {
    auto& [text, id] = last_[slot];
    if (text != v || (id.empty() && !v.empty())) {
      text = v;
      id = Text(v);
    }
    return id;
  }

  const Header& h_;
  const std::string& path_;
  const std::vector<std::string>* f_ = nullptr;
  std::string at_;
  std::array<std::pair<std::string, Text>, AxisValues::kCount + 6> last_;
};

ResultTable read_lines(LineSource& src, const std::string& path) {
  ResultTable table;
  table.path = path;
  std::vector<std::string> f;
  std::string_view line;
  // The header: the first non-blank line (io::LineReader skips a UTF-8 byte order mark).
  bool have_header = false;
  while (!have_header && src.next(line)) have_header = !line.empty();
  if (!have_header && src.number() == 0) return table;  // zero bytes: no rows
  // Line ends and nothing else ("\r" alone, a file of CRs or blank lines): not a CSV at all.
  if (!have_header)
    throw ResultCsvError(where(path, 1) + "no header line, only " + std::to_string(src.number()) +
                         " blank line" + (src.number() == 1 ? "" : "s") +
                         " (is this a result CSV?)");
  const Header header = read_header(line, f, where(path, src.number()));
  RowDecoder rows(header, path);
  if (header.other_pos[kSchemaCol] == kNone) throw rows.missing_column(other_name(kSchemaCol));
  while (src.next(line)) {
    if (line.empty()) continue;
    if (src.number() > UINT_MAX)
      throw ResultCsvError(where(path, src.number()) + "more lines than a result CSV may have");
    const std::size_t n = split(line, f, where(path, src.number()));
    table.rows.push_back(rows.decode(f, n, src.number()));
  }
  if (!header.missing.empty()) throw rows.missing_column(header.missing);
  if (!src.ended_with_newline())
    throw ResultCsvError(where(path, src.number()) +
                         "no newline at the end of the last line (a row cut short?)");
  return table;
}

// Closes the descriptor on every path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Text::Text(std::string_view s) {
  if (s.empty()) return;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  const auto it = p.ids.find(s);
  if (it != p.ids.end()) {
    id_ = it->second;
    return;
  }
  if (p.strings.size() >= UINT32_MAX) throw std::length_error("too many distinct strings");
  p.strings.emplace_back(s);
  id_ = static_cast<std::uint32_t>(p.strings.size() - 1);
  p.ids.emplace(p.strings.back(), id_);
}

const std::string& Text::str() const {
  Pool& p = pool();
  if (id_ == 0) return p.strings.front();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.strings[id_];
}

AxisValues::AxisValues(std::initializer_list<std::string_view> values) {
  if (values.size() != kCount)
    throw std::invalid_argument("AxisValues: " + std::to_string(kCount) + " values expected");
  std::size_t i = 0;
  for (std::string_view v : values) values_[i++] = Text(v);
}

AxisValues::AxisValues(const std::vector<std::string>& values) {
  if (values.size() != kCount)
    throw std::invalid_argument("AxisValues: " + std::to_string(kCount) + " values expected");
  for (std::size_t i = 0; i < kCount; ++i) values_[i] = Text(values[i]);
}

AxisValues::operator std::vector<std::string>() const {
  std::vector<std::string> out;
  for (const Text& t : values_) out.push_back(t.str());
  return out;
}

std::uint64_t AxisValues::hash() const {
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the ids
  for (const Text& t : values_) {
    h ^= t.id();
    h *= 0x100000001B3ull;
  }
  return h;
}

ResultTable read_results(const std::string& path) {
  Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0)
    throw ResultCsvError(path + ": cannot open result CSV (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0)
    throw ResultCsvError(path + ": cannot read result CSV (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw ResultCsvError(path + ": is a directory, not a result CSV");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw ResultCsvError(path + ": not a regular file or a pipe; refusing to read a device");
  char last = '\n';
  LineSource src(std::make_unique<FdByteSource>(fd.fd, path, last), path, last);
  return read_lines(src, path);
}

ResultTable parse_results(std::string_view text, const std::string& path) {
  refuse_nul(path, text.data(), static_cast<long long>(text.size()), 0);
  const char last = text.empty() ? '\n' : text.back();
  LineSource src(std::make_unique<io::detail::NonOwningStringByteSource>(
                     text.data(), static_cast<long long>(text.size())),
                 path, last);
  return read_lines(src, path);
}

ResumeRows parse_resume_rows(std::string_view text, const std::string& path) {
  refuse_nul(path, text.data(), static_cast<long long>(text.size()), 0);
  ResumeRows out;
  const std::size_t first_nl = text.find('\n');
  if (text.empty())
    throw ResultCsvError(path + ": empty (no header line), but its sidecar is there");
  if (first_nl != std::string_view::npos && first_nl > 0 && text[first_nl - 1] == '\r')
    throw ResultCsvError(path +
                         ":1: CRLF line endings (the file was converted); --resume appends "
                         "to the file kvbench wrote, with its LF endings");
  if (first_nl == std::string_view::npos || text.substr(0, first_nl) != csv_header())
    throw ResultCsvError(path + ":1: header differs from this build's (`kvbench schema`)");
  out.keep_bytes = text.rfind('\n') + 1;
  const std::vector<std::string>& columns = csv_columns();
  const std::size_t status = index(Col::status);
  std::vector<std::string> f;
  unsigned long long number = 1;
  for (std::size_t start = first_nl + 1; start < out.keep_bytes;) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const std::string at = where(path, ++number);
    const std::size_t n = split(line, f, at);
    if (n != columns.size())
      throw ResultCsvError(at + "a row of " + std::to_string(n) + " fields, expected " +
                           std::to_string(columns.size()));
    ResumeRow row;
    const auto key = f.begin() + static_cast<std::ptrdiff_t>(kFirstKeyColumn);
    row.key.assign(key, key + static_cast<std::ptrdiff_t>(kKeyColumnCount));
    row.line = number;
    row.failed = f[status] == "incorrect" || f[status] == "failed" || f[status] == "rejected";
    row.git_sha = f[index(Col::git_sha)];
    row.device = f[index(Col::device)];
    row.mode = f[index(Col::mode)];
    row.context = f[index(Col::context)];
    row.timer = f[index(Col::timer)];
    row.timed = !f[index(Col::median_us)].empty();
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::vector<std::size_t> match_resume_rows(const ResumeRows& rows,
                                           const std::vector<std::vector<std::string>>& cases,
                                           const std::string& path) {
  std::map<std::vector<std::string>, std::size_t> index_of;
  for (std::size_t i = 0; i < cases.size(); ++i) index_of.emplace(cases[i], i);
  std::map<std::size_t, unsigned long long> line_of;  // case index -> the row's line
  std::vector<std::size_t> out;
  const auto name = [](const std::vector<std::string>& key) {
    std::string s;
    for (const std::string& k : key) s += (s.empty() ? "" : ",") + k;
    return s.size() > 200 ? s.substr(0, 197) + "..." : s;
  };
  for (const ResumeRow& r : rows.rows) {
    const auto it = index_of.find(r.key);
    if (it == index_of.end())
      throw ResultCsvError(where(path, r.line) + "a case this run does not select (" + name(r.key) +
                           "): rows of another config, --case or --shard");
    const auto [prev, fresh] = line_of.emplace(it->second, r.line);
    if (!fresh)
      throw ResultCsvError(where(path, r.line) + "the case of line " +
                           std::to_string(prev->second) + " again (" + name(r.key) + ")");
    out.push_back(it->second);
  }
  return out;
}

const std::vector<std::string>& result_axis_columns() { return case_columns(); }

}  // namespace kvbench
