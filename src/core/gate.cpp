#include "core/gate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/operation.hpp"
#include "core/sample_verdict.hpp"
#include "core/text.hpp"

namespace kvbench {
namespace {

bool same_key(const ResultRow& a, const ResultRow& b, bool with_device) {
  return a.axes == b.axes && (!with_device || a.device == b.device);
}

std::uint64_t key_hash(const ResultRow& r, bool with_device) {
  std::uint64_t h = r.axes.hash();
  if (with_device) h = (h ^ r.device.id()) * 0x100000001B3ull;
  return h;
}

std::string key_text(const ResultRow& row) {
  return row.axes[Col::kernel] + " " + row.axes[Col::variant] + " " + row.axes[Col::sweep] + " " +
         describe_axes(row) + " on '" + row.device + "'";
}

// How a timed row was timed, as the timing-mismatch message shows it: "in graph mode over 61
// buffer sets". A row without a mode column (hand-written CSVs) matches any mode.
std::string timing_text(const ResultRow& r) {
  return (r.mode.empty() ? std::string() : "in " + r.mode.str() + " mode ") + "over " +
         std::to_string(r.buffer_sets) + " buffer set" + (r.buffer_sets == 1 ? "" : "s") +
         (r.context.empty() ? std::string() : " in context " + r.context.str()) +
         (r.timer.empty() ? std::string() : " by the " + r.timer.str() + " timer");
}

// A row of no stated mode, context or timer (an older schema, a hand-written CSV) matches any.
bool timed_alike(const ResultRow& a, const ResultRow& b) {
  return a.buffer_sets == b.buffer_sets && (a.mode.empty() || b.mode.empty() || a.mode == b.mode) &&
         (a.context.empty() || b.context.empty() || a.context == b.context) &&
         (a.timer.empty() || b.timer.empty() || a.timer == b.timer);
}

bool is_failure(Status s) {
  return s == Status::incorrect || s == Status::failed || s == Status::rejected;
}

// Severity order of the report: what needs attention first.
int rank(Verdict v) {
  switch (v) {
    case Verdict::incorrect:
      return 0;
    case Verdict::missing:
      return 1;
    case Verdict::slower:
      return 2;
    case Verdict::ambiguous:
      return 3;
    case Verdict::faster:
      return 4;
    case Verdict::added:
      return 5;
    case Verdict::unknown:
      return 6;
    case Verdict::same:
      return 7;
  }
  return 8;
}

// Rows of one table by case key: (hash, row index) pairs sorted, 16 bytes a row. Refuses
// duplicate keys, naming up to three of them in file order.
class RowIndex {
 public:
  RowIndex(const ResultTable& t, bool with_device, const char* role)
      : t_(t), with_device_(with_device) {
    entries_.reserve(t.rows.size());
    for (std::size_t i = 0; i < t.rows.size(); ++i)
      entries_.emplace_back(key_hash(t.rows[i], with_device), i);
    std::sort(entries_.begin(), entries_.end());
    std::vector<std::pair<std::size_t, std::size_t>> dups;  // (later, earlier) row indices
    for (std::size_t a = 0; a < entries_.size();) {
      std::size_t b = a;
      while (b < entries_.size() && entries_[b].first == entries_[a].first) ++b;
      for (std::size_t j = a + 1; j < b; ++j)
        for (std::size_t i = a; i < j; ++i)
          if (same_key(t.rows[entries_[i].second], t.rows[entries_[j].second], with_device)) {
            dups.emplace_back(entries_[j].second, entries_[i].second);
            break;
          }
      a = b;
    }
    if (dups.empty()) return;
    std::sort(dups.begin(), dups.end());
    std::string msg = t.path + ": " + role + " has " + std::to_string(dups.size()) +
                      " duplicate case key" + (dups.size() > 1 ? "s" : "") + ": ";
    for (std::size_t k = 0; k < dups.size() && k < 3; ++k)
      msg += (k ? "; " : "") + std::string("lines ") + std::to_string(t.rows[dups[k].second].line) +
             " and " + std::to_string(t.rows[dups[k].first].line) + " (" +
             key_text(t.rows[dups[k].first]) + ")";
    if (dups.size() > 3) msg += "; and " + std::to_string(dups.size() - 3) + " more";
    throw GateError(msg);
  }

