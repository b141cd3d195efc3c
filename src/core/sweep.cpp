#include "core/sweep.hpp"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/checked.hpp"
#include "core/csv.hpp"
#include "core/operation.hpp"

namespace kvbench {
namespace {

// Structure checks yaml-cpp's node tree cannot make, on its event stream (aliases are events,
// not expanded, so a billion-laughs file costs nothing here): one document, scalar keys, no
// duplicate keys, bounded nesting, closed quotes.
class StructureCheck : public YAML::EventHandler {
 public:
  StructureCheck(const std::string& text, const std::string& source)
      : text_(text), source_(source) {
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(i + 1);
  }

  void OnDocumentStart(const YAML::Mark& mark) override { doc_mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { leaf(mark, "an empty value", ""); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { leaf(mark, "an alias", ""); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    check_quote(mark);
    leaf(mark, nullptr, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnMapEnd() override { close(); }

  const YAML::Mark& document_mark() const { return doc_mark_; }

 private:
  struct Level {
    bool is_map = false;
    std::string path;
    bool expect_key = true;
    std::string key;                   // the current key (maps)
    std::size_t index = 0;             // the current index (lists)
    std::map<std::string, int> lines;  // key -> line of its first use (maps)
  };

  [[noreturn]] void fail(const YAML::Mark& m, const std::string& path, const std::string& what) {
    std::ostringstream os;
    // A path through deep nesting is cut to its start: the line and column locate it.
    const std::string shown = path.size() > 80 ? path.substr(0, 77) + "..." : path;
    os << source_ << ':' << m.line + 1 << ':' << m.column + 1 << ": "
       << (shown.empty() ? "" : shown + ": ") << what;
    throw ConfigError(os.str());
  }

  std::string child_path() const {
    if (stack_.empty()) return "";
    const Level& top = stack_.back();
    if (top.is_map) return top.path.empty() ? top.key : top.path + "." + top.key;
    return top.path + "[" + std::to_string(top.index) + "]";
  }

  void value_done() {
    if (stack_.empty()) return;
    Level& top = stack_.back();
    if (top.is_map)
      top.expect_key = true;
    else
      ++top.index;
  }

  void count(const YAML::Mark& mark) {
    if (++nodes_ > kMaxYamlNodes)
      fail(mark, child_path(),
           "more than " + std::to_string(kMaxYamlNodes) +
               " YAML nodes (values, lists and mappings); not a sweep config");
  }

  // A scalar, alias or empty node: a key (only scalars) or a value.
  void leaf(const YAML::Mark& mark, const char* not_scalar, const std::string& value) {
    count(mark);
    if (!stack_.empty() && stack_.back().is_map && stack_.back().expect_key) {
      Level& top = stack_.back();
      if (not_scalar) fail(mark, top.path, std::string(not_scalar) + " used as a key");
      const std::string path = top.path.empty() ? value : top.path + "." + value;
      const auto [it, inserted] = top.lines.emplace(value, mark.line + 1);
      if (!inserted)
        fail(mark, path, "duplicate key (first at line " + std::to_string(it->second) + ")");
      top.key = value;
      top.expect_key = false;
      return;
    }
    value_done();
  }

  void open(const YAML::Mark& mark, bool is_map) {
    count(mark);
    if (!stack_.empty() && stack_.back().is_map && stack_.back().expect_key)
      fail(mark, stack_.back().path,
           std::string(is_map ? "a mapping" : "a list") + " used as a key");
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth)
      fail(mark, child_path(), "nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    Level level;
    level.is_map = is_map;
    level.path = child_path();
    stack_.push_back(std::move(level));
  }

  void close() {
    stack_.pop_back();
    value_done();
  }

  // yaml-cpp takes a quoted scalar cut off by the end of the file as closed; refuse it.
  void check_quote(const YAML::Mark& mark) {
    if (mark.line < 0 || static_cast<std::size_t>(mark.line) >= line_starts_.size()) return;
    const std::size_t pos =
        line_starts_[static_cast<std::size_t>(mark.line)] + static_cast<std::size_t>(mark.column);
    if (pos >= text_.size() || (text_[pos] != '"' && text_[pos] != '\'')) return;
    const char quote = text_[pos];
    for (std::size_t i = pos + 1; i < text_.size(); ++i) {
      if (quote == '"' && text_[i] == '\\') {
        ++i;
      } else if (text_[i] == quote) {
        if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
          ++i;
          continue;
        }
        return;
      }
    }
    fail(mark, child_path(),
         std::string("quoted string not closed (") + quote + " opened here, the file ends first)");
  }

  const std::string& text_;
  const std::string& source_;
  std::vector<std::size_t> line_starts_{0};  // offset of each line's first byte
  std::vector<Level> stack_;
  std::size_t nodes_ = 0;
  YAML::Mark doc_mark_;
};

// Runs StructureCheck over the whole text, every document: a second document is an error.
void check_structure(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  StructureCheck check(text, source);
  if (!parser.HandleNextDocument(check)) return;
  if (parser.HandleNextDocument(check)) {
    const YAML::Mark& m = check.document_mark();
    std::ostringstream os;
    os << source << ':' << m.line + 1 << ':' << m.column + 1
       << ": a second YAML document; a config is one document (remove the '---' or what "
          "follows)";
    throw ConfigError(os.str());
  }
}

std::string scalar_text(const YAML::Node& n) {
  return n.IsScalar() ? n.Scalar() : "<not a scalar>";
}

std::string where(const std::string& source, const YAML::Node& node, const std::string& path) {
  std::ostringstream os;
  os << source;
  const YAML::Mark m = node.Mark();
  if (m.line >= 0) os << ':' << m.line + 1 << ':' << m.column + 1;
  os << ": " << path;
  return os.str();
}

[[noreturn]] void fail(const std::string& source, const YAML::Node& node, const std::string& path,
                       const std::string& what) {
  throw ConfigError(where(source, node, path) + ": " + what);
}

// A config takes no explicit YAML tag: yaml-cpp reads `!!str 5` and `!foo 5` as 5, though the
// first says "a string" and the second names a type nobody defined. Refused, naming the tag.
void check_tags(const std::string& source, const YAML::Node& n, const std::string& path) {
  const std::string& tag = n.Tag();
  if (!tag.empty() && tag != "?" && tag != "!") {
    const std::string core = "tag:yaml.org,2002:";
    const std::string shown = tag.rfind(core, 0) == 0 ? "!!" + tag.substr(core.size()) : tag;
    fail(source, n, path.empty() ? "(top)" : path,
         shown == "!!str"
             ? "the tag !!str makes '" + scalar_text(n) +
                   "' a string; a config takes plain values (remove the tag)"
             : "unknown tag " + shown + "; a config takes plain values, no tags (remove it)");
  }
  if (n.IsSequence())
    for (std::size_t i = 0; i < n.size(); ++i)
      check_tags(source, n[i], path + "[" + std::to_string(i) + "]");
  if (n.IsMap())
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      check_tags(source, kv.first, path.empty() ? key : path + "." + key);
      check_tags(source, kv.second, path.empty() ? key : path + "." + key);
    }
}

// A quoted scalar ("128") is a string in YAML: where a number is expected it is refused, as a
// quoted "true" is where a boolean is.
bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

[[noreturn]] void fail_quoted(const std::string& source, const YAML::Node& n,
                              const std::string& path, const std::string& expected) {
  fail(source, n, path,
       "expected " + expected + ", got the quoted string '" + n.Scalar() + "' (drop the quotes)");
}

std::int64_t positive_int(const std::string& source, const YAML::Node& n, const std::string& path,
                          std::int64_t max = std::numeric_limits<std::int32_t>::max()) {
  std::int64_t v = 0;
  if (quoted(n)) fail_quoted(source, n, path, "a positive integer");
  if (!n.IsScalar() || !parse_int64(n.Scalar(), v))
    fail(source, n, path, "expected a positive integer, got '" + scalar_text(n) + "'");
  if (v <= 0 || v > max)
    fail(source, n, path,
         "expected a positive integer up to " + std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

// YAML 1.2's core schema: yaml-cpp also takes YAML 1.1's yes, no, on, off, y and n.
bool boolean(const std::string& source, const YAML::Node& n, const std::string& path) {
  const std::string t = n.IsScalar() && !quoted(n) ? n.Scalar() : "";
  if (t == "true" || t == "True" || t == "TRUE") return true;
  if (t == "false" || t == "False" || t == "FALSE") return false;
  fail(source, n, path, "expected true or false, got '" + scalar_text(n) + "'");
}

// The digits of a YAML 1.2 integer after its sign, in its base.
bool parse_magnitude(const std::string& text, std::size_t start, std::uint64_t& out) {
  int base = 10;
  if (text.compare(start, 2, "0x") == 0) {
    base = 16;
    start += 2;
  } else if (text.compare(start, 2, "0o") == 0) {
    base = 8;
    start += 2;
  }
  if (start >= text.size()) return false;
  const char* first = text.data() + start;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, out, base);
  return ec == std::errc() && end == last;
}

template <class E>
E enum_value(const std::string& source, const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(source, n, path, "expected one of " + joined_names<E>());
  try {
    return from_string<E>(n.Scalar());
  } catch (const std::invalid_argument& e) {
    fail(source, n, path, e.what());
  }
}

// Parses one YAML value of an axis into the case, by the axis's kind.
void apply_axis(const Axis& a, Case& c, const std::string& source, const YAML::Node& n,
                const std::string& path) {
  switch (a.kind) {
    case Axis::Kind::integer:
      a.set_int(c, positive_int(source, n, path));
      return;
    case Axis::Kind::boolean:
      a.set_bool(c, boolean(source, n, path));
      return;
    case Axis::Kind::enumeration:
      if (!n.IsScalar()) fail(source, n, path, "expected one of " + a.enum_names);
      try {
        a.set_enum(c, n.Scalar());
      } catch (const std::invalid_argument& e) {
        fail(source, n, path, e.what());
      }
      return;
  }
}

void check_keys(const std::string& source, const YAML::Node& map, const std::string& path,
                const std::vector<std::string>& known) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const auto& k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(source, kv.first, path.empty() ? key : path + "." + key,
           "unknown key (expected one of " + list + ")");
    }
  }
}

// YAML merge keys (`<<: *anchor`), which yaml-cpp leaves to the application: entries of the
// merged map(s) first (of a list of maps, an earlier map's key wins, as the merge-key rule says),
// then the map's own entries override them. Value nodes keep their marks.
// Keys are checked against `known` in each source map, where they still have their marks (the
// merged map's keys are new nodes without one).
YAML::Node with_merge_keys(const std::string& source, const YAML::Node& map,
                           const std::string& path, const std::vector<std::string>& known) {
  if (!map.IsMap() || !map["<<"]) return map;
  YAML::Node out(YAML::NodeType::Map);
  const YAML::Node base = map["<<"];
  std::vector<std::string> own = known;
  own.push_back("<<");
  check_keys(source, map, path, own);
  std::set<std::string> merged;
  auto merge_one = [&](const YAML::Node& m) {
    if (!m.IsMap())
      fail(source, m, path + ".<<", "expected a mapping (or list of mappings) to merge");
    check_keys(source, m, path, known);
    for (const auto& kv : m)
      if (merged.insert(kv.first.as<std::string>()).second)
        out[kv.first.as<std::string>()] = kv.second;
  };
  if (base.IsSequence())
    for (const auto& m : base) merge_one(m);
  else
    merge_one(base);
  for (const auto& kv : map)
    if (kv.first.as<std::string>() != "<<") out[kv.first.as<std::string>()] = kv.second;
  return out;
}

// A number in (lo, hi], or [lo, hi] when `lo_inclusive`.
double number_in(const std::string& source, const YAML::Node& n, const std::string& path, double lo,
                 bool lo_inclusive, double hi) {
  double v = 0;
  if (quoted(n)) fail_quoted(source, n, path, "a number");
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v))
    fail(source, n, path, "expected a number, got '" + scalar_text(n) + "'");
  const bool ok = (lo_inclusive ? v >= lo : v > lo) && v <= hi;  // false for NaN
  if (!ok) {
    std::ostringstream range;
    range << (lo_inclusive ? "[" : "(") << lo << ", " << hi << "]";
    fail(source, n, path, "expected a number in " + range.str() + ", got " + n.Scalar());
  }
  return v;
}

