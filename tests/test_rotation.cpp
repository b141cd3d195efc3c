// Rotated buffers (settings.rotate): the set count, the per-set seeds, the graph's launch count,
// and the CSV's buffer_sets column read back from schemas 1 and 2.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/csv.hpp"
#include "core/gate.hpp"
#include "core/operation.hpp"
#include "core/result_csv.hpp"
#include "core/rotation.hpp"
#include "core/sweep.hpp"

namespace kvbench {
namespace {

constexpr std::size_t kL2 = 60u << 20;  // the H200's
constexpr std::size_t kGiB = 1u << 30;

RotationInput in(int setting, std::int64_t set_bytes, std::size_t device_bytes,
                 std::size_t free_bytes = 100 * kGiB, TimingMode mode = TimingMode::graph,
                 Context context = Context::back_to_back) {
  return {setting, mode, context, set_bytes, device_bytes, kL2, free_bytes};
}

// The same input in the after_producer context, where a cap keeps the capped count.
RotationInput after_producer(RotationInput r) {
  r.context = Context::after_producer;
  return r;
}

TEST(Rotation, AutoIsTheSmallestCountWhoseSetsExceedThreeL2) {
  // 1 MiB a launch: 180 sets make exactly 3x L2, 181 exceed it.
  EXPECT_EQ(choose_buffer_sets(in(kRotateAuto, 1 << 20, 2 << 20)).sets, 181);
  // A set of 3x L2 or more is cold alone... but exactly 3x is not "exceeding": two sets.
  EXPECT_EQ(choose_buffer_sets(in(kRotateAuto, 3 * kL2, 3 * kL2)).sets, 2);
  EXPECT_EQ(choose_buffer_sets(in(kRotateAuto, 3 * kL2 + 1, 3 * kL2 + 1)).sets, 1);
  EXPECT_FALSE(choose_buffer_sets(in(kRotateAuto, 1 << 20, 2 << 20)).cold_context);
}

// Where the sets that fit cannot exceed 3x L2, back to back the case is timed on one set with
// the L2 flushed before each launch (the cold context); in a context whose predecessor writes
// the inputs, over the capped count.
TEST(Rotation, AutoShortOfL2IsTheColdContextBackToBack) {
  // A set of a few kB: 4096 sets (kMaxBufferSets) cover 16 MiB, not 180 MiB.
  const RotationChoice few_kb = choose_buffer_sets(in(kRotateAuto, 4096, 65536));
  EXPECT_EQ(few_kb.sets, 1);
  EXPECT_TRUE(few_kb.cold_context);
  const RotationChoice capped = choose_buffer_sets(after_producer(in(kRotateAuto, 4096, 65536)));
  EXPECT_EQ(capped.sets, kMaxBufferSets);
  EXPECT_FALSE(capped.cold_context);
  // 180 MiB / 46 kB is 4097.x sets: one more than the cap allows.
  EXPECT_TRUE(choose_buffer_sets(in(kRotateAuto, (3 * kL2) / 4097, 65536)).cold_context);
  EXPECT_FALSE(choose_buffer_sets(in(kRotateAuto, (3 * kL2) / 4095, 65536)).cold_context);
  // Explicit counts and cold mode are never changed.
  EXPECT_FALSE(choose_buffer_sets(in(61, 4096, 65536)).cold_context);
  EXPECT_FALSE(
      choose_buffer_sets(in(kRotateAuto, 4096, 65536, kGiB, TimingMode::cold)).cold_context);
}

TEST(Rotation, AutoIsCappedByDeviceMemoryAndIsOneInColdMode) {
  // 100 MiB a set, 1 GiB free: 0.8 GiB holds 8 sets (2 wanted).
  EXPECT_EQ(choose_buffer_sets(in(kRotateAuto, 100 << 20, 100 << 20, kGiB)).sets, 2);
  // 10 MiB touched of 500 MiB allocated a set (a big cache, few tokens), 2 GiB free: 3 fit, of
  // 19 wanted; back to back, the cold context instead.
  EXPECT_EQ(
      choose_buffer_sets(after_producer(in(kRotateAuto, 10 << 20, 500u << 20, 2 * kGiB))).sets, 3);
  EXPECT_TRUE(choose_buffer_sets(in(kRotateAuto, 10 << 20, 500u << 20, 2 * kGiB)).cold_context);
  // Nothing fits twice: one set, never zero.
  EXPECT_EQ(choose_buffer_sets(after_producer(in(kRotateAuto, 1 << 20, 900u << 20, kGiB))).sets, 1);
  // Cold mode flushes L2 before every launch already.
  EXPECT_EQ(choose_buffer_sets(in(kRotateAuto, 1 << 20, 1 << 20, kGiB, TimingMode::cold)).sets, 1);
}

TEST(Rotation, AutoIsCappedByHostMemoryToo) {
  RotationInput r = after_producer(in(kRotateAuto, 1 << 20, 1 << 20));  // 181 wanted
  r.set_host_bytes = 10u << 20;
  r.host_available_bytes = kGiB;  // half of it holds 51 sets of 10 MiB
  EXPECT_EQ(choose_buffer_sets(r).sets, 51);
  r.setting = 61;
  EXPECT_EQ(choose_buffer_sets(r).refused,
            "rotate 61 needs 0.64 GB of host memory, 1.07 GB available");
  r.setting = 51;
  EXPECT_EQ(choose_buffer_sets(r).refused, "");
}

TEST(Rotation, AnExplicitCountIsKeptOrRefusedWithTheNumbers) {
  EXPECT_EQ(choose_buffer_sets(in(1, 1 << 20, 1 << 20)).sets, 1);
  const RotationChoice ok = choose_buffer_sets(in(61, 1 << 20, 1 << 20));
  EXPECT_EQ(ok.sets, 61);
  EXPECT_EQ(ok.refused, "");
  const RotationChoice no = choose_buffer_sets(in(61, 1 << 20, 100u << 20, kGiB));
  EXPECT_EQ(no.refused, "rotate 61 needs 6.40 GB of device memory, 1.07 GB free");
  // One set is today's behaviour: never refused here (the allocation itself may fail).
  EXPECT_EQ(choose_buffer_sets(in(1, 1 << 20, 100 * kGiB, kGiB)).refused, "");
}

TEST(Rotation, SetZeroKeepsTheCaseSeedAndLaterSetsDiffer) {
  EXPECT_EQ(set_seed(12345, 0), 12345u);
  std::set<std::uint64_t> seen;
  for (int s = 0; s < 1000; ++s) seen.insert(set_seed(12345, s));
  EXPECT_EQ(seen.size(), 1000u);
  // A set's inputs use its seed + 0..4: no later set may land on the case seed's own streams.
  for (int s = 1; s < 1000; ++s) EXPECT_GT(set_seed(7, s) - 3, 8u) << s;
}

TEST(Rotation, AGraphLaunchesEverySetEquallyOften) {
  EXPECT_EQ(graph_launches(20, 1), 20);
  EXPECT_EQ(graph_launches(20, 61), 61);
  EXPECT_EQ(graph_launches(20, 7), 21);
  EXPECT_EQ(graph_launches(20, 20), 20);
  EXPECT_EQ(graph_launches(20, 3000), 3000);
}

TEST(Rotation, SettingAndFlagText) {
  EXPECT_EQ(parse_rotate("auto"), kRotateAuto);
  EXPECT_EQ(parse_rotate("61"), 61);
  EXPECT_THROW(parse_rotate("0"), std::invalid_argument);
  EXPECT_THROW(parse_rotate("-1"), std::invalid_argument);
  EXPECT_THROW(parse_rotate("2x"), std::invalid_argument);
  EXPECT_THROW(parse_rotate(""), std::invalid_argument);
  // YAML 1.2 integers, as every integer setting.
  EXPECT_EQ(parse_rotate("0x10"), 16);
  EXPECT_EQ(parse_rotate("0o10"), 8);
  EXPECT_EQ(parse_rotate("010"), 10);
  EXPECT_THROW(parse_rotate("0x1001"), std::invalid_argument);  // 4097
  EXPECT_THROW(parse_rotate("99999999999999999999"), std::invalid_argument);
  EXPECT_EQ(parse_config("settings: {rotate: 0x10}\nsweeps:\n  - kernel: concat_and_cast_mha_k\n",
                         "t.yaml")
                .settings.rotate,
            16);
  EXPECT_EQ(rotate_text(kRotateAuto), "auto");
  EXPECT_EQ(rotate_text(61), "61");
  const Config c = parse_config(
      "settings: {rotate: auto, hot_inputs: true}\nsweeps:\n  - kernel: concat_and_cast_mha_k\n",
      "t.yaml");
  EXPECT_EQ(c.settings.rotate, kRotateAuto);
  EXPECT_TRUE(c.settings.hot_inputs);
  const Config d = parse_config("sweeps:\n  - kernel: concat_and_cast_mha_k\n", "t.yaml");
  EXPECT_EQ(d.settings.rotate, 1);  // default: today's behaviour
  EXPECT_FALSE(d.settings.hot_inputs);
}

const std::string kGate = std::string(KVBENCH_SOURCE_DIR) + "/tests/data/gate/";

TEST(Rotation, CsvReadsBufferSetsFromSchemaTwoAndOneFromSchemaOne) {
  const ResultTable one = read_results(kGate + "baseline.csv");
  ASSERT_FALSE(one.rows.empty());
  for (const ResultRow& r : one.rows) EXPECT_EQ(r.buffer_sets, 1);
  const ResultTable two = read_results(kGate + "rotated.csv");
  ASSERT_EQ(two.rows.size(), one.rows.size());
  EXPECT_EQ(two.rows[0].buffer_sets, 61);
  EXPECT_EQ(two.rows[1].buffer_sets, 1);
  // The gate refuses a row timed over 61 sets against one timed over 1 (docs/gate.md); rows of
  // equal counts compare across schemas.
  EXPECT_THROW(run_gate(one, two, {}), GateError);
  EXPECT_EQ(run_gate(one, one, {}).exit_code(), kGatePass);
  const ResultTable same = read_results(kGate + "hot_slower.csv");
  EXPECT_EQ(run_gate(one, same, {}).exit_code(), kGateRegression);
}

TEST(Rotation, WrittenRowsCarryTheirSetCount) {
  const auto split = [](const std::string& line) {
    std::vector<std::string> out(1);
    for (char ch : line) {
      if (ch == ',')
        out.emplace_back();
      else
        out.back().push_back(ch);
    }
    return out;
  };
  Row r;
  r.c = operation(Kernel::concat_mha_k).default_case();
  r.buffer_sets = 61;
  const auto header = split(csv_header()), fields = split(csv_line(r));
  ASSERT_EQ(header.size(), fields.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "buffer_sets") {
      EXPECT_EQ(fields[i], "61");
    }
  }
}

}  // namespace
}  // namespace kvbench
