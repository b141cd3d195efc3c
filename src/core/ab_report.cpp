#include "core/ab_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/csv.hpp"
#include "core/gate.hpp"

namespace kvbench {
namespace {

int severity(Verdict v) {
  switch (v) {
    case Verdict::incorrect:
      return 0;
    case Verdict::slower:
      return 1;
    case Verdict::ambiguous:
      return 2;
    case Verdict::faster:
      return 3;
    case Verdict::unknown:
      return 4;
    default:
      return 5;
  }
}

bool judged(const AbCase& c) { return c.judgement.ratio > 0; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string change(const AbCase& c) {
  if (!judged(c)) return "";
  return fmt("%+.2f%%", 100 * (c.judgement.ratio - 1)) + " [" +
         fmt("%+.2f%%", 100 * (c.judgement.lo - 1)) + ", " +
         fmt("%+.2f%%", 100 * (c.judgement.hi - 1)) + "]";
}

std::string message(const AbCase& c) {
  if (!judged(c)) return std::string(to_string(c.verdict)) + ": " + c.note;
  const SampleJudgement& j = c.judgement;
  return std::string(to_string(c.verdict)) + ": " + fmt("%.4g", j.baseline.mean_us) + " -> " +
         fmt("%.4g", j.current.mean_us) + " us (trimmed means; " + change(c) + " at 99.9%, " +
         std::to_string(c.rounds) + " rounds, " + std::to_string(j.baseline.n) + " and " +
         std::to_string(j.current.n) + " samples)" + (c.note.empty() ? "" : "; " + c.note);
}

std::vector<const AbCase*> by_severity(const AbReport& r) {
  std::vector<const AbCase*> out;
  for (const AbCase& c : r.cases) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const AbCase* a, const AbCase* b) {
    return severity(a->verdict) < severity(b->verdict);
  });
  return out;
}

bool failure(Verdict v) { return v == Verdict::slower || v == Verdict::incorrect; }
bool skipped(Verdict v) { return v == Verdict::ambiguous || v == Verdict::unknown; }

}  // namespace

int AbReport::exit_code() const {
  int code = 0;
  for (const AbCase& c : cases) {
    if (c.verdict == Verdict::incorrect) return 2;
    if (c.verdict == Verdict::slower) code = 1;
  }
  return code;
}

std::string AbReport::summary() const {
  std::map<Verdict, int> n;
  for (const AbCase& c : cases) ++n[c.verdict];
  std::string s = std::to_string(cases.size()) + " cases:";
  bool first = true;
  for (Verdict v : {Verdict::same, Verdict::slower, Verdict::faster, Verdict::ambiguous,
                    Verdict::unknown, Verdict::incorrect})
    if (n[v]) {
      s += std::string(first ? " " : ", ") + std::to_string(n[v]) + " " + std::string(to_string(v));
      first = false;
    }
  const int code = exit_code();
  return s + (code == 0 ? " -> PASS" : code == 1 ? " -> FAIL (slower)" : " -> FAIL (incorrect)");
}

std::string ab_markdown(const AbReport& r) {
  std::string s = "### kvbench ab: " + r.current + " against " + r.base + " on " + r.config +
                  fmt(", threshold %g%%\n\n", 100 * r.threshold);
  s += "| verdict | case | base us | current us | change [99.9% interval] | rounds | samples |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const AbCase* c : by_severity(r)) {
    const bool bold = failure(c->verdict);
    const std::string v(to_string(c->verdict));
    s += "| " + (bold ? "**" + v + "**" : v) + " | " + std::to_string(c->index) + " " + c->sweep +
         " " + c->description + " | ";
    if (judged(*c))
      s += fmt("%.4g", c->judgement.baseline.mean_us) + " | " +
           fmt("%.4g", c->judgement.current.mean_us) + " | " + change(*c) + " | " +
           std::to_string(c->rounds) + " | " + std::to_string(c->judgement.baseline.n) + " / " +
           std::to_string(c->judgement.current.n) + " |\n";
    else
      s += " |  | " + c->note + " | " + std::to_string(c->rounds) + " |  |\n";
  }
  return s + "\n" + r.summary() + "\n";
}

std::string ab_junit(const AbReport& r) {
  int failures = 0, skips = 0;
  for (const AbCase& c : r.cases) {
    failures += failure(c.verdict);
    skips += skipped(c.verdict);
  }
  const std::string counts = "tests=\"" + std::to_string(r.cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                             std::to_string(skips) + "\"";
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<testsuites name=\"kvbench ab\" " + counts + ">\n";
  s += "  <testsuite name=\"kvbench ab " + xml_escape(r.current) + " vs " + xml_escape(r.base) +
       "\" " + counts + ">\n";
  for (const AbCase& c : r.cases) {
    const double secs = judged(c) ? c.judgement.current.mean_us * 1e-6 : 0;
    s += "    <testcase classname=\"kvbench." + xml_escape(c.kernel) + "." + xml_escape(c.variant) +
         "\" name=\"" + xml_escape(std::to_string(c.index) + " " + c.sweep + " " + c.description) +
         "\" time=\"" + fmt("%.9f", secs) + "\">";
    const std::string msg = xml_escape(message(c));
    if (failure(c.verdict))
      s += "\n      <failure type=\"" + std::string(to_string(c.verdict)) + "\" message=\"" + msg +
           "\">" + msg + "</failure>\n    ";
    else if (skipped(c.verdict))
      s += "\n      <skipped message=\"" + msg + "\"/>\n    ";
    else
      s += "\n      <system-out>" + msg + "</system-out>\n    ";
    s += "</testcase>\n";
  }
  return s + "  </testsuite>\n</testsuites>\n";
}

std::string ab_csv(const AbReport& r) {
  std::string s =
      "case,kernel,variant,sweep,description,verdict,rounds,base_us,current_us,ratio,ratio_lo,"
      "ratio_hi,base_samples,current_samples,base_se_us,current_se_us,base_step_us,"
      "current_step_us,note\n";
  for (const AbCase& c : r.cases) {
    const SampleJudgement& j = c.judgement;
    std::vector<std::string> fields = {std::to_string(c.index),
                                       c.kernel,
                                       c.variant,
                                       c.sweep,
                                       c.description,
                                       std::string(to_string(c.verdict)),
                                       std::to_string(c.rounds),
                                       fmt("%.6g", j.baseline.mean_us),
                                       fmt("%.6g", j.current.mean_us),
                                       fmt("%.6g", j.ratio),
                                       fmt("%.6g", j.lo),
                                       fmt("%.6g", j.hi),
                                       std::to_string(j.baseline.n),
                                       std::to_string(j.current.n),
                                       fmt("%.6g", j.baseline.se_us),
                                       fmt("%.6g", j.current.se_us),
                                       fmt("%.6g", c.base_step_us),
                                       fmt("%.6g", c.current_step_us),
                                       c.note};
    for (std::string& f : fields) f = csv_quoted(f);
    s += join_csv(fields) + "\n";
  }
  return s;
}

}  // namespace kvbench