  // The row with `r`'s key, or nullptr.
  const ResultRow* find(const ResultRow& r) const {
    const std::uint64_t h = key_hash(r, with_device_);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(h, std::size_t{0}));
    for (; it != entries_.end() && it->first == h; ++it)
      if (same_key(t_.rows[it->second], r, with_device_)) return &t_.rows[it->second];
    return nullptr;
  }

 private:
  const ResultTable& t_;
  bool with_device_;
  std::vector<std::pair<std::uint64_t, std::size_t>> entries_;
};

std::string percent(double fraction, bool sign) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string micros(const ResultRow* r) {
  if (!r || !r->timing) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r->timing->median_us);
  return buf;
}

// Text from a CSV as it may be printed: well-formed UTF-8 ('?' for any other byte), control
// characters (escape sequences, newlines) a space.
std::string printable(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char(s, i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += n == 0 ? "?" : n == 1 && (c < 0x20 || c == 0x7F) ? " " : s.substr(i, n);
    i += n == 0 ? 1 : n;
  }
  return out;
}

// Markdown table cells: printable, no pipes, bounded length.
std::string cell(std::string s, std::size_t max = 120) {
  s = printable(s);
  for (char& ch : s)
    if (ch == '|') ch = '/';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string xml(const std::string& text) {
  // XML 1.0 holds neither U+FFFE nor U+FFFF.
  std::string s = printable(text);
  for (const char* bad : {"\xEF\xBF\xBE", "\xEF\xBF\xBF"})
    for (std::size_t at; (at = s.find(bad)) != std::string::npos;) s.replace(at, 3, "?");
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0.
        out += (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') ? ' ' : ch;
    }
  }
  return out;
}

const ResultRow& any_row(const CaseVerdict& v) { return v.current ? *v.current : *v.baseline; }

std::string change_text(const CaseVerdict& v) {
  if (v.ratio <= 0) return "";
  return percent(v.ratio - 1, true);
}

// The failure message of a case: what a CI reader needs to see first.
std::string message(const CaseVerdict& v) {
  if (v.from_samples)
    return std::string(to_string(v.verdict)) + ": " + v.note + ", threshold " +
           percent(v.tolerance, false);
  switch (v.verdict) {
    case Verdict::slower:
    case Verdict::faster:
    case Verdict::same:
      return std::string(to_string(v.verdict)) + ": " + micros(v.baseline) + " -> " +
             micros(v.current) + " us (" + change_text(v) + ", tolerance " +
             percent(v.tolerance, false) + ")";
    default:
      return std::string(to_string(v.verdict)) + (v.note.empty() ? "" : ": " + v.note);
  }
}

}  // namespace

namespace {

const SampleSet* samples_of(const std::map<std::vector<std::string>, SampleSet>* m,
                            const ResultRow& row) {
  if (!m) return nullptr;
  const auto it = m->find(std::vector<std::string>(row.axes));
  return it == m->end() || it->second.samples_us.empty() ? nullptr : &it->second;
}

// A timed pair with samples on both sides: its verdict from them, at `threshold`.
void judge_by_samples(CaseVerdict& v, double threshold, const GateOptions& opt) {
  const SampleSet* b = samples_of(opt.baseline_samples, *v.baseline);
  const SampleSet* c = samples_of(opt.current_samples, *v.current);
  if (!b || !c) return;
  const SampleJudgement j = judge_samples(b->samples_us, timer_step(b->samples_us), c->samples_us,
                                          timer_step(c->samples_us), threshold);
  v.verdict = j.verdict;
  v.ratio = j.ratio;
  v.tolerance = threshold;
  v.from_samples = true;
  char text[160];
  std::snprintf(text, sizeof text,
                "trimmed means %.4g -> %.4g us, %+.2f%% [%+.2f%%, %+.2f%%] at 99.9%%, %zu and %zu "
                "samples",
                j.baseline.mean_us, j.current.mean_us, 100 * (j.ratio - 1), 100 * (j.lo - 1),
                100 * (j.hi - 1), j.baseline.n, j.current.n);
  v.note = text;
}

}  // namespace

double spread(const Timing& t) { return t.median_us > 0 ? (t.p90_us - t.p10_us) / t.median_us : 0; }

Verdict judge(const Timing& b, const Timing& c, double threshold, double* tolerance) {
  const double band = std::max(threshold, std::min(kMaxNoiseBand, std::max(spread(b), spread(c))));
  if (tolerance) *tolerance = band;
  if (c.median_us > b.median_us * (1 + band)) return Verdict::slower;
  if (b.median_us > c.median_us * (1 + band)) return Verdict::faster;
  return Verdict::same;
}