RunSettings parse_settings(const std::string& source, const YAML::Node& n) {
  RunSettings s;
  if (!n) return s;
  if (!n.IsMap()) fail(source, n, "settings", "expected a mapping");
  check_keys(
      source, n, "settings",
      {"seed", "mode", "warmup", "min_samples", "min_time_s", "target_noise", "timeout_s",
       "launches_per_sample", "l2_flush", "rotate", "hot_inputs", "timer", "context", "layer_mib"});
  if (n["seed"]) {
    const YAML::Node v = n["seed"];
    if (quoted(v)) fail_quoted(source, v, "settings.seed", "a non-negative integer");
    if (!v.IsScalar() || !parse_uint64(v.Scalar(), s.seed))
      fail(source, v, "settings.seed",
           "expected a non-negative integer, got '" + scalar_text(v) + "'");
  }
  if (n["mode"]) s.mode = enum_value<TimingMode>(source, n["mode"], "settings.mode");
  if (n["l2_flush"]) s.l2_flush = enum_value<L2Flush>(source, n["l2_flush"], "settings.l2_flush");
  if (n["warmup"])
    s.warmup = static_cast<int>(positive_int(source, n["warmup"], "settings.warmup", kMaxWarmup));
  if (n["min_samples"])
    s.min_samples = static_cast<int>(
        positive_int(source, n["min_samples"], "settings.min_samples", kMaxMinSamples));
  if (n["launches_per_sample"])
    s.launches_per_sample = static_cast<int>(positive_int(
        source, n["launches_per_sample"], "settings.launches_per_sample", kMaxLaunchesPerSample));
  if (n["min_time_s"])
    s.min_time_s = number_in(source, n["min_time_s"], "settings.min_time_s", 0, true, kMaxTimeoutS);
  if (n["target_noise"])
    s.target_noise = number_in(source, n["target_noise"], "settings.target_noise", 0, false, 1);
  if (n["timeout_s"])
    s.timeout_s = number_in(source, n["timeout_s"], "settings.timeout_s", 0, false, kMaxTimeoutS);
  if (n["rotate"]) {
    if (quoted(n["rotate"]) && n["rotate"].Scalar() != "auto")
      fail_quoted(source, n["rotate"], "settings.rotate", "auto or an integer");
    try {
      s.rotate = parse_rotate(scalar_text(n["rotate"]));
    } catch (const std::invalid_argument& e) {
      fail(source, n["rotate"], "settings.rotate", e.what());
    }
  }
  if (n["hot_inputs"]) s.hot_inputs = boolean(source, n["hot_inputs"], "settings.hot_inputs");
  if (n["timer"]) s.timer = enum_value<Timer>(source, n["timer"], "settings.timer");
  if (n["context"]) s.context = enum_value<Context>(source, n["context"], "settings.context");
  if (n["layer_mib"])
    s.layer_mib =
        static_cast<int>(positive_int(source, n["layer_mib"], "settings.layer_mib", kMaxLayerMib));
  try {
    resolve_context(s);
  } catch (const std::invalid_argument& e) {
    fail(source, n["hot_inputs"], "settings.hot_inputs", e.what());
  }
  if (s.timer == Timer::cupti && s.mode != TimingMode::graph)
    fail(
        source, n["timer"] ? n["timer"] : n, "settings.timer",
        "cupti times graph replays only (settings.mode is " + std::string(to_string(s.mode)) + ")");
  return s;
}

