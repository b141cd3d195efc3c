#include "core/csv.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "core/operation.hpp"

namespace kvbench {
std::string csv_quoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += (ch == '\n' || ch == '\r') ? ' ' : ch;
  }
  return out + '"';
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A row being read back: the row, and its operation's case columns until the whole key is read.
struct Parts {
  Row row;
  OpColumns op;
};

// One column's writer and reader. `write` gets the row and its operation's case columns; `read`
// gets the field unquoted and throws std::invalid_argument naming the column and the value.
struct Codec {
  Col col;
  std::string (*write)(const Row&, const OpColumns&);
  void (*read)(std::string_view column, const std::string& field, Parts&);
};

// Values by type: integers, true/false, free text (quoted), and enums by their names.
template <class T>
std::string text(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(v);
  else if constexpr (std::is_same_v<T, std::string>)
    return csv_quoted(v);
  else
    return std::string(to_string(v));
}

template <class T>
T parse(std::string_view column, const std::string& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v != "true" && v != "false")
      throw std::invalid_argument(std::string(column) + " '" + v + "' is not true or false");
    return v == "true";
  } else if constexpr (std::is_integral_v<T>) {
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(v) > std::numeric_limits<T>::max())
      throw std::invalid_argument(std::string(column) + " '" + v + "' is not an integer");
    return static_cast<T>(std::stoll(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else {
    return from_string<T>(v);
  }
}

double parse_number(std::string_view column, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d))
    throw std::invalid_argument(std::string(column) + " '" + v + "' is not a number");
  return d;
}

template <class M>
using member_t = std::remove_cv_t<std::remove_reference_t<M>>;

// Columns of the case header (Case::*), of the operation's case columns (OpColumns::*) and of
// the row (Row::*).
template <auto M>
std::string case_value(const Row& r, const OpColumns&) {
  return text(r.c.*M);
}
template <auto M>
void read_case(std::string_view column, const std::string& v, Parts& p) {
  p.row.c.*M = parse<member_t<decltype(p.row.c.*M)>>(column, v);
}
template <auto M>
std::string op_value(const Row&, const OpColumns& o) {
  return text(o.*M);
}
template <auto M>
void read_op(std::string_view column, const std::string& v, Parts& p) {
  p.op.*M = parse<member_t<decltype(p.op.*M)>>(column, v);
}
template <auto M>
std::string row_value(const Row& r, const OpColumns&) {
  return text(r.*M);
}
template <auto M>
void read_row(std::string_view column, const std::string& v, Parts& p) {
  p.row.*M = parse<member_t<decltype(p.row.*M)>>(column, v);
}

// Timing columns: empty in rows that were not timed. `samples` says whether a row was.
template <auto M>
std::string timed_value(const Row& r, const OpColumns& o) {
  return r.timed ? row_value<M>(r, o) : std::string();
}
template <auto M>
void read_timed(std::string_view column, const std::string& v, Parts& p) {
  if (!v.empty()) read_row<M>(column, v, p);
}
template <double Stats::*M, int Digits>
std::string stat_value(const Row& r, const OpColumns&) {
  return r.timed ? fixed(r.stats.*M, Digits) : std::string();
}
template <double Stats::*M>
void read_stat(std::string_view column, const std::string& v, Parts& p) {
  if (!v.empty()) p.row.stats.*M = parse_number(column, v);
}
// Figures that may be unknown (0), written empty then.
// A figure only some timers give: empty when unset.
template <std::optional<double> Row::*M, int Digits>
std::string optional_value(const Row& r, const OpColumns&) {
  return r.timed && (r.*M) ? fixed(*(r.*M), Digits) : std::string();
}
template <std::optional<double> Row::*M>
void read_optional(std::string_view column, const std::string& v, Parts& p) {
  if (!v.empty()) p.row.*M = parse_number(column, v);
}
template <double Row::*M, int Digits>
std::string known_value(const Row& r, const OpColumns&) {
  return r.timed && r.*M > 0 ? fixed(r.*M, Digits) : std::string();
}
template <double Row::*M>
void read_known(std::string_view column, const std::string& v, Parts& p) {
  p.row.*M = v.empty() ? 0 : parse_number(column, v);
}

