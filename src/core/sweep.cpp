#include "core/sweep.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

namespace kvbench {
namespace {

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

std::string scalar_text(const YAML::Node& n) {
  return n.IsScalar() ? n.Scalar() : "<not a scalar>";
}

std::int64_t positive_int(const std::string& source, const YAML::Node& n, const std::string& path,
                          std::int64_t max = std::numeric_limits<std::int32_t>::max()) {
  std::int64_t v = 0;
  if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v))
    fail(source, n, path, "expected a positive integer, got '" + scalar_text(n) + "'");
  if (v <= 0 || v > max)
    fail(source, n, path,
         "expected a positive integer up to " + std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

bool boolean(const std::string& source, const YAML::Node& n, const std::string& path) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    fail(source, n, path, "expected true or false, got '" + scalar_text(n) + "'");
  return v;
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

using Apply = std::function<void(Case&, const std::string& source, const YAML::Node&,
                                 const std::string& path)>;

struct Axis {
  std::string name;
  Apply apply;
};

Apply int_axis(std::int64_t Case::*field) {
  return [field](Case& c, const std::string& s, const YAML::Node& n, const std::string& p) {
    c.*field = positive_int(s, n, p);
  };
}
template <class E>
Apply enum_axis(E Case::*field) {
  return [field](Case& c, const std::string& s, const YAML::Node& n, const std::string& p) {
    c.*field = enum_value<E>(s, n, p);
  };
}
Apply bool_axis(bool Case::*field) {
  return [field](Case& c, const std::string& s, const YAML::Node& n, const std::string& p) {
    c.*field = boolean(s, n, p);
  };
}

// Canonical axis order per kernel: outermost first; num_tokens and variant vary fastest so that
// one shape's token counts, and each case's variants, sit together in the output.
const std::vector<Axis>& axes_of(Kernel k) {
  static const std::vector<Axis> concat = {
      {"in_dtype", enum_axis(&Case::in_dtype)},    {"out_dtype", enum_axis(&Case::out_dtype)},
      {"strides", enum_axis(&Case::strides)},      {"num_heads", int_axis(&Case::num_heads)},
      {"nope_dim", int_axis(&Case::head_dim)},     {"rope_dim", int_axis(&Case::rope_dim)},
      {"num_tokens", int_axis(&Case::num_tokens)}, {"variant", enum_axis(&Case::variant)},
      {"inject", enum_axis(&Case::inject)},
  };
  static const std::vector<Axis> cache = {
      {"in_dtype", enum_axis(&Case::in_dtype)},
      {"out_dtype", enum_axis(&Case::out_dtype)},
      {"scale", enum_axis(&Case::scale)},
      {"swa", bool_axis(&Case::swa)},
      {"layout", enum_axis(&Case::layout)},
      {"kv_interleaved", bool_axis(&Case::kv_interleaved)},
      {"strides", enum_axis(&Case::strides)},
      {"slots", enum_axis(&Case::slots)},
      {"num_heads", int_axis(&Case::num_heads)},
      {"head_size", int_axis(&Case::head_dim)},
      {"block_size", int_axis(&Case::block_size)},
      {"num_tokens", int_axis(&Case::num_tokens)},
      {"variant", enum_axis(&Case::variant)},
      {"inject", enum_axis(&Case::inject)},
  };
  return k == Kernel::concat_mla_k ? concat : cache;
}

Case default_case(Kernel k) {
  Case c;
  c.kernel = k;
  if (k == Kernel::concat_mla_k) {
    c.num_heads = 128;
    c.head_dim = 128;
    c.rope_dim = 64;
  } else {
    c.num_heads = 8;
    c.head_dim = 128;
    c.rope_dim = 0;
  }
  return c;
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
// merged map(s) first, then the map's own entries override them. Value nodes keep their marks.
YAML::Node with_merge_keys(const std::string& source, const YAML::Node& map,
                           const std::string& path) {
  if (!map.IsMap() || !map["<<"]) return map;
  YAML::Node out(YAML::NodeType::Map);
  const YAML::Node base = map["<<"];
  auto merge_one = [&](const YAML::Node& m) {
    if (!m.IsMap())
      fail(source, m, path + ".<<", "expected a mapping (or list of mappings) to merge");
    for (const auto& kv : m) out[kv.first.as<std::string>()] = kv.second;
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
  check_keys(source, n, "settings",
             {"seed", "mode", "warmup", "min_samples", "min_time_s", "target_noise", "timeout_s",
              "launches_per_sample", "l2_flush", "rotate", "hot_inputs"});
  if (n["seed"]) {
    const YAML::Node v = n["seed"];
    if (!v.IsScalar() || !YAML::convert<std::uint64_t>::decode(v, s.seed))
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
    try {
      s.rotate = parse_rotate(scalar_text(n["rotate"]));
    } catch (const std::invalid_argument& e) {
      fail(source, n["rotate"], "settings.rotate", e.what());
    }
  }
  if (n["hot_inputs"]) s.hot_inputs = boolean(source, n["hot_inputs"], "settings.hot_inputs");
  return s;
}

// Cartesian product of the given axes, in the canonical order, last axis fastest.
void expand_sweep(const std::string& source, const YAML::Node& sweep, const std::string& path,
                  std::vector<Case>& out, std::size_t index) {
  if (!sweep.IsMap()) fail(source, sweep, path, "expected a mapping with kernel and axes");
  check_keys(source, sweep, path, {"name", "kernel", "axes"});
  const YAML::Node kernel_node = sweep["kernel"];
  if (!kernel_node)
    fail(source, sweep, path + ".kernel",
         "missing (expected one of " + joined_names<Kernel>() + ")");
  const Kernel kernel = enum_value<Kernel>(source, kernel_node, path + ".kernel");
  Case base = default_case(kernel);
  base.sweep = "sweep" + std::to_string(index);
  if (sweep["name"]) {
    if (!sweep["name"].IsScalar() || sweep["name"].Scalar().empty())
      fail(source, sweep["name"], path + ".name", "expected a non-empty string");
    base.sweep = sweep["name"].Scalar();
    for (char ch : base.sweep)
      if (ch == ',' || ch == '"' || ch == '\n')
        fail(source, sweep["name"], path + ".name", "must not contain commas, quotes or newlines");
  }

  const YAML::Node raw_axes = sweep["axes"];
  const YAML::Node axes = raw_axes ? with_merge_keys(source, raw_axes, path + ".axes") : raw_axes;
  const auto& specs = axes_of(kernel);
  std::vector<std::string> names;
  for (const auto& a : specs) names.push_back(a.name);
  if (axes && !axes.IsMap())
    fail(source, axes, path + ".axes", "expected a mapping of axis: value or [values]");
  if (axes) check_keys(source, axes, path + ".axes", names);

  // Per axis: its values (one node each), validated now so errors point at the value.
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
      specs[i].apply(probe, source, values[i][j],
                     v.IsSequence() ? apath + "[" + std::to_string(j) + "]" : apath);
    if (specs[i].name == "strides" && kernel == Kernel::cache_write)
      for (const auto& node : values[i])
        if (node.Scalar() == "sglang")
          fail(source, node, apath, "'sglang' strides apply to concat_and_cast_mha_k only");
  }

  std::vector<std::size_t> pos(specs.size(), 0);
  while (true) {
    Case c = base;
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!values[i].empty()) specs[i].apply(c, source, values[i][pos[i]], "");
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

int parse_rotate(const std::string& text) {
  if (text == "auto") return kRotateAuto;
  const std::string expected = "expected auto or an integer in [1, " +
                               std::to_string(kMaxBufferSets) + "], got '" + text + "'";
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(expected);
  const int n = std::stoi(text);
  if (n < 1 || n > kMaxBufferSets) throw std::invalid_argument(expected);
  return n;
}

std::string rotate_text(int rotate) {
  return rotate == kRotateAuto ? "auto" : std::to_string(rotate);
}

const std::vector<std::string>& axis_names(Kernel k) {
  static const auto names_of = [](Kernel kk) {
    std::vector<std::string> v;
    for (const auto& a : axes_of(kk)) v.push_back(a.name);
    return v;
  };
  static const std::vector<std::string> concat = names_of(Kernel::concat_mla_k);
  static const std::vector<std::string> cache = names_of(Kernel::cache_write);
  return k == Kernel::concat_mla_k ? concat : cache;
}

Config parse_config(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << source << ':' << e.mark.line + 1 << ':' << e.mark.column + 1
       << ": YAML syntax error: " << e.msg;
    throw ConfigError(os.str());
  }
  if (!root.IsMap())
    throw ConfigError(source + ": expected a mapping with a 'sweeps' list at the top");
  check_keys(source, root, "", {"settings", "sweeps"});
  Config config;
  config.settings = parse_settings(source, root["settings"]);
  const YAML::Node sweeps = root["sweeps"];
  if (!sweeps) throw ConfigError(source + ": sweeps: missing (expected a list of sweeps)");
  if (!sweeps.IsSequence() || sweeps.size() == 0)
    fail(source, sweeps, "sweeps", "expected a non-empty list of sweeps");
  for (std::size_t i = 0; i < sweeps.size(); ++i)
    expand_sweep(source, sweeps[i], "sweeps[" + std::to_string(i) + "]", config.cases, i);
  return config;
}

Config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open config file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": cannot read config file");
  return parse_config(text.str(), path);
}

}  // namespace kvbench