// A sweep's header: its operation's default case, named by the sweep (or sweepN).
Case sweep_base(const std::string& source, const YAML::Node& sweep, const std::string& path,
                std::size_t index) {
  if (!sweep.IsMap()) fail(source, sweep, path, "expected a mapping with kernel and axes");
  check_keys(source, sweep, path, {"name", "kernel", "axes"});
  const YAML::Node kernel_node = sweep["kernel"];
  if (!kernel_node)
    fail(source, sweep, path + ".kernel",
         "missing (expected one of " + joined_names<Kernel>() + ")");
  const Operation& op = operation(enum_value<Kernel>(source, kernel_node, path + ".kernel"));
  Case base = op.default_case();
  base.sweep = "sweep" + std::to_string(index);
  if (sweep["name"]) {
    if (!sweep["name"].IsScalar() || sweep["name"].Scalar().empty())
      fail(source, sweep["name"], path + ".name", "expected a non-empty string");
    base.sweep = sweep["name"].Scalar();
    // A name is a CSV field written unquoted: no comma, quote or control character (a carriage
    // return would be rewritten in the row, and the row would not name the config's case).
    for (char ch : base.sweep)
      if (ch == ',' || ch == '"' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F)
        fail(source, sweep["name"], path + ".name",
             "must not contain commas, quotes or control characters (a newline, a tab)");
  }
  return base;
}