std::string describe_axes(const ResultRow& row) {
  Kernel kernel;
  try {
    kernel = from_string<Kernel>(row.axes[Col::kernel]);
  } catch (const std::invalid_argument&) {
    // An operation this build does not know (a row of another build): the key's columns by name.
    std::string s;
    for (std::size_t i = 0; i < kKeyColumnCount; ++i) {
      const auto c = static_cast<Col>(kFirstKeyColumn + i);
      if (c == Col::kernel || c == Col::variant || c == Col::sweep) continue;  // named apart
      s += (s.empty() ? "" : " ") + std::string(name(c)) + "=" + row.axes[c];
    }
    return s;
  }
  return operation(kernel).describe_key(
      [&row](Col c) -> const std::string& { return row.axes[c]; });
}

namespace {

// check_baseline's checks, returning the baseline's index (built once: it is the costly part).
RowIndex checked_baseline(const ResultTable& baseline, const GateOptions& opt) {
  if (baseline.rows.empty())
    throw GateError(baseline.path + ": baseline has no rows; nothing to gate against");
  if (std::none_of(baseline.rows.begin(), baseline.rows.end(),
                   [](const ResultRow& r) { return r.timing.has_value(); }))
    throw GateError(baseline.path + ": baseline has no timed row; nothing to gate against");
  return RowIndex(baseline, !opt.allow_device_mismatch, "baseline");
}

}  // namespace

ResultTable rows_of_variant(const ResultTable& table, const std::string& keep,
                            const std::string& as) {
  ResultTable out;
  out.path = table.path;
  const Text want(keep);
  for (const ResultRow& r : table.rows)
    if (Text(r.axes[Col::variant]) == want) {
      out.rows.push_back(r);
      out.rows.back().axes.at(Col::variant) = Text(as);
    }
  if (out.rows.empty())
    throw GateError(table.path + ": no rows of variant '" + keep + "' (--variants)");
  return out;
}

void check_baseline(const ResultTable& baseline, const GateOptions& opt) {
  checked_baseline(baseline, opt);
}

namespace {

// Every current row ran on a device the baseline ran on, unless told to compare anyway.
void check_devices(const ResultTable& baseline, const ResultTable& current) {
  std::set<std::string> base_devices;
  for (const auto& r : baseline.rows) base_devices.insert(r.device);
  for (const auto& r : current.rows)
    if (!base_devices.count(r.device))
      throw GateError("device mismatch: " + current.path + ":" + std::to_string(r.line) +
                      " ran on '" + r.device + "', the baseline " + baseline.path + " on '" +
                      *base_devices.begin() + "' (--allow-device-mismatch compares anyway)");
}

// Rows of one case timed differently (another mode or buffer-set count) measure different
// things: refused like a device mismatch, naming the first pair (docs/gate.md).
void check_timed_alike(const ResultTable& baseline, const RowIndex& base_index,
                       const ResultTable& current) {
  std::size_t timed_apart = 0;
  std::string first_apart;
  for (const auto& cur : current.rows) {
    const ResultRow* base = cur.timing ? base_index.find(cur) : nullptr;
    if (!base || !base->timing || timed_alike(*base, cur)) continue;
    if (timed_apart++ == 0)
      first_apart = current.path + ":" + std::to_string(cur.line) + " was timed " +
                    timing_text(cur) + ", its baseline row " + baseline.path + ":" +
                    std::to_string(base->line) + " " + timing_text(*base);
  }
  if (timed_apart)
    throw GateError("timing mismatch: " + first_apart +
                    (timed_apart > 1 ? " (and " + std::to_string(timed_apart - 1) + " more rows)"
                                     : std::string()) +
                    "; rows timed differently are not compared (run with the baseline's "
                    "settings.mode, settings.rotate, settings.context and settings.timer)");
}

// The verdict of one current row against its baseline row (nullptr: none).
CaseVerdict verdict_of(const ResultRow& cur, const ResultRow* baseline, const GateOptions& opt) {
  CaseVerdict v;
  v.current = &cur;
  v.baseline = baseline;
  if (is_failure(cur.status)) {
    v.verdict = Verdict::incorrect;
    v.note = std::string(to_string(cur.status)) + (cur.reason.empty() ? "" : ": " + cur.reason);
  } else if (!v.baseline) {
    v.verdict = Verdict::added;
  } else if (v.baseline->timing && v.baseline->timing->median_us > 0 && !cur.timing) {
    // Timed before, not now: the measurement is missing (exit 2), not merely unknown.
    v.verdict = Verdict::missing;
    v.note = "timed in the baseline, not in the current run (" +
             std::string(to_string(cur.status)) + (cur.reason.empty() ? "" : ": " + cur.reason) +
             ")";
  } else if (!v.baseline->timing || !cur.timing || v.baseline->timing->median_us <= 0) {
    v.verdict = Verdict::unknown;
    v.note = "not timed: baseline " + std::string(to_string(v.baseline->status)) + ", current " +
             std::string(to_string(cur.status));
    if (!cur.reason.empty()) v.note += " (" + cur.reason + ")";
  } else {
    const bool other_board = !v.baseline->device_uuid.empty() && !cur.device_uuid.empty() &&
                             v.baseline->device_uuid != cur.device_uuid;
    const double threshold =
        other_board ? std::max(opt.threshold, opt.other_board_threshold) : opt.threshold;
    v.verdict = judge(*v.baseline->timing, *cur.timing, threshold, &v.tolerance);
    v.ratio = cur.timing->median_us / v.baseline->timing->median_us;
    judge_by_samples(v, threshold, opt);
  }
  return v;
}

// The report's note when some cases ran on another board than their baseline rows.
std::string board_note(const std::vector<CaseVerdict>& cases, const GateOptions& opt) {
  std::set<std::string> base_boards, cur_boards;
  for (const auto& c : cases)
    if (c.baseline && c.current && !c.baseline->device_uuid.empty() &&
        !c.current->device_uuid.empty() && c.baseline->device_uuid != c.current->device_uuid) {
      base_boards.insert(c.baseline->device_uuid);
      cur_boards.insert(c.current->device_uuid);
    }
  if (base_boards.empty()) return "";
  const auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& u : s) out += (out.empty() ? "" : ", ") + u;
    return out;
  };
  return "other board: the baseline ran on " + join(base_boards) + ", the current on " +
         join(cur_boards) + "; those cases are judged at the other-board threshold (" +
         std::to_string(static_cast<int>(
             std::lround(100 * std::max(opt.threshold, opt.other_board_threshold)))) +
         "%): boards of one model differ by up to 6% on unchanged code";
}

}  // namespace

