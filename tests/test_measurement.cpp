// The pure parts of measurement: the median's confidence interval and the stopping rule, the
// calibration file, the metadata sidecar, derived columns, the progress line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/calibration.hpp"
#include "core/csv.hpp"
#include "core/metadata.hpp"
#include "core/progress.hpp"
#include "core/stats.hpp"

namespace kvbench {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v;
  for (int i = n; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  return v;
}

TEST(MedianCi, OrderStatisticInterval) {
  // n = 100: ranks floor(50 - 9.8) = 40 and ceil(1 + 50 + 9.8) = 61 -> (61 - 40) / 2 / 50.5.
  EXPECT_DOUBLE_EQ(median_ci_rel(one_to(100)), 10.5 / 50.5);
  // n = 9: ranks floor(4.5 - 2.94) = 1 and ceil(1 + 4.5 + 2.94) = 9 -> (9 - 1) / 2 / 5.
  EXPECT_DOUBLE_EQ(median_ci_rel(one_to(9)), 0.8);
  EXPECT_DOUBLE_EQ(summarize(one_to(9)).median_ci_rel, 0.8);
}

TEST(MedianCi, UndefinedForFewSamplesOrNonPositiveMedian) {
  EXPECT_TRUE(std::isinf(median_ci_rel(one_to(5))));
  EXPECT_TRUE(std::isinf(median_ci_rel({})));
  EXPECT_TRUE(std::isinf(median_ci_rel(std::vector<double>(20, 0.0))));
  EXPECT_DOUBLE_EQ(median_ci_rel(std::vector<double>(20, 3.0)), 0);
}

TEST(MedianCi, IgnoresARareOutlierThatInflatesTheStdev) {
  std::vector<double> v(50, 10.0);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] += 0.001 * static_cast<double>(i % 5);
  v.push_back(1000);  // one preempted sample
  const Stats s = summarize(v);
  EXPECT_GT(s.rel_stdev, 0.5);
  EXPECT_LT(s.median_ci_rel, 0.001);
}

TEST(StopRule, EachLimitHolds) {
  const StopRule rule{10, 0.5, 0.01, 3.0};
  const std::vector<double> steady(20, 100.0), noisy = one_to(20);
  EXPECT_EQ(should_stop(rule, steady, 1.0, 0.1), StopReason::converged);
  EXPECT_EQ(should_stop(rule, {100, 100, 100}, 1.0, 0.1), StopReason::more);  // < min_samples
  EXPECT_EQ(should_stop(rule, steady, 0.4, 0.1), StopReason::more);           // < min_time
  EXPECT_EQ(should_stop(rule, noisy, 1.0, 0.1), StopReason::more);            // noise too high
  EXPECT_EQ(should_stop(rule, noisy, 1.0, 3.0), StopReason::timeout);
  EXPECT_EQ(should_stop(rule, {100}, 0.0, 5.0), StopReason::timeout);  // even below min_samples
  EXPECT_EQ(should_stop(rule, {}, 0.0, 5.0), StopReason::more);        // but never with none
}

Calibration sample_calibration() {
  Calibration c;
  c.device = "NVIDIA H200";
  c.device_uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef";
  c.measured_at = "2025-01-01T00:00:00Z";
  c.kvbench_version = "0.1.0";
  c.git_sha = "abc";
  c.mode = TimingMode::graph;
  c.buffer_bytes = 268435456;
  c.memcpy_gbps = 4100.5;
  c.copy_kernel_gbps = 4200.25;
  c.measured_peak_gbps = 4200.25;
  c.theoretical_peak_gbps = 4815.4;
  c.memory_clock_mhz = 3201;
  c.bus_width_bits = 6016;
  return c;
}

TEST(Calibration, TheoreticalPeakIsDoubleDataRateTimesBusWidth) {
  // H100 SXM: 2619 MHz x 5120 bit x 2 / 8 = 3352.3 GB/s, its datasheet's 3.35 TB/s.
  EXPECT_NEAR(theoretical_peak_gbps(2619, 5120), 3352.32, 1e-6);
  EXPECT_EQ(theoretical_peak_gbps(0, 5120), 0);
  EXPECT_EQ(theoretical_peak_gbps(2619, 0), 0);
}

TEST(Calibration, JsonRoundTrip) {
  const Calibration c = sample_calibration();
  const Calibration back = calibration_from_json(calibration_to_json(c), "x.json");
  EXPECT_EQ(back.device_uuid, c.device_uuid);
  EXPECT_EQ(back.memcpy_gbps, c.memcpy_gbps);
  EXPECT_EQ(back.copy_kernel_gbps, c.copy_kernel_gbps);
  EXPECT_EQ(back.measured_peak_gbps, c.measured_peak_gbps);
  EXPECT_EQ(back.theoretical_peak_gbps, c.theoretical_peak_gbps);
  EXPECT_EQ(back.bus_width_bits, 6016);
}

