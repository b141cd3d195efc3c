#include "core/sidecar.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "core/shard.hpp"

namespace kvbench {
namespace {

using J = nlohmann::ordered_json;

J parse(const std::string& text, const std::string& what) {
  try {
    return J::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SidecarError(what + ": not a kvbench sidecar (" + e.what() + ")");
  }
}

std::string shown(const J& v) { return v.is_null() ? "unset" : v.dump(); }

// A value as a message shows it: its JSON text, cut to 60 characters.
std::string got(const J& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

[[noreturn]] void bad(const std::string& path, const std::string& key, const std::string& expected,
                      const J* value) {
  throw SidecarError(path + ": key '" + key + "': expected " + expected +
                     (value ? ", got " + got(*value) : ", missing"));
}

// The member `key` of the object `obj`, or nullptr.
const J* member(const J& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// Checked reads of one object's members; `prefix` names the object in messages ("config.").
class Fields {
 public:
  Fields(const J& obj, std::string path, std::string prefix)
      : obj_(obj), path_(std::move(path)), prefix_(std::move(prefix)) {}

  const J* get(const char* key) const { return member(obj_, key); }
  [[noreturn]] void fail(const char* key, const std::string& expected) const {
    bad(path_, prefix_ + key, expected, get(key));
  }
  std::string text(const char* key) const {  // required string
    const J* v = get(key);
    if (!v || !v->is_string()) fail(key, "a string");
    return v->get<std::string>();
  }
  std::string optional_text(const char* key) const {  // string, null or absent ("")
    const J* v = get(key);
    if (!v || v->is_null()) return "";
    if (!v->is_string()) fail(key, "a string or null");
    return v->get<std::string>();
  }
  std::size_t count(const char* key) const {  // non-negative integer, 0 when absent
    const J* v = get(key);
    if (!v) return 0;
    if (!v->is_number_unsigned()) fail(key, "a non-negative integer");
    return v->get<std::size_t>();
  }
  bool flag(const char* key) const {  // boolean, false when absent
    const J* v = get(key);
    if (!v) return false;
    if (!v->is_boolean()) fail(key, "true or false");
    return v->get<bool>();
  }
  const J* object(const char* key, bool required) const {
    const J* v = get(key);
    if (!v && !required) return nullptr;
    if (!v || !v->is_object()) fail(key, "an object");
    return v;
  }

 private:
  const J& obj_;
  std::string path_, prefix_;
};

// One device_entry_json() object, `key` naming it ("devices[1]").
DeviceIdentity checked_device(const J& entry, const std::string& path, const std::string& key) {
  if (!entry.is_object()) bad(path, key, "an object", &entry);
  const std::string prefix = key.empty() ? "" : key + ".";
  const Fields e(entry, path, prefix);
  const J* d = e.get("device") ? e.object("device", true) : &entry;
  const Fields f(*d, path, prefix + (e.get("device") ? "device." : ""));
  const DeviceIdentity id{f.optional_text("name"), f.optional_text("uuid")};
  e.object("calibration", false);
  e.object("launch_floor_us", false);
  return id;
}

// "I/N" of the `shard` key, through parse_shard (its bounds): N, and `text` set.
std::size_t checked_shard(const Fields& f, std::string& text) {
  text = f.optional_text("shard");
  if (text.empty()) return 1;
  try {
    if (text.find('/') == std::string::npos) throw std::invalid_argument("");
    return parse_shard(text, [](const char*) { return nullptr; }).count;
  } catch (const std::invalid_argument&) {
    f.fail("shard", "\"I/N\" with 0 <= I < N <= " + std::to_string(kMaxShardCount));
  }
}

std::vector<std::size_t> checked_cases(const Fields& f, const std::string& path) {
  std::vector<std::size_t> out;
  const J* v = f.get("selected_cases");
  if (!v || v->is_null()) return out;
  if (!v->is_array()) f.fail("selected_cases", "a list of case numbers");
  for (std::size_t i = 0; i < v->size(); ++i) {
    const J& c = (*v)[i];
    if (!c.is_number_unsigned())
      bad(path, "selected_cases[" + std::to_string(i) + "]", "a case number (0 or more)", &c);
    out.push_back(c.get<std::size_t>());
  }
  return out;
}

// check_sidecar on parsed JSON.
void check(const J& j, const std::string& path) {
  if (!j.is_object()) throw SidecarError(path + ": not a kvbench sidecar (not a JSON object)");
  const Fields f(j, path, "");
  const Fields config(*f.object("config", true), path, "config.");
  if (config.text("path").empty()) config.fail("path", "a non-empty string");
  if (config.text("fnv1a64").empty()) config.fail("fnv1a64", "a non-empty string");
  const J& settings = *f.object("settings", true);
  for (const auto& [key, value] : settings.items())
    if (!value.is_primitive() || value.is_null())
      bad(path, "settings." + key, "a string, number or boolean", &value);
  std::string shard;
  checked_shard(f, shard);
  checked_cases(f, path);
  if (const J* devices = f.get("devices")) {
    if (!devices->is_array()) f.fail("devices", "a list of devices");
    for (std::size_t i = 0; i < devices->size(); ++i)
      checked_device((*devices)[i], path, "devices[" + std::to_string(i) + "]");
  }
  if (f.get("device")) checked_device(j, path, "");  // the top-level device, calibration, floor
  f.optional_text("host");
  f.optional_text("started_at");
  f.optional_text("finished_at");
  f.count("cases_done");
  f.count("cases_failed");
  f.flag("interrupted");
}

J checked(const std::string& text, const std::string& path) {
  J j = parse(text, path);
  check(j, path);
  return j;
}

}  // namespace

void check_sidecar(const std::string& sidecar_text, const std::string& path) {
  checked(sidecar_text, path);
}

DeviceIdentity device_identity(const std::string& entry_json) {
  const std::string what = "worker's device report";
  return checked_device(parse(entry_json, what), what, "ready");
}

std::vector<std::string> sidecar_devices(const std::string& sidecar_text, const std::string& path) {
  const J j = checked(sidecar_text, path);
  std::vector<std::string> out;
  if (const J* d = member(j, "devices"))
    for (const J& e : *d) out.push_back(e.dump());
  return out;
}

std::string sidecar_started_at(const std::string& sidecar_text, const std::string& path) {
  return Fields(checked(sidecar_text, path), path, "").optional_text("started_at");
}

std::string resume_mismatch(const std::string& before, const std::string& now,
                            const std::string& before_path) {
  const J b = parse(before, before_path), n = parse(now, "this run's sidecar");
  const auto differ = [&](const std::string& what, const J& x, const J& y) {
    return what + " is " + shown(x) + " in " + before_path + ", " + shown(y) + " now";
  };
  // The config first: a sidecar of another config says so, whatever else it holds.
  const J nul;
  const J* bc = b.is_object() ? member(b, "config") : nullptr;
  const J* bh = bc && bc->is_object() ? member(*bc, "fnv1a64") : nullptr;
  const std::string then = bh && bh->is_string() ? bh->get<std::string>() : "?";
  const std::string current = n.at("config").at("fnv1a64").get<std::string>();
  if (then != current)
    return "the config differs from the one " + before_path + " was run with (fnv1a64 " + then +
           " then, " + current + " now)";
  check(b, before_path);
  // One build's rows: a CSV resumed by another build would hold rows of two builds under one
  // sidecar naming the later.
  for (const char* key : {"git_sha", "git_dirty"}) {
    const J* old = member(b, key);
    const J* cur = member(n, key);
    if (!old || !cur || *old != *cur)
      return differ(key, old ? *old : nul, cur ? *cur : nul) +
             " (rows of two builds are not mixed into one CSV)";
  }
  const J& bs = b.at("settings");
  for (const auto& [key, value] : n.at("settings").items()) {
    const J* old = member(bs, key.c_str());
    if (!old || *old != value) return differ("settings." + key, old ? *old : nul, value);
  }
  // The cases as a set: --case 3 --case 2 selects what --case 2 --case 3 does.
  const auto sorted = [](J v) {
    if (v.is_array()) std::sort(v.begin(), v.end());
    return v;
  };
  for (const char* key : {"selected_cases", "shard", "plugins", "variants"}) {
    const J* old_p = member(b, key);
    const J* cur_p = member(n, key);
    const bool cases = key == std::string("selected_cases");
    const J old = old_p ? (cases ? sorted(*old_p) : *old_p) : nul;
    const J cur = cur_p ? (cases ? sorted(*cur_p) : *cur_p) : nul;
    const bool both_empty = (old.is_null() || old.empty()) && (cur.is_null() || cur.empty());
    if (!both_empty && old != cur)
      return differ(std::string(key == std::string("shard")      ? "--shard"
                                : key == std::string("plugins")  ? "--plugin"
                                : key == std::string("variants") ? "--variants"
                                                                 : "--case or --max-tokens") +
                        " (" + key + ")",
                    old, cur);
  }
  return "";
}

ShardRecord read_shard_record(const std::string& sidecar_text, const std::string& path) {
  const J j = checked(sidecar_text, path);
  const Fields f(j, path, "");
  const Fields config(j.at("config"), path, "config.");
  ShardRecord r;
  r.config_path = config.text("path");
  r.config_hash = config.text("fnv1a64");
  r.shard_count = checked_shard(f, r.shard);
  r.selected_cases = checked_cases(f, path);
  for (const auto& [key, value] : j.at("settings").items())
    r.settings.emplace_back(key, value.dump());
  r.git_sha = f.optional_text("git_sha");
  r.git_dirty = f.flag("git_dirty");
  if (const J* d = member(j, "device"); d && d->is_object())
    if (const J* name = member(*d, "name"); name && name->is_string())
      r.device_name = name->get<std::string>();
  if (const J* v = member(j, "variants")) {
    if (!v->is_array())
      throw SidecarError(path + ": key 'variants': expected a list of variant names, got " +
                         shown(*v));
    for (const J& name : *v) {
      if (!name.is_string())
        throw SidecarError(path + ": key 'variants': expected a list of variant names, got " +
                           shown(*v));
      r.variants.push_back(name.get<std::string>());
    }
  }
  if (const J* p = member(j, "plugins"); p && !p->empty()) {
    const auto bad = [&](const std::string& why) {
      return SidecarError(path + ": key 'plugins': " + why + ", got " + shown(*p));
    };
    if (!p->is_array()) throw bad("expected a list of plugins");
    r.plugins = p->dump();
    for (const J& entry : *p) {
      const J* names = entry.is_object() ? member(entry, "variants") : nullptr;
      const J* kernels = entry.is_object() ? member(entry, "kernels") : nullptr;
      if (!names || !names->is_array()) throw bad("expected each plugin's variants");
      for (const char* key : {"sha256", "size", "variants", "kernels", "in_process"}) {
        const J* v = member(entry, key);
        r.plugin_identity += (v ? v->dump() : "null") + '\x1f';
      }
      r.plugin_identity += '\x1e';
      if (!kernels) continue;  // recorded by a kvbench that did not name them
      if (!kernels->is_array() || kernels->size() != names->size())
        throw bad("expected a kernel for each variant");
      for (std::size_t k = 0; k < names->size(); ++k) {
        if (!(*names)[k].is_string() || !(*kernels)[k].is_string())
          throw bad("expected variant and kernel names");
        r.plugin_variants.emplace_back((*names)[k].get<std::string>(),
                                       (*kernels)[k].get<std::string>());
      }
    }
  }
  return r;
}

namespace {

// How a shard record's fields read in a mismatch message.
std::string cases_text(const std::vector<std::size_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < 10; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() > 10 ? ",...]" : "]");
}

std::string build_text(const ShardRecord& r) {
  return (r.git_sha.empty() ? std::string("unset") : r.git_sha) +
         (r.git_dirty ? " (uncommitted changes)" : "");
}

std::string variants_text(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& n : v) s += (s.empty() ? "" : ",") + n;
  return s.empty() ? std::string("the config's") : s;
}

std::string plugins_text(const std::string& plugins) {
  if (plugins.empty()) return "none";
  std::string s;
  for (const J& p : J::parse(plugins)) {
    const J* path = member(p, "path");
    const J* sha = member(p, "sha256");
    s += (s.empty() ? "" : ", ") + (path && path->is_string() ? path->get<std::string>() : "?") +
         " (sha256 " + (sha && sha->is_string() ? sha->get<std::string>().substr(0, 12) : "?") +
         ")";
  }
  return s;
}

// The first setting whose value differs (one side may lack it): {key, a's, b's}, or empty key.
std::array<std::string, 3> first_setting_apart(const ShardRecord& a, const ShardRecord& b) {
  const std::string absent = "unset";
  for (const auto& [key, value] : b.settings) {
    std::string theirs = absent;
    for (const auto& [k, v] : a.settings)
      if (k == key) theirs = v;
    if (theirs != value) return {key, theirs, value};
  }
  for (const auto& [key, value] : a.settings) {
    bool seen = false;
    for (const auto& kv : b.settings) seen = seen || kv.first == key;
    if (!seen) return {key, value, absent};
  }
  return {};
}

}  // namespace

std::string shard_mismatch(const ShardRecord& a, const std::string& a_path, const ShardRecord& b,
                           const std::string& b_path) {
  const auto differ = [&](const std::string& what, const std::string& x, const std::string& y,
                          const std::string& why) {
    return b_path + ": " + what + " is " + y + ", " + a_path + "'s is " + x + " (" + why + ")";
  };
  if (a.config_hash != b.config_hash)
    return differ("config fnv1a64", a.config_hash, b.config_hash, "shards of different configs");
  if (a.selected_cases != b.selected_cases)
    return differ("--case or --max-tokens (selected_cases)", cases_text(a.selected_cases),
                  cases_text(b.selected_cases), "shards of different case selections");
  if (a.shard_count != b.shard_count)
    return differ("the shard count", std::to_string(a.shard_count), std::to_string(b.shard_count),
                  "shards of different splits");
  if (a.git_sha != b.git_sha || a.git_dirty != b.git_dirty)
    return differ("the build (git_sha)", build_text(a), build_text(b),
                  "shards of two builds are not merged into one CSV");
  if (!a.device_name.empty() && !b.device_name.empty() && a.device_name != b.device_name)
    return differ("the GPU model (device.name)", "'" + a.device_name + "'",
                  "'" + b.device_name + "'",
                  "shards of two GPU models are not merged into one CSV");
  if (a.variants != b.variants)
    return differ("--variants (variants)", variants_text(a.variants), variants_text(b.variants),
                  "shards of other variants run other cases");
  if (a.plugin_identity != b.plugin_identity)
    return differ("--plugin (plugins)", plugins_text(a.plugins), plugins_text(b.plugins),
                  "shards of other plugin files ran other kernels");
  if (const auto apart = first_setting_apart(a, b); !apart[0].empty())
    return differ("settings." + apart[0], apart[1], apart[2],
                  "shards run with other settings measure other things");
  return "";
}

namespace {

// timing_context_mismatch on two runs' settings objects.
std::string settings_mismatch(const J& bs, const std::string& base_path, const J& cs,
                              const std::string& cur_path) {
  const J nul;
  const auto setting = [&nul](const J& s, const char* key) -> const J& {
    const J* v = member(s, key);
    return v ? *v : nul;
  };
  // Sidecars written before settings.timer existed were timed by events.
  const J events = "events";
  const auto timer = [&](const J& s) -> const J& {
    const J& v = setting(s, "timer");
    return v.is_null() ? events : v;
  };
  // Before settings.hot_inputs existed, inputs were never hot.
  const J cold_inputs = false;
  const auto hot_inputs = [&](const J& s) -> const J& {
    const J& v = setting(s, "hot_inputs");
    return v.is_null() ? cold_inputs : v;
  };
  // And before settings.context existed, hot_inputs was the only context.
  const J after_producer = "after_producer", back_to_back = "back_to_back";
  const auto context = [&](const J& s) -> const J& {
    const J& v = setting(s, "context");
    if (!v.is_null()) return v;
    return hot_inputs(s) == true ? after_producer : back_to_back;
  };
  const auto value = [&](const J& s, const std::string& key) -> const J& {
    if (key == "timer") return timer(s);
    if (key == "context") return context(s);
    if (key == "hot_inputs") return hot_inputs(s);
    return setting(s, key.c_str());
  };
  std::vector<const char*> keys = {"hot_inputs", "context", "timer"};
  if (setting(bs, "mode") == "cold" && setting(cs, "mode") == "cold") keys.push_back("l2_flush");
  if (context(bs) == "layer" && context(cs) == "layer") keys.push_back("layer_mib");
  // Launches per window share one launch cost (a graph replay's, in graph mode): another count
  // moves a small case's time per launch by a large part of it. Cold mode launches once.
  if (setting(bs, "mode") != "cold" && setting(cs, "mode") != "cold" &&
      !setting(bs, "launches_per_sample").is_null() &&
      !setting(cs, "launches_per_sample").is_null())
    keys.push_back("launches_per_sample");
  for (const char* key : keys) {
    const J& x = value(bs, key);
    const J& y = value(cs, key);
    if (x != y)
      return cur_path + ": settings." + key + " is " + shown(y) + ", " + base_path + "'s is " +
             shown(x);
  }
  return "";
}

}  // namespace

std::string timing_context_mismatch(const std::string& base_text, const std::string& base_path,
                                    const std::string& cur_text, const std::string& cur_path) {
  const J b = checked(base_text, base_path), c = checked(cur_text, cur_path);
  return settings_mismatch(b.at("settings"), base_path, c.at("settings"), cur_path);
}

std::string run_context_mismatch(const std::string& base_text, const std::string& base_path,
                                 const std::string& settings_json, const std::string& cur_name) {
  const J b = checked(base_text, base_path);
  return settings_mismatch(b.at("settings"), base_path, J::parse(settings_json), cur_name);
}

std::string merge_sidecars(const std::vector<std::string>& texts,
                           const std::vector<std::string>& paths, const std::string& csv_path,
                           std::size_t cases_expected) {
  J merged;
  J devices = J::array();
  std::size_t done = 0, failed = 0;
  bool interrupted = false, unfinished = false;
  std::string started, finished;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const J j = checked(texts[i], paths[i]);
    const Fields f(j, paths[i], "");
    if (i == 0) merged = j;
    J own = f.get("devices") ? j.at("devices") : J::array();
    if (own.empty() && f.get("device"))
      own.push_back(
          {{"device", j.at("device")},
           {"calibration", f.get("calibration") ? j.at("calibration") : J::object()},
           {"launch_floor_us", f.get("launch_floor_us") ? j.at("launch_floor_us") : J::object()}});
    const std::string host = f.optional_text("host");
    for (J d : own) {
      d["host"] = host;
      const std::string uuid = checked_device(d, paths[i], "devices").uuid;
      bool seen = false;
      for (const J& e : devices)
        seen = seen || (checked_device(e, paths[i], "devices").uuid == uuid &&
                        e.at("host").get<std::string>() == host);
      if (!seen) devices.push_back(d);
    }
    done += f.count("cases_done");
    failed += f.count("cases_failed");
    interrupted = interrupted || f.flag("interrupted");
    const std::string s = f.optional_text("started_at");
    if (!s.empty() && (started.empty() || s < started)) started = s;
    const std::string fin = f.optional_text("finished_at");
    if (fin.empty()) unfinished = true;
    if (fin > finished) finished = fin;
  }
  merged["csv"] = csv_path;
  merged["started_at"] = started;
  merged["finished_at"] = unfinished ? J(nullptr) : J(finished);
  merged["cases"] = cases_expected;
  merged["cases_done"] = done;
  merged["cases_failed"] = failed;
  merged["interrupted"] = interrupted;
  merged["shard"] = nullptr;
  merged["devices"] = devices;
  merged["merged_from"] = paths;
  return merged.dump(2) + "\n";
}

}  // namespace kvbench
