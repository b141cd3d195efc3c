// The CUPTI timer (runtime/cupti_timer.hpp): loading libcupti at run time and falling back to
// the event timer without it (on the CPU), and each launch of a replayed graph timed on its own
// (on a GPU; skipped visibly without one, or without libcupti).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/cuda_resources.hpp"
#include "runtime/cupti_timer.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

TEST(CuptiLoader, CandidatesFollowTheEnvironment) {
  EXPECT_EQ(cupti_candidates("/opt/x/libcupti.so.12", nullptr, 13),
            std::vector<std::string>{"/opt/x/libcupti.so.12"});
  const std::vector<std::string> c = cupti_candidates(nullptr, "/opt/cuda", 13);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0], "libcupti.so.13");  // the build's major version first
  EXPECT_EQ(c[1], "libcupti.so");
  EXPECT_EQ(c[2], "/opt/cuda/lib64/libcupti.so.13");
  EXPECT_EQ(c[5], "/opt/cuda/extras/CUPTI/lib64/libcupti.so");
  // An empty variable is not set.
  EXPECT_EQ(cupti_candidates("", "", 12)[2], "/usr/local/cuda/lib64/libcupti.so.12");
}

// Each test runs in a process of its own (gtest_discover_tests), so each loads afresh.
TEST(CuptiLoader, ABogusFileIsNamedOnceAndTheTimerIsNotUsed) {
  setenv("KVBENCH_CUPTI", "no-such-dir/libcupti.so", 1);
  testing::internal::CaptureStderr();
  EXPECT_EQ(CuptiTimer::get(), nullptr);
  EXPECT_EQ(CuptiTimer::get(), nullptr);
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string why = CuptiTimer::unavailable_reason();
  EXPECT_EQ(why.rfind("KVBENCH_CUPTI=no-such-dir/libcupti.so: ", 0), 0u) << why;
  EXPECT_EQ(err, cupti_fallback_message(why) + "\n");  // one line, once
  EXPECT_EQ(err.rfind("kvbench: warning: the cupti timer is unavailable (KVBENCH_CUPTI=", 0), 0u);
  EXPECT_NE(err.find("); timing with CUDA events\n"), std::string::npos) << err;
}

TEST(CuptiLoader, ALibraryWithoutTheActivityApiIsRefused) {
  setenv("KVBENCH_CUPTI", "libm.so.6", 1);
  testing::internal::CaptureStderr();
  EXPECT_EQ(CuptiTimer::get(), nullptr);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(CuptiTimer::unavailable_reason(), "libm.so.6: no symbol cuptiGetVersion");
}

class GpuCupti : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_ = open_device();
    } catch (const NoDeviceError& e) {
      GTEST_SKIP() << e.what();
    }
  }
  static RunSettings settings() {
    RunSettings s;
    s.timer = Timer::cupti;
    s.warmup = 2;
    s.min_samples = 40;
    s.min_time_s = 0;
    s.timeout_s = 2;
    s.launches_per_sample = 8;
    return s;
  }
  DeviceInfo device_;
};

// A bogus $KVBENCH_CUPTI: the message, then the event timer's figures.
TEST_F(GpuCupti, ABogusLibraryFallsBackToEvents) {
  setenv("KVBENCH_CUPTI", "no-such-dir/libcupti.so", 1);
  const Stream stream;
  testing::internal::CaptureStderr();
  const Measurement m =
      measure([](cudaStream_t st) { return timing::launch_empty(st); }, stream.get(), settings());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(m.timer, Timer::events);
  EXPECT_EQ(m.replays, 0u);
  EXPECT_GT(m.stats.median_us, 0.0);
  EXPECT_NE(err.find("the cupti timer is unavailable"), std::string::npos) << err;
}

// Eight empty kernels per replay: every replay's records add up, each launch is a sample, and
// the replay spans at least its eight kernels.
TEST_F(GpuCupti, EachLaunchOfAReplayIsTimedOnItsOwn) {
  if (!CuptiTimer::get()) GTEST_SKIP() << CuptiTimer::unavailable_reason();
  const Stream stream;
  const Measurement m =
      measure([](cudaStream_t st) { return timing::launch_empty(st); }, stream.get(), settings());
  EXPECT_EQ(m.timer, Timer::cupti);
  EXPECT_GT(m.replays, 0u);
  EXPECT_EQ(m.replays_incomplete, 0u);
  EXPECT_EQ(static_cast<std::size_t>(m.stats.samples), 8 * (m.replays - m.replays_incomplete));
  EXPECT_GT(m.stats.median_us, 0.0);
  EXPECT_LT(m.stats.median_us, 20.0);  // an empty kernel
  EXPECT_GE(m.span_us, 8 * m.stats.min_us);
  std::printf(
      "  empty kernel, 8 per replay: %.3f us each, gap %.3f us, span %.3f us (%zu replays, "
      "%zu invalid records)\n",
      m.stats.median_us, m.gap_us, m.span_us, m.replays, m.records_dropped);
}

// With a producer, the launch is timed on its own and the producer beside it, nothing
// subtracted.
TEST_F(GpuCupti, AProducerIsTimedBesideTheLaunch) {
  if (!CuptiTimer::get()) GTEST_SKIP() << CuptiTimer::unavailable_reason();
  constexpr std::size_t kBytes = std::size_t{64} << 20;  // long enough to tell from an empty one
  const DeviceBuffer buf(kBytes);
  const Stream stream;
  const SetLaunch producer = [&](int, cudaStream_t st) {
    return timing::launch_touch(buf.get(), kBytes, 0, device_.sm_count, st);
  };
  const SetLaunch empty = [](int, cudaStream_t st) { return timing::launch_empty(st); };
  const Measurement m = measure(Workload{empty, 1, producer}, stream.get(), settings());
  EXPECT_EQ(m.timer, Timer::cupti);
  EXPECT_EQ(m.replays_incomplete, 0u);
  EXPECT_GT(m.producer_us, 5 * m.stats.median_us);
  EXPECT_GT(m.span_us, 8 * m.producer_us);
}

}  // namespace
}  // namespace kvbench