// Per axis of the operation: its values (one node each), validated now so errors point at the
// value. An axis the sweep does not name keeps no value (the default case's).
std::vector<std::vector<YAML::Node>> axis_values(const std::string& source, const YAML::Node& sweep,
                                                 const std::string& path, const Case& base) {
  const YAML::Node raw_axes = sweep["axes"];
  const std::vector<Axis>& specs = operation(base.kernel).axes();
  std::vector<std::string> names;
  for (const auto& a : specs) names.push_back(a.name);
  if (raw_axes && !raw_axes.IsMap())
    fail(source, raw_axes, path + ".axes", "expected a mapping of axis: value or [values]");
  const YAML::Node axes =
      raw_axes ? with_merge_keys(source, raw_axes, path + ".axes", names) : raw_axes;
  if (axes) check_keys(source, axes, path + ".axes", names);
  std::vector<std::vector<YAML::Node>> values(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string apath = path + ".axes." + specs[i].name;
    if (!axes) continue;  // a sweep without axes is one case of defaults
    const YAML::Node v = axes[specs[i].name];
    if (!v) continue;
    if (v.IsSequence()) {
      if (v.size() == 0) fail(source, v, apath, "empty list");
      for (std::size_t j = 0; j < v.size(); ++j) values[i].push_back(v[j]);
    } else {
      values[i].push_back(v);
    }
    Case probe = base;
    for (std::size_t j = 0; j < values[i].size(); ++j)
      apply_axis(specs[i], probe, source, values[i][j],
                 v.IsSequence() ? apath + "[" + std::to_string(j) + "]" : apath);
    if (specs[i].refuse)
      for (const auto& node : values[i])
        if (std::string why = specs[i].refuse(node.Scalar()); !why.empty())
          fail(source, node, apath, why);
  }
  return values;
}

