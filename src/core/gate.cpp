#include "core/gate.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace kvbench {
namespace {

std::string axis(const ResultRow& row, const char* name) {
  const auto& cols = result_axis_columns();
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return row.axes[i];
  return "";
}

using Key = std::vector<std::string>;

Key key_of(const ResultRow& row, bool with_device) {
  Key k = row.axes;
  if (with_device) k.push_back(row.device);
  return k;
}

std::string key_text(const ResultRow& row) {
  return axis(row, "kernel") + " " + axis(row, "variant") + " " + axis(row, "sweep") + " " +
         describe_axes(row) + " on '" + row.device + "'";
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
    case Verdict::faster:
      return 3;
    case Verdict::added:
      return 4;
    case Verdict::unknown:
      return 5;
    case Verdict::same:
      return 6;
  }
  return 7;
}

// Maps each key to its row index; refuses duplicates, naming up to three of them.
std::map<Key, std::size_t> index_rows(const ResultTable& t, bool with_device, const char* role) {
  std::map<Key, std::size_t> index;
  std::vector<std::string> dups;
  std::size_t dup_count = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto [it, inserted] = index.emplace(key_of(t.rows[i], with_device), i);
    if (inserted) continue;
    if (++dup_count <= 3)
      dups.push_back("lines " + std::to_string(t.rows[it->second].line) + " and " +
                     std::to_string(t.rows[i].line) + " (" + key_text(t.rows[i]) + ")");
  }
  if (dup_count == 0) return index;
  std::string msg = t.path + ": " + role + " has " + std::to_string(dup_count) +
                    " duplicate case key" + (dup_count > 1 ? "s" : "") + ": ";
  for (std::size_t i = 0; i < dups.size(); ++i) msg += (i ? "; " : "") + dups[i];
  if (dup_count > dups.size()) msg += "; and " + std::to_string(dup_count - dups.size()) + " more";
  throw GateError(msg);
}

std::string percent(double fraction, bool sign) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string micros(const std::optional<ResultRow>& r) {
  if (!r || !r->timing) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r->timing->median_us);
  return buf;
}