TEST(Calibration, BadFilesAreNamed) {
  const auto error_of = [](const std::string& text) {
    try {
      calibration_from_json(text, "cache.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error_of("{").rfind("cache.json: not a kvbench calibration", 0), 0u) << error_of("{");
  EXPECT_EQ(error_of("{}").rfind("cache.json: not a kvbench calibration", 0), 0u);
  nlohmann::json j = nlohmann::json::parse(calibration_to_json(sample_calibration()));
  j["calibration_version"] = 99;
  EXPECT_EQ(error_of(j.dump()), "cache.json: calibration_version 99, expected 1");
  j["calibration_version"] = 1;
  j["measured_peak_gbps"] = 0;
  EXPECT_EQ(error_of(j.dump()), "cache.json: measured_peak_gbps must be positive");
}

TEST(Calibration, CachePathPrecedence) {
  const std::string u = "GPU-1";
  EXPECT_EQ(calibration_cache_path(u, "/c", "/x", "/h"), "/c/calibration/GPU-1.json");
  EXPECT_EQ(calibration_cache_path(u, "", "/x", "/h"), "/x/kvbench/calibration/GPU-1.json");
  EXPECT_EQ(calibration_cache_path(u, nullptr, nullptr, "/h"),
            "/h/.cache/kvbench/calibration/GPU-1.json");
  EXPECT_EQ(calibration_cache_path(u, nullptr, nullptr, nullptr),
            ".kvbench-cache/calibration/GPU-1.json");
}

TEST(Metadata, UuidAndHash) {
  const char bytes[16] = {0x01,
                          0x23,
                          0x45,
                          0x67,
                          static_cast<char>(0x89),
                          static_cast<char>(0xab),
                          static_cast<char>(0xcd),
                          static_cast<char>(0xef),
                          0,
                          1,
                          2,
                          3,
                          4,
                          5,
                          6,
                          7};
  EXPECT_EQ(format_uuid(bytes), "GPU-01234567-89ab-cdef-0001-020304050607");
  // FNV-1a 64 test vectors (Fowler, Noll, Vo).
  EXPECT_EQ(fnv1a64_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a64_hex("foobar"), "85944171f73967e8");
}

TEST(Metadata, SidecarHoldsTheRunsFacts) {
  RunMetadata m;
  m.kvbench_version = "0.1.0";
  m.git_sha = "abc";
  m.git_dirty = true;
  m.host = "h";
  m.started_at = "2025-01-01T00:00:00Z";
  m.config_path = "configs/smoke.yaml";
  m.config_fnv1a64 = fnv1a64_hex("x");
  m.settings.mode = TimingMode::cold;
  m.settings.seed = 42;
  m.device.name = "NVIDIA H200";
  m.device.uuid = "GPU-1";
  m.device.sm_count = 132;
  m.device.l2_bytes = 62914560;
  m.calibration = sample_calibration();
  FloorEntry f;
  f.mode = TimingMode::graph;
  f.stats.median_us = 0.6;
  m.launch_floor.push_back(f);
  m.cases = 3;
  const nlohmann::json j = nlohmann::json::parse(metadata_to_json(m));
  EXPECT_EQ(j.at("git_dirty"), true);
  EXPECT_TRUE(j.at("finished_at").is_null());
  EXPECT_EQ(j.at("config").at("fnv1a64"), fnv1a64_hex("x"));
  EXPECT_EQ(j.at("settings").at("mode"), "cold");
  EXPECT_EQ(j.at("settings").at("seed"), 42);
  EXPECT_EQ(j.at("settings").at("l2_flush"), "read");
  EXPECT_EQ(j.at("device").at("sm_count"), 132);
  EXPECT_EQ(j.at("device").at("l2_bytes"), 62914560);
  EXPECT_EQ(j.at("calibration").at("measured_peak_gbps"), 4200.25);
  EXPECT_EQ(j.at("measured_peak_gbps"), 4200.25);  // scripts/plot.py reads these two
  EXPECT_EQ(j.at("theoretical_peak_gbps"), 4815.4);
  EXPECT_EQ(j.at("launch_floor_us").at("graph").at("median_us"), 0.6);
  m.finished_at = "2025-01-01T00:01:00Z";
  EXPECT_EQ(nlohmann::json::parse(metadata_to_json(m)).at("finished_at"), "2025-01-01T00:01:00Z");
}

TEST(Derived, PercentagesOfPeakAndTheClockFlag) {
  Row r;
  r.timed = true;
  r.bytes = 2'000'000;
  r.stats.median_us = 1000;  // 2 GB/s
  r.sm_clock_mhz = 1700;
  add_derived(r, 4.0, 8.0, 1980);
  EXPECT_DOUBLE_EQ(r.gbps, 2.0);
  EXPECT_DOUBLE_EQ(r.pct_of_measured_peak, 50.0);
  EXPECT_DOUBLE_EQ(r.pct_of_theoretical_peak, 25.0);
  EXPECT_TRUE(r.clock_low);  // 1700 < 0.9 * 1980
  r.sm_clock_mhz = 1900;
  add_derived(r, 0, 0, 1980);  // unknown peaks
  EXPECT_EQ(r.pct_of_measured_peak, 0);
  EXPECT_EQ(r.pct_of_theoretical_peak, 0);
  EXPECT_FALSE(r.clock_low);
  r.sm_clock_mhz = 0;  // unknown clock: no flag
  add_derived(r, 4.0, 8.0, 1980);
  EXPECT_FALSE(r.clock_low);
}

TEST(Progress, LineAndEta) {
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(progress_line(0, 40, 0), "[0/40] 0s elapsed, ETA ?");
  EXPECT_EQ(progress_line(4, 40, 12), "[4/40] 12s elapsed, ETA 1m48s");
  EXPECT_EQ(progress_line(40, 40, 100), "[40/40] 1m40s elapsed, ETA 0s");
}

}  // namespace
}  // namespace kvbench