// The case count of the axes' product, before expanding anything; refused past `budget`.
std::uint64_t case_count(const std::string& source, const YAML::Node& sweep,
                         const std::string& path, const std::vector<Axis>& specs,
                         const std::vector<std::vector<YAML::Node>>& values, std::uint64_t budget,
                         std::uint64_t max_cases) {
  std::uint64_t count = 1;
  bool over = false;
  std::string factors;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (values[i].size() <= 1) continue;
    factors +=
        (factors.empty() ? "" : " x ") + specs[i].name + " " + std::to_string(values[i].size());
    over = over || __builtin_mul_overflow(count, values[i].size(), &count);
  }
  if (over || count > budget)
    fail(source, sweep, path,
         "expands to " + (over ? std::string("more than 2^64") : std::to_string(count)) +
             " cases (" + (factors.empty() ? "one case" : factors) + ")" +
             (budget < max_cases
                  ? ", with " + std::to_string(max_cases - budget) + " cases before it"
                  : std::string()) +
             ", past the limit of " + std::to_string(max_cases) + " (--max-cases raises it)");
  return count;
}

// Cartesian product of the given axes, in the canonical order, last axis fastest.
// Validates every value of a sweep, then, if `budget` allows its case count (the product of its
// axis lengths, computed first), appends its cases and lowers `budget` by their number.
void expand_sweep(const std::string& source, const YAML::Node& sweep, const std::string& path,
                  std::vector<Case>& out, std::size_t index, std::uint64_t& budget,
                  std::uint64_t max_cases) {
  const Case base = sweep_base(source, sweep, path, index);
  const std::vector<Axis>& specs = operation(base.kernel).axes();
  const std::vector<std::vector<YAML::Node>> values = axis_values(source, sweep, path, base);
  const std::uint64_t count = case_count(source, sweep, path, specs, values, budget, max_cases);
  budget -= count;
  out.reserve(out.size() + count);

  std::vector<std::size_t> pos(specs.size(), 0);
  while (true) {
    Case c = base;
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!values[i].empty()) apply_axis(specs[i], c, source, values[i][pos[i]], "");
    try {
      check_sizes(c);
    } catch (const SizeOverflow& e) {
      fail(source, sweep, path,
           describe(c) + ": a tensor size overflows 64 bits (" + e.what() + ")");
    }
    out.push_back(c);
    bool advanced = false;  // odometer step, last axis fastest; false once every axis wrapped
    for (std::size_t i = specs.size(); i-- > 0 && !advanced;) {
      if (values[i].empty()) continue;
      advanced = ++pos[i] < values[i].size();
      if (!advanced) pos[i] = 0;
    }
    if (!advanced) return;
  }
}

}  // namespace

