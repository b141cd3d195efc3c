#include "cli/worker_setup.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/metadata.hpp"

namespace kvbench::cli {

std::string worker_setup_to_json(const WorkerSetup& s) {
  nlohmann::ordered_json j = {
      {"settings", nlohmann::ordered_json::parse(settings_to_json(s.settings))},
      {"max_cases", s.max_cases},
      {"save_tensors", s.save_tensors_dir},
      {"save_tensors_all", s.save_all},
      {"check_bounds", s.check_bounds},
      {"plugins", s.plugins.empty() ? nlohmann::ordered_json::array()
                                    : nlohmann::ordered_json::parse(s.plugins)},
      {"variants", s.variants},
      {"samples", s.samples}};
  return j.dump();
}

WorkerSetup worker_setup_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("settings"))
    throw std::invalid_argument("--setup: expected a JSON object with settings, got '" + text +
                                "'");
  WorkerSetup s;
  s.settings = settings_from_json(j.at("settings").dump(), "--setup");
  try {
    s.max_cases = j.at("max_cases").get<std::uint64_t>();
    s.save_tensors_dir = j.at("save_tensors").get<std::string>();
    s.save_all = j.at("save_tensors_all").get<bool>();
    s.check_bounds = j.at("check_bounds").get<bool>();
    const nlohmann::json& plugins = j.at("plugins");
    if (!plugins.is_array()) throw std::invalid_argument("--setup: plugins: expected an array");
    if (!plugins.empty()) s.plugins = plugins.dump();
    s.variants = j.at("variants").get<std::vector<std::string>>();
    s.samples = j.value("samples", false);  // absent from the setup of an older parent
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("--setup: ") + e.what());
  }
  return s;
}

}  // namespace kvbench::cli