GateReport run_gate(const ResultTable& baseline, const ResultTable& current,
                    const GateOptions& opt) {
  const RowIndex base_index = checked_baseline(baseline, opt);
  if (!opt.allow_device_mismatch) check_devices(baseline, current);
  const RowIndex cur_index(current, !opt.allow_device_mismatch, "current");
  check_timed_alike(baseline, base_index, current);

  GateReport rep;
  rep.baseline_path = baseline.path;
  rep.current_path = current.path;
  rep.baseline_rows = baseline.rows.size();
  rep.current_rows = current.rows.size();
  rep.threshold = opt.threshold;
  rep.cases.reserve(current.rows.size());
  for (const auto& cur : current.rows) {
    rep.current_timed += cur.timing.has_value();
    rep.cases.push_back(verdict_of(cur, base_index.find(cur), opt));
  }
  for (const auto& base : baseline.rows) {
    if (cur_index.find(base)) continue;
    CaseVerdict v;
    v.verdict = Verdict::missing;
    v.baseline = &base;
    v.note = current.rows.empty() ? "the current CSV has no rows" : "not in the current CSV";
    rep.cases.push_back(std::move(v));
  }
  rep.board_note = board_note(rep.cases, opt);
  std::stable_sort(
      rep.cases.begin(), rep.cases.end(),
      [](const CaseVerdict& a, const CaseVerdict& b) { return rank(a.verdict) < rank(b.verdict); });
  for (Verdict v : all_values<Verdict>()) rep.counts[v] = 0;
  for (const auto& c : rep.cases) ++rep.counts[c.verdict];
  return rep;
}

int GateReport::exit_code() const {
  const auto n = [&](Verdict v) {
    auto it = counts.find(v);
    return it == counts.end() ? 0 : it->second;
  };
  if (current_rows == 0 || current_timed == 0 || n(Verdict::incorrect) > 0 ||
      n(Verdict::missing) > 0)
    return kGateInvalid;
  if (n(Verdict::slower) > 0) return kGateRegression;
  return kGatePass;
}

