#include "core/metadata.hpp"

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

namespace kvbench {
namespace {

nlohmann::ordered_json stats_json(const Stats& s) {
  return {{"samples", s.samples}, {"median_us", s.median_us}, {"mean_us", s.mean_us},
          {"min_us", s.min_us},   {"max_us", s.max_us},       {"p10_us", s.p10_us},
          {"p90_us", s.p90_us},   {"rel_stdev", s.rel_stdev}};
}

nlohmann::ordered_json floor_json(const std::vector<FloorEntry>& entries) {
  nlohmann::ordered_json floor = nlohmann::ordered_json::object();
  for (const auto& f : entries) {
    nlohmann::ordered_json e = stats_json(f.stats);
    e["launches_per_sample"] = f.launches_per_sample;
    e["sm_clock_mhz"] = f.sm_clock_mhz;
    e["clock_low"] = f.clock_low;
    e["attempts"] = f.attempts;
    floor[std::string(to_string(f.mode))] = e;
  }
  return floor;
}

nlohmann::ordered_json details_json(const DeviceDetails& d) {
  return {{"name", d.name},
          {"uuid", d.uuid},
          {"compute_capability", d.compute_capability},
          {"sm_count", d.sm_count},
          {"l2_bytes", d.l2_bytes},
          {"global_memory_bytes", d.global_memory_bytes},
          {"max_sm_clock_mhz", d.max_sm_clock_mhz},
          {"memory_clock_mhz", d.memory_clock_mhz},
          {"bus_width_bits", d.bus_width_bits},
          {"driver_version", d.driver_version},
          {"cuda_driver_version", d.cuda_driver_version},
          {"cuda_runtime_version", d.cuda_runtime_version}};
}

}  // namespace

std::string device_entry_json(const DeviceDetails& d, const Calibration& c,
                              const std::vector<FloorEntry>& floor) {
  using J = nlohmann::ordered_json;
  const J j = {{"device", details_json(d)},
               {"calibration", J::parse(calibration_to_json(c))},
               {"launch_floor_us", floor_json(floor)}};
  return j.dump();
}

namespace {

nlohmann::ordered_json settings_json(const RunSettings& s) {
  return {{"seed", s.seed},
          {"mode", std::string(to_string(s.mode))},
          {"warmup", s.warmup},
          {"min_samples", s.min_samples},
          {"min_time_s", s.min_time_s},
          {"target_noise", s.target_noise},
          {"timeout_s", s.timeout_s},
          {"launches_per_sample", s.launches_per_sample},
          {"l2_flush", std::string(to_string(s.l2_flush))},
          {"rotate", rotate_text(s.rotate)},
          {"hot_inputs", s.hot_inputs},
          {"timer", std::string(to_string(s.timer))},
          {"context", std::string(to_string(s.context))},
          {"layer_mib", s.layer_mib}};
}

}  // namespace

std::string settings_to_json(const RunSettings& s) { return settings_json(s).dump(); }

RunSettings settings_from_json(const std::string& text, const std::string& where) {
  using J = nlohmann::json;
  const J j = J::parse(text, nullptr, false);
  if (!j.is_object()) throw std::invalid_argument(where + ": settings are not a JSON object");
  const auto at = [&](const char* key) -> const J& {
    const auto it = j.find(key);
    if (it == j.end()) throw std::invalid_argument(where + ": settings." + key + " is missing");
    return *it;
  };
  const auto get = [&](const char* key, auto& out) {
    try {
      out = at(key).get<std::decay_t<decltype(out)>>();
    } catch (const J::exception&) {
      throw std::invalid_argument(where + ": settings." + key + ": " + at(key).dump() +
                                  " is of the wrong type");
    }
  };
  RunSettings s;
  std::string mode, l2_flush, rotate, timer, context;
  get("seed", s.seed);
  get("mode", mode);
  get("warmup", s.warmup);
  get("min_samples", s.min_samples);
  get("min_time_s", s.min_time_s);
  get("target_noise", s.target_noise);
  get("timeout_s", s.timeout_s);
  get("launches_per_sample", s.launches_per_sample);
  get("l2_flush", l2_flush);
  get("rotate", rotate);
  get("hot_inputs", s.hot_inputs);
  get("timer", timer);
  get("context", context);
  get("layer_mib", s.layer_mib);
  try {
    s.mode = from_string<TimingMode>(mode);
    s.l2_flush = from_string<L2Flush>(l2_flush);
    s.rotate = parse_rotate(rotate);
    s.timer = from_string<Timer>(timer);
    s.context = from_string<Context>(context);
  } catch (const std::exception& e) {
    throw std::invalid_argument(where + ": settings: " + e.what());
  }
  const RunSettings sent = s;
  try {
    resolve_context(s);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + ": settings: " + e.what());
  }
  if (s.hot_inputs != sent.hot_inputs || s.context != sent.context)
    throw std::invalid_argument(where + ": settings.hot_inputs and settings.context disagree");
  if (j.size() != settings_json(s).size())
    throw std::invalid_argument(where + ": settings have keys this kvbench does not know");
  return s;
}

std::string metadata_to_json(const RunMetadata& m) {
  using J = nlohmann::ordered_json;
  const J floor = floor_json(m.launch_floor);
  J j = {
      {"kvbench_version", m.kvbench_version},
      {"git_sha", m.git_sha},
      {"git_dirty", m.git_dirty},
      {"host", m.host},
      {"started_at", m.started_at},
      {"finished_at", m.finished_at.empty() ? J(nullptr) : J(m.finished_at)},
      {"config", {{"path", m.config_path}, {"fnv1a64", m.config_fnv1a64}}},
      {"csv", m.csv_path},
      {"settings", settings_json(m.settings)},
      {"device", details_json(m.device)},
      {"calibration", J::parse(calibration_to_json(m.calibration))},
      // Also at the top level, where scripts/plot.py looks for its roofline lines.
      {"measured_peak_gbps", m.calibration.measured_peak_gbps},
      {"theoretical_peak_gbps", m.calibration.theoretical_peak_gbps},
      {"launch_floor_us", floor},
      {"cases", m.cases},
      {"selected_cases", m.selected_cases},
      {"cases_done", m.cases_done},
      {"cases_failed", m.cases_failed},
      {"blocking_kernel_timed_out", m.blocking_kernel_timed_out},
      {"interrupted", m.interrupted},
      {"shard", m.shard.empty() ? J(nullptr) : J(m.shard)},
  };
  if (!m.plugins.empty()) j["plugins"] = J::parse(m.plugins);
  if (!m.variants.empty()) j["variants"] = m.variants;
  if (!m.devices.empty()) {
    J devices = J::array();
    for (const std::string& d : m.devices) devices.push_back(J::parse(d));
    const J& first = devices.front();
    j["device"] = first["device"];
    j["calibration"] = first["calibration"];
    j["measured_peak_gbps"] = first["calibration"].value("measured_peak_gbps", 0.0);
    j["theoretical_peak_gbps"] = first["calibration"].value("theoretical_peak_gbps", 0.0);
    j["launch_floor_us"] = first["launch_floor_us"];
    j["devices"] = devices;
  }
  return j.dump(2) + "\n";
}

std::string format_uuid(const char* b) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(b[i]));
    out += hex;
  }
  return out;
}

std::string fnv1a64_hex(const std::string& bytes) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char ch : bytes) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kvbench
