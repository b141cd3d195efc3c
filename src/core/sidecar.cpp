#include "core/sidecar.hpp"

#include <nlohmann/json.hpp>

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

}  // namespace

DeviceIdentity device_identity(const std::string& entry_json) {
  const J j = parse(entry_json, "worker's device report");
  const J& d = j.contains("device") ? j["device"] : j;
  return {d.value("name", ""), d.value("uuid", "")};
}

std::vector<std::string> sidecar_devices(const std::string& sidecar_text) {
  const J j = parse(sidecar_text, "sidecar");
  std::vector<std::string> out;
  if (j.contains("devices") && j["devices"].is_array())
    for (const J& d : j["devices"]) out.push_back(d.dump());
  return out;
}

std::string sidecar_started_at(const std::string& sidecar_text) {
  const J j = parse(sidecar_text, "sidecar");
  return j.contains("started_at") && j["started_at"].is_string()
             ? j["started_at"].get<std::string>()
             : "";
}

std::string resume_mismatch(const std::string& before, const std::string& now,
                            const std::string& before_path) {
  const J b = parse(before, before_path), n = parse(now, "this run's sidecar");
  auto differ = [&](const std::string& what, const J& x, const J& y) {
    return what + " is " + shown(x) + " in " + before_path + ", " + shown(y) + " now";
  };
  const J nul;
  const J& bc = b.contains("config") ? b["config"] : nul;
  const J& nc = n["config"];
  if (!bc.is_object() || bc.value("fnv1a64", "") != nc.value("fnv1a64", ""))
    return "the config differs from the one " + before_path + " was run with (fnv1a64 " +
           (bc.is_object() ? bc.value("fnv1a64", "?") : std::string("?")) + " then, " +
           nc.value("fnv1a64", "?") + " now)";
  const J& bs = b.contains("settings") ? b["settings"] : nul;
  for (const auto& [key, value] : n["settings"].items()) {
    const J& old = bs.is_object() && bs.contains(key) ? bs[key] : nul;
    if (old != value) return differ("settings." + key, old, value);
  }
  for (const char* key : {"selected_cases", "shard"}) {
    const J& old = b.contains(key) ? b[key] : nul;
    const J& cur = n.contains(key) ? n[key] : nul;
    const bool both_empty = (old.is_null() || old.empty()) && (cur.is_null() || cur.empty());
    if (!both_empty && old != cur)
      return differ(
          std::string(key == std::string("shard") ? "--shard" : "--case") + " (" + key + ")", old,
          cur);
  }
  return "";
}

ShardRecord read_shard_record(const std::string& sidecar_text, const std::string& path) {
  const J j = parse(sidecar_text, path);
  ShardRecord r;
  try {
    r.config_path = j.at("config").at("path").get<std::string>();
    r.config_hash = j.at("config").at("fnv1a64").get<std::string>();
    if (j.contains("shard") && j["shard"].is_string()) r.shard = j["shard"].get<std::string>();
    if (j.contains("selected_cases"))
      r.selected_cases = j["selected_cases"].get<std::vector<std::size_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw SidecarError(path + ": missing or malformed key (" + e.what() + ")");
  }
  return r;
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
    const J j = parse(texts[i], paths[i]);
    if (i == 0) merged = j;
    J own = j.contains("devices") ? j["devices"] : J::array();
    if (own.empty() && j.contains("device"))
      own.push_back({{"device", j["device"]},
                     {"calibration", j.value("calibration", J::object())},
                     {"launch_floor_us", j.value("launch_floor_us", J::object())}});
    for (J d : own) {
      d["host"] = j.value("host", "");
      bool seen = false;
      for (const J& e : devices)
        seen = seen || (e["device"].value("uuid", "") == d["device"].value("uuid", "") &&
                        e.value("host", "") == d.value("host", ""));
      if (!seen) devices.push_back(d);
    }
    done += j.value("cases_done", std::size_t{0});
    failed += j.value("cases_failed", std::size_t{0});
    interrupted = interrupted || j.value("interrupted", false);
    const std::string s = j.value("started_at", "");
    if (!s.empty() && (started.empty() || s < started)) started = s;
    if (j["finished_at"].is_string()) {
      const std::string f = j["finished_at"].get<std::string>();
      if (f > finished) finished = f;
    } else {
      unfinished = true;
    }
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