std::string GateReport::summary() const {
  std::string s = std::to_string(cases.size()) + " cases:";
  bool first = true;
  for (Verdict v : all_values<Verdict>()) {
    const auto it = counts.find(v);
    if (v == Verdict::ambiguous && (it == counts.end() || it->second == 0))
      continue;  // only verdicts from samples
    s += std::string(first ? " " : ", ") + std::to_string(it == counts.end() ? 0 : it->second) +
         " " + std::string(to_string(v));
    first = false;
  }
  switch (exit_code()) {
    case kGatePass:
      return s + " -> PASS (exit 0)";
    case kGateRegression:
      return s + " -> FAIL (exit 1: performance regression)";
    default:
      if (current_rows == 0) return s + " -> FAIL (exit 2: the current CSV has no rows)";
      if (current_timed == 0) return s + " -> FAIL (exit 2: the current CSV has no timed row)";
      return s + " -> FAIL (exit 2: incorrect or missing cases)";
  }
}

void markdown_report(const GateReport& r, std::ostream& out) {
  out << "### kvbench compare: " << r.summary() << "\n\n";
  out << "Baseline `" << r.baseline_path << "` (" << r.baseline_rows << " rows), current `"
      << r.current_path << "` (" << r.current_rows << " rows); threshold "
      << percent(r.threshold, false) << " or the rows' own p10-p90 spread (at most "
      << percent(kMaxNoiseBand, false) << "), whichever is larger.\n\n";
  if (!r.board_note.empty()) out << "Note: " << r.board_note << ".\n\n";
  out << "| verdict | kernel | variant | sweep | case | device | baseline us | current us | "
         "change | tolerance | note |\n";
  out << "|---|---|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& v : r.cases) {
    const ResultRow& row = any_row(v);
    const bool verdict_bold = v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
                              v.verdict == Verdict::missing;
    const std::string name(to_string(v.verdict));
    out << "| " << (verdict_bold ? "**" + name + "**" : name) << " | "
        << cell(row.axes[Col::kernel]) << " | " << cell(row.axes[Col::variant]) << " | "
        << cell(row.axes[Col::sweep]) << " | " << cell(describe_axes(row)) << " | "
        << cell(row.device) << " | " << micros(v.baseline) << " | " << micros(v.current) << " | "
        << change_text(v) << " | " << (v.tolerance > 0 ? percent(v.tolerance, false) : "") << " | "
        << cell(v.note) << " |\n";
  }
  out << "\n" << r.summary() << "\n";
}

std::string markdown_report(const GateReport& r) {
  std::ostringstream out;
  markdown_report(r, out);
  return out.str();
}

std::string xml_escape(const std::string& text) { return xml(text); }

std::string junit_report(const GateReport& r) {
  int failures = 0, skipped = 0;
  for (const auto& v : r.cases) {
    failures += v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
                v.verdict == Verdict::missing;
    skipped += v.verdict == Verdict::unknown || v.verdict == Verdict::ambiguous;
  }
  const std::string counts = "tests=\"" + std::to_string(r.cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                             std::to_string(skipped) + "\"";
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<testsuites name=\"kvbench compare\" " + counts + ">\n";
  s += "  <testsuite name=\"kvbench compare " + xml(r.current_path) + " vs " +
       xml(r.baseline_path) + "\" " + counts + ">\n";
  for (const auto& v : r.cases) {
    const ResultRow& row = any_row(v);
    const double secs = v.current && v.current->timing ? v.current->timing->median_us * 1e-6 : 0;
    char time[32];
    std::snprintf(time, sizeof time, "%.9f", secs);
    s += "    <testcase classname=\"kvbench." + xml(row.axes[Col::kernel]) + "." +
         xml(row.axes[Col::variant]) + "\" name=\"" +
         xml(row.axes[Col::sweep] + " " + describe_axes(row)) + "\" time=\"" + time + "\">";
    const std::string msg = xml(message(v));
    const std::string type(to_string(v.verdict));
    if (v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
        v.verdict == Verdict::missing)
      s += "\n      <failure type=\"" + type + "\" message=\"" + msg + "\">" + msg +
           "</failure>\n    ";
    else if (v.verdict == Verdict::unknown || v.verdict == Verdict::ambiguous)
      s += "\n      <skipped message=\"" + msg + "\"/>\n    ";
    else
      s += "\n      <system-out>" + msg + "</system-out>\n    ";
    s += "</testcase>\n";
  }
  return s + "  </testsuite>\n</testsuites>\n";
}

}  // namespace kvbench
