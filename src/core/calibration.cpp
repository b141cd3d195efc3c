#include "core/calibration.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kvbench {

double theoretical_peak_gbps(double memory_clock_mhz, int bus_width_bits) {
  if (memory_clock_mhz <= 0 || bus_width_bits <= 0) return 0;
  return memory_clock_mhz * 1e6 * 2 * (bus_width_bits / 8.0) / 1e9;
}

std::string calibration_to_json(const Calibration& c) {
  const nlohmann::ordered_json j = {
      {"calibration_version", c.version},
      {"device", c.device},
      {"device_uuid", c.device_uuid},
      {"measured_at", c.measured_at},
      {"kvbench_version", c.kvbench_version},
      {"git_sha", c.git_sha},
      {"mode", std::string(to_string(c.mode))},
      {"buffer_bytes", c.buffer_bytes},
      {"memcpy_gbps", c.memcpy_gbps},
      {"memcpy_median_us", c.memcpy_median_us},
      {"copy_kernel_gbps", c.copy_kernel_gbps},
      {"copy_kernel_median_us", c.copy_kernel_median_us},
      {"measured_peak_gbps", c.measured_peak_gbps},
      {"theoretical_peak_gbps", c.theoretical_peak_gbps},
      {"memory_clock_mhz", c.memory_clock_mhz},
      {"bus_width_bits", c.bus_width_bits},
  };
  return j.dump(2) + "\n";
}

Calibration calibration_from_json(const std::string& text, const std::string& source) {
  Calibration c;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    c.version = j.at("calibration_version").get<int>();
    if (c.version != kCalibrationVersion)
      throw std::runtime_error(source + ": calibration_version " + std::to_string(c.version) +
                               ", expected " + std::to_string(kCalibrationVersion));
    c.device = j.at("device").get<std::string>();
    c.device_uuid = j.at("device_uuid").get<std::string>();
    c.measured_at = j.at("measured_at").get<std::string>();
    c.kvbench_version = j.at("kvbench_version").get<std::string>();
    c.git_sha = j.at("git_sha").get<std::string>();
    c.mode = from_string<TimingMode>(j.at("mode").get<std::string>());
    c.buffer_bytes = j.at("buffer_bytes").get<double>();
    c.memcpy_gbps = j.at("memcpy_gbps").get<double>();
    c.memcpy_median_us = j.at("memcpy_median_us").get<double>();
    c.copy_kernel_gbps = j.at("copy_kernel_gbps").get<double>();
    c.copy_kernel_median_us = j.at("copy_kernel_median_us").get<double>();
    c.measured_peak_gbps = j.at("measured_peak_gbps").get<double>();
    c.theoretical_peak_gbps = j.at("theoretical_peak_gbps").get<double>();
    c.memory_clock_mhz = j.at("memory_clock_mhz").get<double>();
    c.bus_width_bits = j.at("bus_width_bits").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": not a kvbench calibration: " + e.what());
  }
  if (!(c.measured_peak_gbps > 0))
    throw std::runtime_error(source + ": measured_peak_gbps must be positive");
  return c;
}

std::string cache_dir(const char* kvbench_cache_dir, const char* xdg_cache_home, const char* home) {
  const auto set = [](const char* v) { return v && *v; };
  if (set(kvbench_cache_dir)) return kvbench_cache_dir;
  if (set(xdg_cache_home)) return std::string(xdg_cache_home) + "/kvbench";
  if (set(home)) return std::string(home) + "/.cache/kvbench";
  return ".kvbench-cache";
}

std::string calibration_cache_path(const std::string& uuid, const char* kvbench_cache_dir,
                                   const char* xdg_cache_home, const char* home) {
  return cache_dir(kvbench_cache_dir, xdg_cache_home, home) + "/calibration/" + uuid + ".json";
}

}  // namespace kvbench
