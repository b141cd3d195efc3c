// The CUPTI timer's bookkeeping (core/kernel_records.hpp) on synthetic records: invalid records
// dropped and counted, a wrong record count detected, and the duration, gap and span arithmetic.
#include <gtest/gtest.h>

#include "core/kernel_records.hpp"

namespace kvbench {
namespace {

KernelRecord rec(std::uint64_t start, std::uint64_t end, std::uint32_t graph = 7) {
  return KernelRecord{start, end, graph};
}

TEST(KernelRecords, InvalidRecordsAreStartZeroOrEndBeforeStart) {
  EXPECT_TRUE(invalid_record(rec(0, 100)));
  EXPECT_TRUE(invalid_record(rec(200, 100)));
  EXPECT_FALSE(invalid_record(rec(100, 100)));
  EXPECT_FALSE(invalid_record(rec(100, 200)));
}

TEST(KernelRecords, LaunchesOnlyGiveDurationGapAndSpan) {
  // Three launches of one kernel, handed over out of order.
  const ReplayShape shape{3, 0, 1};
  const ReplayTiming t = time_replay({rec(5000, 6500), rec(1000, 2000), rec(3000, 4250)}, shape);
  ASSERT_TRUE(t.complete) << t.problem;
  ASSERT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.producers.empty());
  EXPECT_DOUBLE_EQ(t.launches[0].duration_us, 1.0);
  EXPECT_FALSE(t.launches[0].has_gap);
  EXPECT_DOUBLE_EQ(t.launches[1].duration_us, 1.25);
  EXPECT_TRUE(t.launches[1].has_gap);
  EXPECT_DOUBLE_EQ(t.launches[1].gap_us, 1.0);
  EXPECT_DOUBLE_EQ(t.launches[2].duration_us, 1.5);
  EXPECT_DOUBLE_EQ(t.launches[2].gap_us, 0.75);
  EXPECT_DOUBLE_EQ(t.span_us, 5.5);
}

TEST(KernelRecords, ProducerKernelsComeFirstInEachStep) {
  // Two steps of [P K]: the launch's gap is after its own step's producer.
  const ReplayShape shape{2, 1, 1};
  const ReplayTiming t =
      time_replay({rec(1000, 3000), rec(3500, 4500), rec(5000, 7000), rec(7200, 8000)}, shape);
  ASSERT_TRUE(t.complete) << t.problem;
  ASSERT_EQ(t.producers.size(), 2u);
  ASSERT_EQ(t.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(t.producers[0].duration_us, 2.0);
  EXPECT_FALSE(t.producers[0].has_gap);
  EXPECT_DOUBLE_EQ(t.producers[1].gap_us, 0.5);
  EXPECT_DOUBLE_EQ(t.launches[0].duration_us, 1.0);
  EXPECT_DOUBLE_EQ(t.launches[0].gap_us, 0.5);
  EXPECT_DOUBLE_EQ(t.launches[1].duration_us, 0.8);
  EXPECT_DOUBLE_EQ(t.launches[1].gap_us, 0.2);
  EXPECT_DOUBLE_EQ(t.span_us, 7.0);
}

TEST(KernelRecords, ALaunchOfTwoKernelsIsOneUnit) {
  const ReplayShape shape{1, 0, 2};
  const ReplayTiming t = time_replay({rec(1000, 2000), rec(2100, 2600)}, shape);
  ASSERT_TRUE(t.complete) << t.problem;
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(t.launches[0].duration_us, 1.6);
}

TEST(KernelRecords, AnOverlappingStartGivesANegativeGap) {
  // A programmatic dependent launch may start before its predecessor ends.
  const ReplayTiming t = time_replay({rec(1000, 3000), rec(2500, 3500)}, ReplayShape{2, 0, 1});
  ASSERT_TRUE(t.complete) << t.problem;
  EXPECT_DOUBLE_EQ(t.launches[1].gap_us, -0.5);
  EXPECT_DOUBLE_EQ(t.span_us, 2.5);
}

TEST(KernelRecords, InvalidRecordsAreDroppedAndCounted) {
  const ReplayShape shape{2, 0, 1};
  const ReplayTiming t =
      time_replay({rec(1000, 2000), rec(0, 0), rec(5000, 4000), rec(3000, 3500)}, shape);
  ASSERT_TRUE(t.complete) << t.problem;
  EXPECT_EQ(t.dropped, 2u);
  EXPECT_DOUBLE_EQ(t.launches[1].gap_us, 1.0);
}

TEST(KernelRecords, RecordsOfNoGraphAreLeftOut) {
  // The engine's blocking kernel runs before each replay, outside the graph.
  const ReplayTiming t =
      time_replay({rec(10, 900, 0), rec(1000, 2000), rec(3000, 3500)}, ReplayShape{2, 0, 1});
  ASSERT_TRUE(t.complete) << t.problem;
  EXPECT_EQ(t.foreign, 1u);
  EXPECT_EQ(t.dropped, 0u);
  EXPECT_DOUBLE_EQ(t.span_us, 2.5);
}

TEST(KernelRecords, AWrongRecordCountMakesTheReplayIncomplete) {
  const ReplayShape shape{3, 0, 1};
  const ReplayTiming missing = time_replay({rec(1000, 2000), rec(3000, 3500)}, shape);
  EXPECT_FALSE(missing.complete);
  EXPECT_EQ(missing.problem,
            "2 valid kernel records in the replay (0 invalid dropped), the graph "
            "has 3 kernels");
  EXPECT_TRUE(missing.launches.empty());
  // An invalid record leaves one too few as well.
  const ReplayTiming dropped = time_replay({rec(1000, 2000), rec(0, 10), rec(3000, 3500)}, shape);
  EXPECT_FALSE(dropped.complete);
  EXPECT_EQ(dropped.dropped, 1u);
  const ReplayTiming extra =
      time_replay({rec(1000, 2000), rec(3000, 3500), rec(4000, 4100), rec(5000, 5100)}, shape);
  EXPECT_FALSE(extra.complete);
}

TEST(KernelRecords, RecordsOfTwoGraphsInOneReplayAreRefused) {
  const ReplayTiming t =
      time_replay({rec(1000, 2000, 7), rec(3000, 3500, 8)}, ReplayShape{2, 0, 1});
  EXPECT_FALSE(t.complete);
  EXPECT_EQ(t.problem, "kernel records of graphs 7 and 8 in one replay");
}

TEST(KernelRecords, SummaryTakesMediansOverCompleteReplays) {
  const ReplayShape shape{2, 1, 1};
  std::vector<ReplayTiming> replays;
  // Launch durations 1, 2 | 3, 4 | (incomplete); gaps 0.5 each in replay 1, 1.5 in replay 2.
  replays.push_back(
      time_replay({rec(1000, 2000), rec(2500, 3500), rec(4000, 5000), rec(5500, 7500)}, shape));
  replays.push_back(time_replay(
      {rec(10000, 11000), rec(12500, 15500), rec(16000, 17000), rec(18500, 22500)}, shape));
  replays.push_back(time_replay({rec(1000, 2000), rec(0, 0)}, shape));
  const ReplaySummary s = summarize_replays(replays);
  EXPECT_EQ(s.replays, 3u);
  EXPECT_EQ(s.incomplete, 1u);
  EXPECT_EQ(s.dropped, 1u);
  ASSERT_EQ(s.launch_us.size(), 4u);
  EXPECT_DOUBLE_EQ(s.launch_median_us, 2.5);
  EXPECT_DOUBLE_EQ(s.gap_median_us, 1.0);
  EXPECT_DOUBLE_EQ(s.producer_median_us, 1.0);
  EXPECT_DOUBLE_EQ(s.span_median_us, (6.5 + 12.5) / 2);
}

TEST(KernelRecords, SummaryOfNoCompleteReplayIsEmpty) {
  const ReplaySummary s = summarize_replays({time_replay({}, ReplayShape{1, 0, 1})});
  EXPECT_EQ(s.incomplete, 1u);
  EXPECT_TRUE(s.launch_us.empty());
  EXPECT_EQ(s.launch_median_us, 0);
}

}  // namespace
}  // namespace kvbench