// Every column of kColumns, in its order (checked below): how it is written and read back.
constexpr Codec kCodecs[] = {
    {Col::schema_version,
     [](const Row&, const OpColumns&) { return std::to_string(kSchemaVersion); },
     // A row of this build's width is of this build's schema.
     [](std::string_view column, const std::string& v, Parts&) {
       if (v != std::to_string(kSchemaVersion))
         throw std::invalid_argument(std::string(column) + " '" + v + "' is not " +
                                     std::to_string(kSchemaVersion) + " (this build's rows)");
     }},
    // The kernel first: its operation makes the case the other key columns fill.
    {Col::kernel, case_value<&Case::kernel>,
     [](std::string_view, const std::string& v, Parts& p) {
       p.row.c = operation(from_string<Kernel>(v)).default_case();
     }},
    {Col::variant, case_value<&Case::variant>, read_case<&Case::variant>},
    {Col::sweep, case_value<&Case::sweep>, read_case<&Case::sweep>},
    {Col::num_tokens, case_value<&Case::num_tokens>, read_case<&Case::num_tokens>},
    {Col::num_heads, case_value<&Case::num_heads>, read_case<&Case::num_heads>},
    {Col::head_dim, op_value<&OpColumns::head_dim>, read_op<&OpColumns::head_dim>},
    {Col::rope_dim, op_value<&OpColumns::rope_dim>, read_op<&OpColumns::rope_dim>},
    {Col::block_size, op_value<&OpColumns::block_size>, read_op<&OpColumns::block_size>},
    {Col::in_dtype, case_value<&Case::in_dtype>, read_case<&Case::in_dtype>},
    {Col::out_dtype, case_value<&Case::out_dtype>, read_case<&Case::out_dtype>},
    {Col::layout, op_value<&OpColumns::layout>, read_op<&OpColumns::layout>},
    {Col::scale, op_value<&OpColumns::scale>, read_op<&OpColumns::scale>},
    {Col::swa, op_value<&OpColumns::swa>, read_op<&OpColumns::swa>},
    {Col::kv_interleaved, op_value<&OpColumns::kv_interleaved>,
     read_op<&OpColumns::kv_interleaved>},
    {Col::strides, case_value<&Case::strides>, read_case<&Case::strides>},
    {Col::slots, op_value<&OpColumns::slots>, read_op<&OpColumns::slots>},
    {Col::status, row_value<&Row::status>, read_row<&Row::status>},
    {Col::reason, row_value<&Row::reason>, read_row<&Row::reason>},
    {Col::mismatches, row_value<&Row::mismatches>, read_row<&Row::mismatches>},
    {Col::written_tokens, row_value<&Row::written_tokens>, read_row<&Row::written_tokens>},
    {Col::bytes, row_value<&Row::bytes>, read_row<&Row::bytes>},
    {Col::mode,
     [](const Row& r, const OpColumns&) {
       return r.mode ? std::string(to_string(*r.mode)) : std::string();
     },
     [](std::string_view, const std::string& v, Parts& p) {
       if (!v.empty()) p.row.mode = from_string<TimingMode>(v);
     }},
    {Col::buffer_sets, row_value<&Row::buffer_sets>, read_row<&Row::buffer_sets>},
    {Col::context,
     [](const Row& r, const OpColumns&) {
       return r.context ? std::string(to_string(*r.context)) : std::string();
     },
     [](std::string_view, const std::string& v, Parts& p) {
       if (!v.empty()) p.row.context = from_string<Context>(v);
     }},
    {Col::timer,
     [](const Row& r, const OpColumns&) {
       return r.timer ? std::string(to_string(*r.timer)) : std::string();
     },
     [](std::string_view, const std::string& v, Parts& p) {
       if (!v.empty()) p.row.timer = from_string<Timer>(v);
     }},
    {Col::samples,
     [](const Row& r, const OpColumns&) {
       return r.timed ? std::to_string(r.stats.samples) : std::string();
     },
     [](std::string_view column, const std::string& v, Parts& p) {
       p.row.timed = !v.empty();
       if (p.row.timed) p.row.stats.samples = parse<int>(column, v);
     }},
    {Col::launches_per_sample, timed_value<&Row::launches_per_sample>,
     read_timed<&Row::launches_per_sample>},
    {Col::converged, timed_value<&Row::converged>, read_timed<&Row::converged>},
    {Col::median_us, stat_value<&Stats::median_us, 3>, read_stat<&Stats::median_us>},
    {Col::mean_us, stat_value<&Stats::mean_us, 3>, read_stat<&Stats::mean_us>},
    {Col::min_us, stat_value<&Stats::min_us, 3>, read_stat<&Stats::min_us>},
    {Col::max_us, stat_value<&Stats::max_us, 3>, read_stat<&Stats::max_us>},
    {Col::p10_us, stat_value<&Stats::p10_us, 3>, read_stat<&Stats::p10_us>},
    {Col::p90_us, stat_value<&Stats::p90_us, 3>, read_stat<&Stats::p90_us>},
    {Col::rel_stdev, stat_value<&Stats::rel_stdev, 5>, read_stat<&Stats::rel_stdev>},
    // Infinite while too few samples bound the median: written empty, read back as infinite.
    {Col::median_ci_rel,
     [](const Row& r, const OpColumns&) {
       const double v = r.stats.median_ci_rel;
       return r.timed && std::isfinite(v) ? fixed(v, 5) : std::string();
     },
     [](std::string_view column, const std::string& v, Parts& p) {
       p.row.stats.median_ci_rel =
           v.empty() ? std::numeric_limits<double>::infinity() : parse_number(column, v);
     }},
    {Col::gap_us, optional_value<&Row::gap_us, 3>, read_optional<&Row::gap_us>},
    {Col::span_us, optional_value<&Row::span_us, 3>, read_optional<&Row::span_us>},
    {Col::gbps,
     [](const Row& r, const OpColumns&) { return r.timed ? fixed(r.gbps, 1) : std::string(); },
     [](std::string_view column, const std::string& v, Parts& p) {
       if (!v.empty()) p.row.gbps = parse_number(column, v);
     }},
    {Col::pct_of_measured_peak, known_value<&Row::pct_of_measured_peak, 1>,
     read_known<&Row::pct_of_measured_peak>},
    {Col::pct_of_theoretical_peak, known_value<&Row::pct_of_theoretical_peak, 1>,
     read_known<&Row::pct_of_theoretical_peak>},
    {Col::sm_clock_mhz, known_value<&Row::sm_clock_mhz, 0>, read_known<&Row::sm_clock_mhz>},
    {Col::clock_low, timed_value<&Row::clock_low>, read_timed<&Row::clock_low>},
    {Col::device, row_value<&Row::device>, read_row<&Row::device>},
    {Col::device_uuid, row_value<&Row::device_uuid>, read_row<&Row::device_uuid>},
    {Col::git_sha, row_value<&Row::git_sha>, read_row<&Row::git_sha>},
    {Col::git_dirty, row_value<&Row::git_dirty>, read_row<&Row::git_dirty>},
};

