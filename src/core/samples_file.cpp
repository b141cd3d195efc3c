#include "core/samples_file.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/csv.hpp"
#include "core/sample_verdict.hpp"

namespace kvbench {
namespace {

// The position of every case-key column in a row, in case_columns() order.
const std::vector<std::size_t>& key_positions() {
  static const std::vector<std::size_t> positions = [] {
    const std::vector<std::string> header = split_csv(csv_header());
    std::vector<std::size_t> out;
    for (const std::string& name : case_columns())
      for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) out.push_back(i);
    return out;
  }();
  return positions;
}

std::size_t column_of(const std::string& name) {
  const std::vector<std::string> header = split_csv(csv_header());
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  throw std::logic_error("no column " + name);
}

}  // namespace

std::string samples_header() { return R"({"kvbench_samples": 1})"; }

std::string samples_record(const std::vector<std::string>& row_fields,
                           const std::vector<double>& samples_us) {
  nlohmann::ordered_json key = nlohmann::ordered_json::object();
  const std::vector<std::string>& names = case_columns();
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::size_t at = key_positions()[k];
    key[names[k]] = at < row_fields.size() ? row_fields[at] : "";
  }
  static const std::size_t timer_at = column_of("timer");
  const nlohmann::ordered_json j = {
      {"key", key},
      {"timer", timer_at < row_fields.size() ? row_fields[timer_at] : ""},
      {"timer_step_us", timer_step(samples_us)},
      {"samples_us", samples_us}};
  return j.dump();
}

std::map<std::vector<std::string>, SampleSet> parse_samples(const std::string& text,
                                                            const std::string& name) {
  std::map<std::vector<std::string>, SampleSet> out;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(name + ":" + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++number;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (number == 1) {
      if (!j.is_object() || j.value("kvbench_samples", 0) != 1)
        throw bad("not a kvbench samples file (its first line is not {\"kvbench_samples\": 1})");
      continue;
    }
    if (!j.is_object() || !j.contains("key") || !j.contains("samples_us"))
      throw bad("expected a record with key and samples_us");
    try {
      std::vector<std::string> key;
      for (const std::string& column : case_columns()) key.push_back(j.at("key").at(column));
      SampleSet s;
      s.timer = j.value("timer", "");
      s.step_us = j.value("timer_step_us", 0.0);
      s.samples_us = j.at("samples_us").get<std::vector<double>>();
      for (double v : s.samples_us)
        if (!std::isfinite(v) || v < 0) throw bad("a sample that is not a time in µs");
      if (!out.emplace(std::move(key), std::move(s)).second) throw bad("a case given twice");
    } catch (const nlohmann::json::exception& e) {
      throw bad(e.what());
    }
  }
  if (number == 0) throw bad("empty (no header line)");
  return out;
}

}  // namespace kvbench