// Markdown table cells: no pipes or newlines, bounded length.
std::string cell(std::string s, std::size_t max = 120) {
  for (char& ch : s)
    if (ch == '|' || ch == '\n' || ch == '\r') ch = ch == '|' ? '/' : ' ';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string xml(const std::string& s) {
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

double spread(const Timing& t) { return t.median_us > 0 ? (t.p90_us - t.p10_us) / t.median_us : 0; }

Verdict judge(const Timing& b, const Timing& c, double threshold, double* tolerance) {
  const double band = std::max({threshold, spread(b), spread(c)});
  if (tolerance) *tolerance = band;
  if (c.median_us > b.median_us * (1 + band)) return Verdict::slower;
  if (b.median_us > c.median_us * (1 + band)) return Verdict::faster;
  return Verdict::same;
}

std::string describe_axes(const ResultRow& row) {
  const bool concat = axis(row, "kernel") == "concat_and_cast_mha_k";
  std::string s = "T=" + axis(row, "num_tokens") + " H=" + axis(row, "num_heads");
  if (concat) {
    s += " NOPE=" + axis(row, "head_dim") + " ROPE=" + axis(row, "rope_dim");
  } else {
    s += " D=" + axis(row, "head_dim") + " BS=" + axis(row, "block_size") + " " +
         axis(row, "layout");
  }
  s += " " + axis(row, "in_dtype") + "->" + axis(row, "out_dtype") +
       " strides=" + axis(row, "strides");
  if (!concat) {
    s += " scale=" + axis(row, "scale") + " slots=" + axis(row, "slots");
    if (axis(row, "swa") == "true") s += " swa";
    if (axis(row, "kv_interleaved") == "true") s += " kv_interleaved";
  }
  return s;
}

GateReport run_gate(const ResultTable& baseline, const ResultTable& current,
                    const GateOptions& opt) {
  if (baseline.rows.empty())
    throw GateError(baseline.path + ": baseline has no rows; nothing to gate against");
  if (!opt.allow_device_mismatch) {
    std::set<std::string> base_devices;
    for (const auto& r : baseline.rows) base_devices.insert(r.device);
    for (const auto& r : current.rows)
      if (!base_devices.count(r.device))
        throw GateError("device mismatch: " + current.path + ":" + std::to_string(r.line) +
                        " ran on '" + r.device + "', the baseline " + baseline.path + " on '" +
                        *base_devices.begin() + "' (--allow-device-mismatch compares anyway)");
  }
  const bool with_device = !opt.allow_device_mismatch;
  const auto base_index = index_rows(baseline, with_device, "baseline");
  const auto cur_index = index_rows(current, with_device, "current");

  GateReport rep;
  rep.baseline_path = baseline.path;
  rep.current_path = current.path;
  rep.baseline_rows = baseline.rows.size();
  rep.current_rows = current.rows.size();
  rep.threshold = opt.threshold;
  for (const auto& cur : current.rows) {
    CaseVerdict v;
    v.current = cur;
    const auto it = base_index.find(key_of(cur, with_device));
    if (it != base_index.end()) v.baseline = baseline.rows[it->second];
    if (is_failure(cur.status)) {
      v.verdict = Verdict::incorrect;
      v.note = std::string(to_string(cur.status)) + (cur.reason.empty() ? "" : ": " + cur.reason);
    } else if (!v.baseline) {
      v.verdict = Verdict::added;
    } else if (!v.baseline->timing || !cur.timing || v.baseline->timing->median_us <= 0) {
      v.verdict = Verdict::unknown;
      v.note = "not timed: baseline " + std::string(to_string(v.baseline->status)) + ", current " +
               std::string(to_string(cur.status));
      if (!cur.reason.empty()) v.note += " (" + cur.reason + ")";
    } else {
      v.verdict = judge(*v.baseline->timing, *cur.timing, opt.threshold, &v.tolerance);
      v.ratio = cur.timing->median_us / v.baseline->timing->median_us;
    }
    rep.cases.push_back(std::move(v));
  }
  for (const auto& base : baseline.rows) {
    if (cur_index.count(key_of(base, with_device))) continue;
    CaseVerdict v;
    v.verdict = Verdict::missing;
    v.baseline = base;
    v.note = current.rows.empty() ? "the current CSV has no rows" : "not in the current CSV";
    rep.cases.push_back(std::move(v));
  }
  std::set<std::string> base_boards, cur_boards;
  for (const auto& c : rep.cases)
    if (c.baseline && c.current && !c.baseline->device_uuid.empty() &&
        !c.current->device_uuid.empty() && c.baseline->device_uuid != c.current->device_uuid) {
      base_boards.insert(c.baseline->device_uuid);
      cur_boards.insert(c.current->device_uuid);
    }
  if (!base_boards.empty()) {
    const auto join = [](const std::set<std::string>& s) {
      std::string out;
      for (const auto& u : s) out += (out.empty() ? "" : ", ") + u;
      return out;
    };
    rep.board_note = "other board: the baseline ran on " + join(base_boards) + ", the current on " +
                     join(cur_boards) +
                     "; boards of one model differ by a few percent on the smallest cases";
  }
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
  if (current_rows == 0 || n(Verdict::incorrect) > 0 || n(Verdict::missing) > 0)
    return kGateInvalid;
  if (n(Verdict::slower) > 0) return kGateRegression;
  return kGatePass;
}

std::string GateReport::summary() const {
  std::string s = std::to_string(cases.size()) + " cases:";
  bool first = true;
  for (Verdict v : all_values<Verdict>()) {
    const auto it = counts.find(v);
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
      return s + (current_rows == 0 ? " -> FAIL (exit 2: the current CSV has no rows)"
                                    : " -> FAIL (exit 2: incorrect or missing cases)");
  }
}

std::string markdown_report(const GateReport& r) {
  std::string s = "### kvbench compare: " + r.summary() + "\n\n";
  s += "Baseline `" + r.baseline_path + "` (" + std::to_string(r.baseline_rows) +
       " rows), current `" + r.current_path + "` (" + std::to_string(r.current_rows) +
       " rows); threshold " + percent(r.threshold, false) +
       " or the rows' own p10-p90 spread, whichever is larger.\n\n";
  if (!r.board_note.empty()) s += "Note: " + r.board_note + ".\n\n";
  s += "| verdict | kernel | variant | sweep | case | device | baseline us | current us | change | "
       "tolerance | note |\n";
  s += "|---|---|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& v : r.cases) {
    const ResultRow& row = any_row(v);
    const bool verdict_bold = v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
                              v.verdict == Verdict::missing;
    const std::string name(to_string(v.verdict));
    s += "| " + (verdict_bold ? "**" + name + "**" : name) + " | " + cell(axis(row, "kernel")) +
         " | " + cell(axis(row, "variant")) + " | " + cell(axis(row, "sweep")) + " | " +
         cell(describe_axes(row)) + " | " + cell(row.device) + " | " + micros(v.baseline) + " | " +
         micros(v.current) + " | " + change_text(v) + " | " +
         (v.tolerance > 0 ? percent(v.tolerance, false) : "") + " | " + cell(v.note) + " |\n";
  }
  return s + "\n" + r.summary() + "\n";
}

std::string junit_report(const GateReport& r) {
  int failures = 0, skipped = 0;
  for (const auto& v : r.cases) {
    failures += v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
                v.verdict == Verdict::missing;
    skipped += v.verdict == Verdict::unknown;
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
    s += "    <testcase classname=\"kvbench." + xml(axis(row, "kernel")) + "." +
         xml(axis(row, "variant")) + "\" name=\"" +
         xml(axis(row, "sweep") + " " + describe_axes(row)) + "\" time=\"" + time + "\">";
    const std::string msg = xml(message(v));
    const std::string type(to_string(v.verdict));
    if (v.verdict == Verdict::slower || v.verdict == Verdict::incorrect ||
        v.verdict == Verdict::missing)
      s += "\n      <failure type=\"" + type + "\" message=\"" + msg + "\">" + msg +
           "</failure>\n    ";
    else if (v.verdict == Verdict::unknown)
      s += "\n      <skipped message=\"" + msg + "\"/>\n    ";
    else
      s += "\n      <system-out>" + msg + "</system-out>\n    ";
    s += "</testcase>\n";
  }
  return s + "  </testsuite>\n</testsuites>\n";
}

}  // namespace kvbench