static_assert(std::size(kCodecs) == kColumnCount, "a codec for every column");
static_assert(
    [] {
      for (std::size_t i = 0; i < kColumnCount; ++i)
        if (index(kCodecs[i].col) != i) return false;
      return true;
    }(),
    "the codecs in column order");

std::vector<std::string> column_names(std::size_t first, std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t i = first; i < first + count; ++i) out.emplace_back(kColumns[i].name);
  return out;
}

// Reads fields into p, field i into column first + i, and completes the case.
void read_fields(const std::vector<std::string>& fields, std::size_t first, Parts& p) {
  for (std::size_t i = 0; i < fields.size(); ++i)
    kCodecs[first + i].read(kColumns[first + i].name, fields[i], p);
  operation(p.row.c.kernel).set_columns(p.row.c, p.op);
}

}  // namespace

const std::vector<std::string>& case_columns() {
  static const std::vector<std::string> cols = column_names(kFirstKeyColumn, kKeyColumnCount);
  return cols;
}

std::vector<std::string> case_fields(const Case& c) {
  Row r;
  r.c = c;
  const OpColumns o = operation(c.kernel).columns(c);
  std::vector<std::string> f;
  for (std::size_t i = kFirstKeyColumn; i < kFirstKeyColumn + kKeyColumnCount; ++i)
    f.push_back(kCodecs[i].write(r, o));
  return f;
}

