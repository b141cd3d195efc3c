#include "core/csv.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

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

// Columns from `samples` to `clock_low`, empty in rows that were not timed.
constexpr std::size_t kTimingColumns = 16;

}  // namespace

const std::vector<std::string>& case_columns() {
  static const std::vector<std::string> cols = {
      "kernel",   "variant",        "sweep",    "num_tokens", "num_heads", "head_dim",
      "rope_dim", "block_size",     "in_dtype", "out_dtype",  "layout",    "scale",
      "swa",      "kv_interleaved", "strides",  "slots",
  };
  return cols;
}

std::vector<std::string> case_fields(const Case& c) {
  const OpColumns o = operation(c.kernel).columns(c);
  return {
      std::string(to_string(c.kernel)),
      std::string(to_string(c.variant)),
      csv_quoted(c.sweep),
      std::to_string(c.num_tokens),
      std::to_string(c.num_heads),
      std::to_string(o.head_dim),
      std::to_string(o.rope_dim),
      std::to_string(o.block_size),
      std::string(to_string(c.in_dtype)),
      std::string(to_string(c.out_dtype)),
      std::string(to_string(o.layout)),
      std::string(to_string(o.scale)),
      o.swa ? "true" : "false",
      o.kv_interleaved ? "true" : "false",
      std::string(to_string(c.strides)),
      std::string(to_string(o.slots)),
  };
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> v = {"schema_version"};
    for (const auto& c : case_columns()) v.push_back(c);
    for (const char* c : {"status",
                          "reason",
                          "mismatches",
                          "written_tokens",
                          "bytes",
                          "mode",
                          "buffer_sets",
                          "samples",
                          "launches_per_sample",
                          "converged",
                          "median_us",
                          "mean_us",
                          "min_us",
                          "max_us",
                          "p10_us",
                          "p90_us",
                          "rel_stdev",
                          "median_ci_rel",
                          "gbps",
                          "pct_of_measured_peak",
                          "pct_of_theoretical_peak",
                          "sm_clock_mhz",
                          "clock_low",
                          "device",
                          "device_uuid",
                          "git_sha",
                          "git_dirty"})
      v.emplace_back(c);
    return v;
  }();
  return cols;
}

std::string join_csv(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

std::string csv_header() { return join_csv(csv_columns()); }

std::string csv_line(const Row& r) {
  std::vector<std::string> f = {std::to_string(kSchemaVersion)};
  for (auto& v : case_fields(r.c)) f.push_back(std::move(v));
  for (auto v :
       {std::string(to_string(r.status)), csv_quoted(r.reason), std::to_string(r.mismatches),
        std::to_string(r.written_tokens), std::to_string(r.bytes),
        r.mode ? std::string(to_string(*r.mode)) : std::string(), std::to_string(r.buffer_sets)})
    f.push_back(std::move(v));
  if (r.timed) {
    const Stats& s = r.stats;
    const auto known = [](double v, int digits) {
      return v > 0 ? fixed(v, digits) : std::string();
    };
    for (auto v :
         {std::to_string(s.samples), std::to_string(r.launches_per_sample),
          std::string(r.converged ? "true" : "false"), fixed(s.median_us, 3), fixed(s.mean_us, 3),
          fixed(s.min_us, 3), fixed(s.max_us, 3), fixed(s.p10_us, 3), fixed(s.p90_us, 3),
          fixed(s.rel_stdev, 5),
          std::isfinite(s.median_ci_rel) ? fixed(s.median_ci_rel, 5) : std::string(),
          fixed(r.gbps, 1), known(r.pct_of_measured_peak, 1), known(r.pct_of_theoretical_peak, 1),
          known(r.sm_clock_mhz, 0), std::string(r.clock_low ? "true" : "false")})
      f.push_back(v);
  } else {
    f.resize(f.size() + kTimingColumns);  // timing columns stay empty for untimed rows
  }
  f.push_back(csv_quoted(r.device));
  f.push_back(r.device_uuid);
  f.push_back(r.git_sha);
  f.push_back(r.git_dirty ? "true" : "false");
  return join_csv(f);
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

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        fields.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

}  // namespace kvbench