void resolve_context(RunSettings& s) {
  if (s.hot_inputs && s.context == Context::back_to_back) s.context = Context::after_producer;
  if (s.hot_inputs && s.context != Context::after_producer)
    throw std::invalid_argument("hot_inputs is the after_producer context, not " +
                                std::string(to_string(s.context)));
  if (s.context == Context::after_producer) s.hot_inputs = true;
}

int parse_rotate(const std::string& text) {
  if (text == "auto") return kRotateAuto;
  const std::string expected = "expected auto or an integer in [1, " +
                               std::to_string(kMaxBufferSets) + "], got '" + text + "'";
  // A YAML 1.2 integer, as every integer setting: "0x10" is 16, "010" is 10.
  std::int64_t n = 0;
  if (!parse_int64(text, n) || n < 1 || n > kMaxBufferSets) throw std::invalid_argument(expected);
  return static_cast<int>(n);
}

std::string rotate_text(int rotate) {
  return rotate == kRotateAuto ? "auto" : std::to_string(rotate);
}

const std::vector<std::string>& axis_names(Kernel k) {
  static const std::map<Kernel, std::vector<std::string>> names = [] {
    std::map<Kernel, std::vector<std::string>> m;
    for (const Operation* op : operations())
      for (const Axis& a : op->axes()) m[op->kernel()].push_back(a.name);
    return m;
  }();
  return names.at(k);
}

bool parse_uint64(const std::string& text, std::uint64_t& out) {
  const std::size_t start = !text.empty() && text[0] == '+' ? 1 : 0;
  return parse_magnitude(text, start, out);
}