std::vector<std::string> case_key(const Case& c) {
  std::vector<std::string> key;
  for (const std::string& f : case_fields(c)) key.push_back(split_csv(f).front());
  return key;
}

Case case_of_key(const std::vector<std::string>& key) {
  if (key.size() != kKeyColumnCount)
    throw std::invalid_argument("a case key of " + std::to_string(key.size()) + " fields, not " +
                                std::to_string(kKeyColumnCount));
  Parts p;
  read_fields(key, kFirstKeyColumn, p);
  return p.row.c;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = column_names(0, kColumnCount);
  return cols;
}

std::string join_csv(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

std::string csv_header() { return join_csv(csv_columns()); }

std::string csv_line(const Row& r) {
  const OpColumns o = operation(r.c.kernel).columns(r.c);
  std::vector<std::string> f;
  for (const Codec& codec : kCodecs) f.push_back(codec.write(r, o));
  return join_csv(f);
}

Row row_of_fields(const std::vector<std::string>& fields) {
  if (fields.size() != kColumnCount)
    throw std::invalid_argument("a row of " + std::to_string(fields.size()) + " fields, not " +
                                std::to_string(kColumnCount));
  Parts p;
  read_fields(fields, 0, p);
  return p.row;
}

void add_derived(Row& r, double measured_peak_gbps, double theoretical_peak_gbps,
                 double max_sm_clock_mhz) {
  if (!r.timed) return;
  r.gbps = r.stats.median_us > 0 ? static_cast<double>(r.bytes) / r.stats.median_us / 1e3 : 0;
  r.pct_of_measured_peak = measured_peak_gbps > 0 ? 100 * r.gbps / measured_peak_gbps : 0;
  r.pct_of_theoretical_peak = theoretical_peak_gbps > 0 ? 100 * r.gbps / theoretical_peak_gbps : 0;
  r.clock_low = max_sm_clock_mhz > 0 && r.sm_clock_mhz > 0 &&
                r.sm_clock_mhz < kClockLowFraction * max_sm_clock_mhz;
}

std::size_t split_csv(std::string_view line, std::vector<std::string>& f) {
  std::size_t n = 0, i = 0;
  const std::size_t len = line.size();
  while (true) {
    if (n == f.size()) f.emplace_back();
    std::string& field = f[n++];
    field.clear();
    while (i < len && line[i] == ' ') ++i;
    if (i < len && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= len) throw std::invalid_argument("quoted field not closed (truncated line?)");
        if (line[i] == '"') {
          if (i + 1 < len && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      while (i < len && line[i] == ' ') ++i;
      if (i < len && line[i] != ',')
        throw std::invalid_argument("text after a quoted field in field " + std::to_string(n));
    } else {
      const std::size_t start = i;
      while (i < len && line[i] != ',') ++i;
      std::size_t stop = i;
      while (stop > start && line[stop - 1] == ' ') --stop;
      field.assign(line.data() + start, stop - start);
    }
    if (i >= len) return n;
    ++i;  // the comma
  }
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  fields.resize(split_csv(line, fields));
  return fields;
}

}  // namespace kvbench