bool parse_int64(const std::string& text, std::int64_t& out) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::size_t start = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  std::uint64_t m = 0;
  if (!parse_magnitude(text, start, m)) return false;
  const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (m > limit + (negative ? 1 : 0)) return false;
  out = negative ? static_cast<std::int64_t>(0 - m) : static_cast<std::int64_t>(m);
  return true;
}

Config parse_config(const std::string& text, const std::string& source, std::uint64_t max_cases) {
  YAML::Node root;
  try {
    check_structure(text, source);
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << source << ':' << e.mark.line + 1 << ':' << e.mark.column + 1
       << ": YAML syntax error: " << e.msg;
    throw ConfigError(os.str());
  }
  if (!root.IsMap())
    throw ConfigError(source + ": expected a mapping with a 'sweeps' list at the top");
  check_tags(source, root, "");
  check_keys(source, root, "", {"settings", "sweeps"});
  Config config;
  config.settings = parse_settings(source, root["settings"]);
  const YAML::Node sweeps = root["sweeps"];
  if (!sweeps) throw ConfigError(source + ": sweeps: missing (expected a list of sweeps)");
  if (!sweeps.IsSequence() || sweeps.size() == 0)
    fail(source, sweeps, "sweeps", "expected a non-empty list of sweeps");
  std::uint64_t budget = max_cases;
  std::vector<std::size_t> sweep_end;  // per sweep, the index past its last case
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    expand_sweep(source, sweeps[i], "sweeps[" + std::to_string(i) + "]", config.cases, i, budget,
                 max_cases);
    sweep_end.push_back(config.cases.size());
  }
  // Each case once: a result CSV keys its rows by case, and the gate, merge and --resume refuse
  // a key twice, so a config that lists a case twice would make a CSV they cannot read back.
  std::unordered_map<std::string, std::size_t> first;
  std::size_t sweep = 0;
  for (std::size_t i = 0; i < config.cases.size(); ++i) {
    while (i >= sweep_end[sweep]) ++sweep;
    std::string key;
    for (const std::string& f : case_key(config.cases[i])) key += '\x1f' + f;
    const auto [at, fresh] = first.emplace(std::move(key), i);
    if (fresh) continue;
    const Case& earlier = config.cases[at->second];
    // The injected input has no column (docs/validation.md): two injections in one sweep would
    // be two rows of one key. Two sweeps of one name are that name twice, injections or not.
    const bool one_sweep =
        static_cast<std::size_t>(std::upper_bound(sweep_end.begin(), sweep_end.end(), at->second) -
                                 sweep_end.begin()) == sweep;
    const std::string why = one_sweep && earlier.inject != config.cases[i].inject
                                ? "cases that differ only in `inject` (which has no CSV column) "
                                  "need a sweep each"
                                : "a value listed twice, or a sweep name used twice";
    fail(source, sweeps[sweep], "sweeps[" + std::to_string(sweep) + "]",
         "case " + std::to_string(i) + " is case " + std::to_string(at->second) + " again (" +
             config.cases[i].sweep + ": " + describe(config.cases[i]) + "): " + why);
  }
  return config;
}

std::string read_config_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError(path + ": cannot open config file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw ConfigError(path + ": is a directory, not a config file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw ConfigError(path + ": not a regular file or a pipe; refusing to read a device");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open config file");
  // Read in blocks with a ceiling, so a pipe that never ends cannot exhaust memory.
  constexpr std::size_t kMaxConfigBytes = 16 << 20;
  std::string text;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw ConfigError(path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                        " MiB; not a sweep config");
  }
  if (in.bad()) throw ConfigError(path + ": cannot read config file");
  return text;
}

Config load_config(const std::string& path, std::uint64_t max_cases) {
  return parse_config(read_config_text(path), path, max_cases);
}

}  // namespace kvbench
