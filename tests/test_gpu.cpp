// Each kernel against the CPU reference, bit for bit, through the same runner `kvbench run`
// uses (canary-filled outputs, whole-buffer comparison). Skips visibly without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <tuple>

#include "core/csv.hpp"
#include "core/inputs.hpp"
#include "core/operation.hpp"
#include "core/rotation.hpp"
#include "kernels/cache_write/cache_write.hpp"
#include "kernels/cache_write/plan.hpp"
#include "kernels/common/device_props.hpp"
#include "offsets64_cases.hpp"
#include "runtime/bound_kernels.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/cupti_timer.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::cache_params;
using testing_support::concat_params;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_ = open_device();
    } catch (const NoDeviceError& e) {
      GTEST_SKIP() << e.what();
    }
  }

  // Every variant must pass every case.
  void expect_passes(Case c) {
    RunSettings s;
    s.warmup = 1;
    s.min_samples = 2;
    s.min_time_s = 0;
    s.timeout_s = 0.05;
    s.launches_per_sample = 2;
    for (auto variant : all_values<Variant>()) {
      c.variant = variant;
      const Row row = run_case(c, s, device_);
      if (!variant_refusal(c).empty()) {  // not a variant of the case's operation
        EXPECT_EQ(row.status, Status::not_supported) << describe(c);
        continue;
      }
      EXPECT_EQ(row.status, Status::passed) << describe(c) << ": " << row.reason;
      EXPECT_EQ(row.mismatches, 0);
      EXPECT_TRUE(row.timed);
      EXPECT_GT(row.stats.median_us, 0.0);
    }
  }

  DeviceInfo device_;
};

Case concat(std::int64_t T, std::int64_t H, StrideMode strides, DType in = DType::bf16,
            DType out = DType::bf16) {
  Case c = testing_support::concat_case(T, H, 128, 64, strides);
  c.in_dtype = in;
  c.out_dtype = out;
  return c;
}

Case cache(std::int64_t T, std::int64_t H, std::int64_t D, std::int64_t BS) {
  return testing_support::cache_case(T, H, D, BS);
}

TEST_F(Gpu, ConcatBf16DeepSeekShapes) {
  for (std::int64_t T : {1, 7, 300})
    for (auto strides : {StrideMode::contiguous, StrideMode::sglang, StrideMode::padded})
      expect_passes(concat(T, 128, strides));
}

TEST_F(Gpu, ConcatNonPowerOfTwoHeadsAndDims) {
  expect_passes(concat(33, 12, StrideMode::contiguous));
  Case c = concat(5, 3, StrideMode::padded);
  concat_params(c).nope_dim = 100;
  concat_params(c).rope_dim = 24;
  expect_passes(c);
}

TEST_F(Gpu, ConcatEveryDtypePair) {
  for (auto in : {DType::f32, DType::f16, DType::bf16})
    for (auto out : all_values<DType>()) expect_passes(concat(9, 16, StrideMode::sglang, in, out));
}

TEST_F(Gpu, CacheWriteBf16EverySlotPattern) {
  for (auto slots : all_values<SlotPattern>())
    for (bool swa : {false, true}) {
      Case c = cache(257, 8, 128, 16);
      cache_params(c).slots = slots;
      cache_params(c).swa = swa;
      expect_passes(c);
    }
}

TEST_F(Gpu, CacheWriteLayoutsStridesAndOddSizes) {
  for (auto layout : {Layout::nhd, Layout::hnd})
    for (bool interleaved : {false, true})
      for (auto [H, D, BS] :
           {std::tuple{8, 80, 16}, std::tuple{1, 576, 64}, std::tuple{3, 96, 1}}) {
        Case c = cache(100, H, D, BS);
        cache_params(c).layout = layout;
        cache_params(c).kv_interleaved = interleaved;
        c.strides = StrideMode::padded;
        expect_passes(c);
      }
}

TEST_F(Gpu, CacheWriteScalesAndDtypes) {
  for (auto scale : {ScaleMode::none, ScaleMode::per_tensor, ScaleMode::per_head})
    for (auto in : {DType::f32, DType::f16, DType::bf16})
      for (auto out : all_values<DType>()) {
        Case c = cache(64, 8, 128, 16);
        cache_params(c).scale = scale;
        c.in_dtype = in;
        c.out_dtype = out;
        expect_passes(c);
      }
}

// scale per_token_head (SPEC.md §7): both input types, both layouts, interleaved K/V, padded
// strides, every slot pattern with and without SWA, head sizes of each plan path; seed_port and
// slot_order report it not_supported (expect_passes).
TEST_F(Gpu, CacheWriteTokenHeadLayoutsSlotsAndHeadSizes) {
  const auto token_head = [](std::int64_t T, std::int64_t H, std::int64_t D, DType in) {
    Case c = cache(T, H, D, 16);
    c.in_dtype = in;
    c.out_dtype = DType::fp8_e4m3;
    cache_params(c).scale = ScaleMode::per_token_head;
    return c;
  };
  for (auto in : {DType::bf16, DType::f16})
    for (auto layout : {Layout::nhd, Layout::hnd})
      for (bool interleaved : {false, true})
        for (auto strides : {StrideMode::contiguous, StrideMode::padded}) {
          Case c = token_head(37, 8, 128, in);
          cache_params(c).layout = layout;
          cache_params(c).kv_interleaved = interleaved;
          c.strides = strides;
          expect_passes(c);
        }
  for (auto slots : all_values<SlotPattern>())
    for (bool swa : {false, true}) {
      Case c = token_head(257, 8, 128, DType::bf16);
      cache_params(c).slots = slots;
      cache_params(c).swa = swa;
      expect_passes(c);
    }
  for (std::int64_t D : {4, 64, 100, 256, 512, 576, 1040})
    expect_passes(token_head(9, 3, D, DType::f16));
  // What SPEC.md §7 does not define.
  for (auto [in, out, D] :
       {std::tuple{DType::f32, DType::fp8_e4m3, 128}, std::tuple{DType::bf16, DType::fp8_e5m2, 128},
        std::tuple{DType::bf16, DType::fp8_e4m3, 126}}) {
    Case c = token_head(16, 8, D, in);
    c.out_dtype = out;
    c.variant = Variant::optimized;
    RunSettings s;
    const Row row = run_case(c, s, device_);
    EXPECT_EQ(row.status, Status::not_supported) << describe(c);
    EXPECT_NE(row.reason.find("per_token_head"), std::string::npos) << row.reason;
  }
}

// concat_and_cache_mla against the reference, bit for bit over the whole canary-filled cache:
// every dtype pair, with and without the per-tensor scale, dense and padded strides.
TEST_F(Gpu, MlaCacheEveryDtypePairScaleAndStride) {
  for (auto in : {DType::f16, DType::bf16})
    for (auto out : {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2})
      for (auto scale : {MlaScale::none, MlaScale::per_tensor})
        for (auto strides : {StrideMode::contiguous, StrideMode::padded})
          for (std::int64_t T : {1, 37}) {
            Case c = testing_support::mla_case(T);
            c.in_dtype = in;
            c.out_dtype = out;
            c.strides = strides;
            testing_support::mla_params(c).scale = scale;
            expect_passes(c);
          }
}

// Slot patterns (padding tokens write nothing), block sizes 1-128, widths no 16-byte vector
// divides (the one-element plan), and a prefill-sized write.
TEST_F(Gpu, MlaCacheSlotsBlockSizesOddWidthsAndPrefill) {
  for (auto slots : {SlotPattern::random, SlotPattern::contiguous, SlotPattern::padded})
    for (std::int64_t BS : {1, 16, 64, 128}) {
      Case c = testing_support::mla_case(300, 512, 64, BS);
      testing_support::mla_params(c).slots = slots;
      c.out_dtype = DType::fp8_e4m3;
      expect_passes(c);
    }
  for (auto [L, R] : {std::pair{100, 20}, std::pair{512, 20}, std::pair{100, 64}}) {
    Case c = testing_support::mla_case(129, L, R, 16);
    testing_support::mla_params(c).scale = MlaScale::per_tensor;
    c.out_dtype = DType::fp8_e5m2;
    expect_passes(c);
  }
  Case prefill = testing_support::mla_case(32768);
  testing_support::mla_params(prefill).slots = SlotPattern::padded;
  testing_support::mla_params(prefill).scale = MlaScale::per_tensor;
  prefill.out_dtype = DType::fp8_e4m3;
  expect_passes(prefill);
}

// The fp8_ds_mla layout through the runner: both tile rules, both input types, dense and padded
// strides, every slot pattern, block sizes 1-128, decode to prefill.
TEST_F(Gpu, MlaCacheDsMlaRulesInputsSlotsAndSizes) {
  for (auto in : {DType::bf16, DType::f16})
    for (auto rule : {MlaScale::tile_raw, MlaScale::tile_pow2})
      for (auto strides : {StrideMode::contiguous, StrideMode::padded})
        for (auto slots : {SlotPattern::random, SlotPattern::contiguous, SlotPattern::padded})
          for (auto [T, BS] : {std::pair{1, 64}, std::pair{37, 1}, std::pair{300, 16},
                               std::pair{300, 128}, std::pair{8192, 64}}) {
            Case c = testing_support::mla_case(T, 512, 64, BS);
            c.in_dtype = in;
            c.out_dtype = DType::fp8_e4m3;
            c.strides = strides;
            testing_support::mla_params(c).layout = MlaLayout::fp8_ds_mla;
            testing_support::mla_params(c).scale = rule;
            testing_support::mla_params(c).slots = slots;
            expect_passes(c);
          }
}

// Large enough for the unrolled (UNROLL=4) tiling; padded strides with D=80 keep 16-byte
// alignment, D=100 forces the 1-element fallback.
TEST_F(Gpu, LargeLaunchesAndScalarFallback) {
  expect_passes(concat(3000, 128, StrideMode::sglang));
  Case odd = concat(2000, 12, StrideMode::padded);
  concat_params(odd).rope_dim = 60;
  expect_passes(odd);
  for (std::int64_t D : {80, 100}) {
    Case c = cache(20000, 8, D, 16);
    cache_params(c).slots = SlotPattern::padded;
    cache_params(c).swa = true;
    c.strides = StrideMode::padded;
    expect_passes(c);
  }
  // Above L2 the concat takes the 2-D tiling, two tokens per thread where the input vector is
  // 16 bytes: a last block of partial tokens (T odd; H=1 puts several tokens in a block), the
  // 1-element fallback (ROPE 60) and fp8's 12 vectors per head.
  for (std::int64_t H : {1, 12}) {
    Case c = concat(H == 1 ? 150001 : 20001, H, StrideMode::padded);
    concat_params(c).rope_dim = 60;
    expect_passes(c);
    concat_params(c).rope_dim = 64;
    c.strides = StrideMode::contiguous;
    c.out_dtype = DType::fp8_e4m3;
    expect_passes(c);
  }
  Case fp8 = cache(9000, 8, 128, 16);
  fp8.out_dtype = DType::fp8_e4m3;
  cache_params(fp8).scale = ScaleMode::per_head;
  cache_params(fp8).layout = Layout::hnd;
  expect_passes(fp8);
}

// SPEC.md: 64-bit offsets everywhere. These cases put output elements (and the V cache's base)
// past 2^31 elements from their buffer's start, where a 32-bit offset wraps.
std::string memory_shortfall(double device_gb, double host_gb) {
  std::size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return "cudaMemGetInfo failed";
  const double host_total = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                            static_cast<double>(sysconf(_SC_PAGE_SIZE)) / 1e9;
  if (static_cast<double>(free_bytes) / 1e9 < device_gb)
    return "needs " + std::to_string(device_gb) + " GB of device memory, " +
           std::to_string(static_cast<double>(free_bytes) / 1e9) + " GB free";
  if (host_total * 0.8 < host_gb)
    return "needs " + std::to_string(host_gb) + " GB of host memory, " +
           std::to_string(host_total) + " GB installed";
  return "";
}

TEST_F(Gpu, Offsets64BitConcatPast2To31Elements) {
  Case c = offsets64_concat_case();  // k: 90000 * 128 * 192 = 2.21e9 elements
  ASSERT_GT(c.num_tokens * c.num_heads * (concat_params(c).nope_dim + concat_params(c).rope_dim),
            std::int64_t{1} << 31);
  if (const std::string why = memory_shortfall(8.5, 14); !why.empty()) GTEST_SKIP() << why;
  expect_passes(c);
}

TEST_F(Gpu, Offsets64BitCacheWritePast2To31Elements) {
  Case c = offsets64_cache_case();  // each cache ~1.03 * 2^31 elements
  const CacheGeometry g = cache_geometry(c);
  ASSERT_GT(g.value_cache_offset, std::int64_t{1} << 31);
  if (const std::string why = memory_shortfall(19, 30); !why.empty()) GTEST_SKIP() << why;
  expect_passes(c);
}

// The committed profile of the device (h200 or h100: what `kvbench list --plan --device-profile`
// and the plan coverage test use) against the real board: SM count, L2 size, and the occupancy of
// every kernel instantiation the plans ask about, at every block size they can use.
TEST_F(Gpu, ProfileMatchesTheDevice) {
  const kernels::DeviceProps& real = kernels::current_device_props();
  std::string name;
  for (const std::string& n : kernels::device_profile_names()) {
    std::string upper = n;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (real.name.find(upper) != std::string::npos) name = n;
  }
  if (name.empty()) GTEST_SKIP() << "no committed profile for " << real.name;
  const kernels::DeviceProps profile = kernels::device_profile(name);
  EXPECT_EQ(real.sm_count, profile.sm_count);
  EXPECT_EQ(real.l2_bytes, profile.l2_bytes);
  using K = kernels::KernelRef::Kernel;
  int checked = 0;
  for (const DType in : {DType::f32, DType::f16, DType::bf16})
    for (const DType out : all_values<DType>()) {
      const auto in_b = static_cast<int>(size_of(in)), out_b = static_cast<int>(size_of(out));
      const int wide = 16 / std::min(in_b, out_b), narrow = 16 / in_b;
      for (const int v : {wide, narrow, 1}) {
        std::vector<kernels::KernelRef> refs{
            {K::concat_2d, in, out, v, 1, false},
            {K::concat_2d, in, out, v, v * in_b == 16 ? 2 : 1, false},
            {K::concat_walk, in, out, v, v * in_b == 16 ? 4 : 1, false},
            {K::concat_flat, in, out, v, 1, false},
            {K::cache_write_optimized, in, out, v, 1, false},
            {K::cache_write_optimized, in, out, v, 1, true}};
        for (const kernels::KernelRef& k : refs)
          for (int threads = 32; threads <= 512; threads += 32) {
            if (k.kernel == K::cache_write_optimized && threads > 256) continue;
            if (k.kernel == K::concat_flat && threads > 256) continue;
            EXPECT_EQ(real.resident_blocks(k, threads), profile.resident_blocks(k, threads))
                << k.name() << " at " << threads << " threads";
            ++checked;
          }
      }
    }
  EXPECT_GT(checked, 1000);
}

TEST_F(Gpu, UnsupportedDtypePairIsReportedNotRun) {
  RunSettings s;
  Case c = cache(4, 8, 128, 16);
  c.in_dtype = DType::fp8_e4m3;
  const Row row = run_case(c, s, device_);
  EXPECT_EQ(row.status, Status::not_supported);
  EXPECT_NE(row.reason.find("fp8_e4m3->bf16"), std::string::npos) << row.reason;
  EXPECT_FALSE(row.timed);
}

// Needs no device: the reason a case that ran out of device memory gets in its row.
TEST(RunnerReasons, OutOfDeviceMemoryIsNamed) {
  EXPECT_EQ(failure_reason(CudaError(cudaErrorMemoryAllocation, "cudaMalloc(...) failed")),
            "out of device memory");
  EXPECT_EQ(failure_reason(CudaError(cudaErrorIllegalAddress, "kernel failed")), "kernel failed");
}

TEST_F(Gpu, EveryModeTimesAKernelAndReadsTheClock) {
  const Stream stream;
  const DeviceDetails d = device_details();
  for (TimingMode mode : all_values<TimingMode>()) {
    RunSettings s;
    s.mode = mode;
    s.warmup = 2;
    s.min_samples = 20;
    s.min_time_s = 0;
    s.timeout_s = 2;
    s.launches_per_sample = 4;
    const Measurement m =
        measure([](cudaStream_t st) { return timing::launch_empty(st); }, stream.get(), s);
    EXPECT_GE(m.stats.samples, 20) << to_string(mode);
    EXPECT_GT(m.stats.median_us, 0.0) << to_string(mode);
    EXPECT_LT(m.stats.median_us, 100.0) << to_string(mode);  // an empty kernel
    EXPECT_EQ(m.launches_per_sample, mode == TimingMode::cold ? 1 : 4);
    EXPECT_GT(m.sm_clock_mhz, 100.0) << to_string(mode);
    EXPECT_LT(m.sm_clock_mhz, 1.2 * d.max_sm_clock_mhz) << to_string(mode);
  }
  EXPECT_FALSE(blocking_kernel_timed_out());
}

// Every context times the same case, whichever predecessor runs before each launch; the
// predecessor is never counted, so the case stays a microsecond kernel.
TEST_F(Gpu, EveryContextTimesACase) {
  Case c = operation(Kernel::cache_write).default_case();
  c.variant = Variant::optimized;
  RunSettings s;
  s.warmup = 2;
  s.min_samples = 10;
  s.min_time_s = 0;
  s.timeout_s = 2;
  s.launches_per_sample = 4;
  s.layer_mib = 8;
  for (Context context : all_values<Context>()) {
    s.context = context;
    s.hot_inputs = context == Context::after_producer;
    const Row row = run_case(c, s, device_);
    EXPECT_EQ(row.status, Status::passed) << to_string(context) << ": " << row.reason;
    EXPECT_GT(row.stats.median_us, 0.0) << to_string(context);
    EXPECT_LT(row.stats.median_us, 50.0) << to_string(context);
    std::printf("  %s: %.3f us\n", std::string(to_string(context)).c_str(), row.stats.median_us);
  }
}

// The floor anomaly (docs/measurement.md, "The launch floor"): a graph replay has a launch cost
// of its own, shared by the launches in it, so the graph-mode floor of a run with few launches
// per sample reads high. Prints the floor at 1, 2, 5 and 20 launches per replay; a floor at 1
// more than twice the floor at 20 confirms that this, not the board, moved it.
TEST_F(Gpu, GraphFloorFallsWithLaunchesPerSample) {
  const DeviceDetails d = device_details();
  std::vector<double> floor_us;
  for (int n : {1, 2, 5, 20}) {
    RunSettings s;
    s.launches_per_sample = n;
    for (const LaunchFloor& f : measure_launch_floor(s, d.max_sm_clock_mhz)) {
      if (f.mode != TimingMode::graph) continue;
      floor_us.push_back(f.m.stats.median_us);
      std::printf("  graph floor, %2d launches per replay: %.3f us (SM clock %.0f MHz%s)\n", n,
                  f.m.stats.median_us, f.m.sm_clock_mhz, f.clock_low ? ", low" : "");
      EXPECT_FALSE(f.clock_low);
    }
  }
  ASSERT_EQ(floor_us.size(), 4u);
  EXPECT_GT(floor_us[0], 2 * floor_us[3]);
  EXPECT_GT(floor_us[1], floor_us[3]);
}

// What `--hot-inputs` adds beside the case: an empty kernel after the producer, timed the way
// the runner times a case with a producer (the producer's own median subtracted), against the
// same empty kernel back to back. Back to back, a PDL kernel's launch overlaps its predecessor's;
// after the producer (a plain kernel, which never triggers its dependents) it cannot, so its
// floor rises. The printed line gives the floors docs/measurement.md quotes.
TEST_F(Gpu, HotInputsFloorOfAPdlKernelRises) {
  constexpr int kSets = 256;
  constexpr std::size_t kInputBytes = 4096;  // a T=1 cache write's inputs, rounded up
  const DeviceBuffer inputs(kSets * kInputBytes);
  auto* base = inputs.as<unsigned char>();
  RunSettings s;
  s.min_samples = 20;
  s.min_time_s = 0.02;
  s.timeout_s = 2;
  s.launches_per_sample = kSets;
  const Stream stream;
  const SetLaunch producer = [&](int set, cudaStream_t st) {
    return timing::launch_touch(base + static_cast<std::size_t>(set) * kInputBytes, kInputBytes, 0,
                                device_.sm_count, st);
  };
  const SetLaunch plain = [](int, cudaStream_t st) { return timing::launch_empty(st); };
  const SetLaunch pdl = [](int, cudaStream_t st) { return launch_empty_pdl(st); };
  const auto median = [&](const SetLaunch& launch, const SetLaunch& before) {
    return measure(Workload{launch, kSets, before}, stream.get(), s).stats.median_us;
  };
  const double chain = median(plain, {}), chain_pdl = median(pdl, {});
  const double after = median(plain, producer), after_pdl = median(pdl, producer);
  std::printf(
      "  empty kernel, graph, %d sets: back to back %.3f us (PDL %.3f); after the "
      "producer %.3f us (PDL %.3f)\n",
      kSets, chain, chain_pdl, after, after_pdl);
  EXPECT_GT(after_pdl, chain_pdl);
}

// Light sampling (validation.yaml's kind: one warm-up, two samples, no minimum time) must read
// the same floor as perf.yaml's settings: the floor raises the sampling it is given
// (floor_settings) and starts on steady clocks (settle_clocks).
TEST_F(Gpu, LaunchFloorDoesNotDependOnLightSampling) {
  const DeviceDetails d = device_details();
  RunSettings light;
  light.warmup = 1;
  light.min_samples = 2;
  light.min_time_s = 0;
  light.timeout_s = 0.05;
  RunSettings perf;
  perf.min_samples = 20;
  perf.min_time_s = 0.02;
  perf.timeout_s = 2;
  const std::vector<LaunchFloor> a = measure_launch_floor(light, d.max_sm_clock_mhz);
  const std::vector<LaunchFloor> b = measure_launch_floor(perf, d.max_sm_clock_mhz);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::printf("  %-5s floor: light %.3f us, perf %.3f us\n",
                std::string(to_string(a[i].mode)).c_str(), a[i].m.stats.median_us,
                b[i].m.stats.median_us);
    EXPECT_GE(a[i].m.stats.samples, 20);
    EXPECT_NEAR(a[i].m.stats.median_us, b[i].m.stats.median_us, 0.1 + 0.1 * b[i].m.stats.median_us)
        << to_string(a[i].mode);
  }
  // After a settle the SM clock is at its steady level.
  EXPECT_GT(settle_clocks(0.05), kClockLowFraction * d.max_sm_clock_mhz);
}

TEST_F(Gpu, AFailingLaunchThrowsAndReleasesTheStream) {
  const Stream stream;
  RunSettings s;
  s.mode = TimingMode::hot;
  EXPECT_THROW(measure([](cudaStream_t) { return cudaErrorInvalidValue; }, stream.get(), s),
               CudaError);
  // The blocking kernel was released: the stream drains well before its timeout.
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_FALSE(blocking_kernel_timed_out());
}

TEST_F(Gpu, CalibrationIsPlausible) {
  const DeviceDetails d = device_details();
  const Calibration c = calibrate(d);
  EXPECT_GT(c.memcpy_gbps, 100.0);
  EXPECT_GT(c.copy_kernel_gbps, 100.0);
  EXPECT_EQ(c.measured_peak_gbps, std::max(c.memcpy_gbps, c.copy_kernel_gbps));
  if (c.theoretical_peak_gbps > 0) {
    EXPECT_LT(c.measured_peak_gbps, 1.05 * c.theoretical_peak_gbps);
  }
  EXPECT_GE(c.buffer_bytes, std::min(4.0 * static_cast<double>(d.l2_bytes), 256.0 * (1 << 20)));
}

// `kvbench bounds`' workloads write exactly what bound_kernels.hpp says, and nothing past it.
TEST_F(Gpu, BoundKernelsWriteTheirWordsAndNoMore) {
  constexpr std::size_t kCanary = 64;  // words after the written ones, which must stay 0xAB
  const Stream stream;
  for (const BoundShape shape : {BoundShape{1, 128}, BoundShape{4, 256}, BoundShape{8, 512}}) {
    for (const std::size_t read_words : {1ul, 3ul, 4097ul, 65541ul}) {
      for (const std::size_t write_words : {1ul, 2ul, 4100ul, 65541ul}) {
        SCOPED_TRACE(std::to_string(shape.per_thread) + "x" + std::to_string(shape.threads) +
                     " read " + std::to_string(read_words) + " write " +
                     std::to_string(write_words));
        const std::size_t words = std::max(read_words, write_words) + kCanary;
        std::vector<std::uint32_t> src(4 * words);
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint32_t>(3 * i + 1);
        const DeviceBuffer d_src(16 * words), d_dst(16 * words), sink(4);
        // Everything on `stream`, which is non-blocking: legacy-stream copies would race it.
        KVB_CUDA_CHECK(cudaMemcpyAsync(d_src.get(), src.data(), 16 * words, cudaMemcpyHostToDevice,
                                       stream.get()));
        std::vector<std::uint32_t> got(4 * words);

        KVB_CUDA_CHECK(cudaMemsetAsync(d_dst.get(), 0xAB, 16 * words, stream.get()));
        ASSERT_EQ(launch_store16(d_dst.get(), 16 * write_words, shape, stream.get()), cudaSuccess);
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        KVB_CUDA_CHECK(cudaMemcpy(got.data(), d_dst.get(), 16 * words, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < words; ++i) {
          const auto w = static_cast<std::uint32_t>(i);
          const std::uint32_t want[4] = {w, ~w, w, ~w};
          for (int k = 0; k < 4; ++k)
            ASSERT_EQ(got[4 * i + k], i < write_words ? want[k] : 0xABABABABu) << "word " << i;
        }

        KVB_CUDA_CHECK(cudaMemsetAsync(d_dst.get(), 0xAB, 16 * words, stream.get()));
        ASSERT_EQ(launch_move16(d_src.get(), 16 * read_words, d_dst.get(), 16 * write_words, 0,
                                sink.as<std::uint32_t>(), shape, stream.get()),
                  cudaSuccess);
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        KVB_CUDA_CHECK(cudaMemcpy(got.data(), d_dst.get(), 16 * words, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < 4 * words; ++i) {
          const std::uint32_t want = i >= 4 * write_words ? 0xABABABABu
                                     : i < 4 * read_words ? src[i]
                                                          : 0u;
          ASSERT_EQ(got[i], want) << "element " << i;
        }
      }
    }
  }
  EXPECT_EQ(launch_store16(nullptr, 16, BoundShape{3, 256}, stream.get()), cudaErrorInvalidValue);
  EXPECT_EQ(launch_store16(nullptr, 16, BoundShape{4, 100}, stream.get()), cudaErrorInvalidValue);
  EXPECT_EQ(launch_move16(nullptr, 0, nullptr, 0, 0, nullptr, BoundShape{}, stream.get()),
            cudaErrorInvalidValue);
}

// A passed, timed row of `kernel` (bf16, H=8, D or NOPE 128, NHD) at `tokens`, for the bounds.
ResultRow bound_row(const std::string& kernel, const std::string& tokens, std::int64_t bytes,
                    std::int64_t written, Timing timing = Timing{1.0, 0.9, 1.1}) {
  ResultRow r;
  r.axes = {
      kernel,       "optimized", "s",    tokens, "8",    "128",   kernel[0] == 'c' ? "64" : "0",
      "16",         "bf16",      "bf16", "nhd",  "none", "false", "false",
      "contiguous", "random"};
  r.status = Status::passed;
  r.timing = timing;
  r.written_tokens = written;
  r.bytes = bytes;
  return r;
}

// measure_bounds' rows, in the order it hands them over (as each case's floors are timed).
std::vector<BoundRow> bounds_of(const ResultTable& t, std::int64_t max_tokens,
                                const RunSettings& s) {
  std::vector<BoundRow> rows;
  const std::size_t n =
      measure_bounds(t, max_tokens, s, "", [&](BoundRow r) { rows.push_back(std::move(r)); });
  EXPECT_EQ(n, rows.size());
  return rows;
}

TEST_F(Gpu, BoundsTimeEverySmallRowOnce) {
  const auto row = [](const std::string& tokens, std::int64_t bytes) {
    return bound_row("reshape_and_cache_flash", tokens, bytes, std::stoll(tokens));
  };
  const std::int64_t per_token = 8 + 2 * 8 * 128 * 4;
  ResultTable t{"t.csv",
                {row("1", per_token), row("16", 16 * per_token), row("16", 16 * per_token),
                 row("1024", 1024 * per_token)}};
  RunSettings s;
  s.warmup = 1;
  s.min_samples = 2;
  s.min_time_s = 0;
  s.timeout_s = 0.05;
  const std::vector<BoundRow> rows = bounds_of(t, 128, s);
  ASSERT_EQ(rows.size(), 3u);  // T=1024 is past --max-tokens
  for (const BoundRow& r : rows) {
    EXPECT_EQ(r.read_bytes + r.write_bytes, r.bytes);
    EXPECT_GT(r.launch_floor_us, 0.0);
    EXPECT_GT(r.pdl_launch_floor_us, 0.0);
    EXPECT_GT(r.write_floor_us, 0.0);
    EXPECT_GT(r.move_floor_us, 0.0);
    EXPECT_FALSE(r.write_floor_method.empty());
    EXPECT_EQ(r.move_floor_method.rfind("move16 t", 0), 0u) << r.move_floor_method;
  }
  EXPECT_EQ(rows[1].move_floor_us, rows[2].move_floor_us);  // one split, timed once
  for (const BoundRow& r : rows) {  // the cache write's bound: its rows scattered to its slots
    EXPECT_GT(r.scatter_floor_us, 0.0);
    EXPECT_EQ(r.scatter_floor_method.rfind("scatter16 t", 0), 0u) << r.scatter_floor_method;
    EXPECT_NE(r.scatter_floor_method.find('x'), std::string::npos) << r.scatter_floor_method;
    EXPECT_EQ(bound_of(r), std::min(r.scatter_floor_us, r.move_floor_us));
    // By the mean: each floor's lowest mean, the reference the lower of the two.
    EXPECT_GT(r.move_floor_mean_us, 0.0);
    EXPECT_GT(r.scatter_floor_mean_us, 0.0);
    EXPECT_EQ(plain_move_mean_of(r), std::min(r.scatter_floor_mean_us, r.move_floor_mean_us));
  }
}

// A row timed in a context is bounded in it, by its timer: after a producer of its inputs,
// timed on its own by CUPTI (that part skipped, like the cupti timer's tests, where CUPTI cannot
// be loaded).
TEST_F(Gpu, BoundsAreTimedInTheRowsContext) {
  ResultRow r = bound_row("reshape_and_cache_flash", "16", 16 * (8 + 2 * 8 * 128 * 2), 16);
  RunSettings s;
  s.warmup = 1;
  s.min_samples = 2;
  s.min_time_s = 0;
  s.timeout_s = 0.05;
  for (const char* context : {"cold", "after_producer", "layer"}) {
    r.context = Text(context);
    r.timer = Text("events");
    const std::vector<BoundRow> rows = bounds_of(ResultTable{"t.csv", {r}}, 128, s);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(to_string(rows[0].context), context);
    EXPECT_GE(rows[0].move_floor_us, 0.0) << context;  // the predecessor's median subtracted
    EXPECT_GE(rows[0].scatter_floor_us, 0.0) << context;
  }
  if (!CuptiTimer::get()) GTEST_SKIP() << CuptiTimer::unavailable_reason();
  r.context = Text("after_producer");
  r.timer = Text("cupti");
  const std::vector<BoundRow> rows = bounds_of(ResultTable{"t.csv", {r}}, 128, s);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].timer, Timer::cupti);
  EXPECT_GT(rows[0].move_floor_us, 0.0);            // the floor's own kernel: never 0
  EXPECT_NE(rows[0].write_floor_method, "memset");  // a memset node: no kernel record
  EXPECT_GT(rows[0].write_floor_us, 0.0);
  EXPECT_GT(rows[0].scatter_floor_us, 0.0);
  EXPECT_GT(plain_move_mean_of(rows[0]), 0.0);  // CUPTI's samples: a mean too
}

// Every size, rotated as its row was: the bound of a T=1024 row over its 3 sets, no write floor
// past T=128, and concat's bound is its contiguous move.
TEST_F(Gpu, BoundsCoverEverySizeRotated) {
  const auto row = [](const std::string& kernel, const std::string& tokens, std::int64_t bytes,
                      std::int64_t written) {
    ResultRow r = bound_row(kernel, tokens, bytes, written, Timing{5.0, 4.9, 5.1});
    r.buffer_sets = 3;
    return r;
  };
  const std::int64_t per_token = 8 + 2 * 8 * 128 * 4;
  const std::int64_t concat = 1024 * (8 * 128 * 2 + 64 * 2 + 8 * 192 * 2);
  ResultTable t{"t.csv",
                {row("reshape_and_cache_flash", "1024", 1024 * per_token, 1024),
                 row("concat_and_cast_mha_k", "1024", concat, 1024)}};
  RunSettings s;
  s.warmup = 1;
  s.min_samples = 2;
  s.min_time_s = 0;
  s.timeout_s = 0.05;
  const std::vector<BoundRow> rows = bounds_of(t, std::int64_t{1} << 40, s);
  ASSERT_EQ(rows.size(), 2u);
  for (const BoundRow& r : rows) {
    EXPECT_EQ(r.buffer_sets, 3);
    EXPECT_EQ(r.write_floor_us, 0.0);  // T > 128: not timed
    EXPECT_GT(r.move_floor_us, 0.0);
  }
  EXPECT_GT(rows[0].scatter_floor_us, 0.0);
  EXPECT_EQ(rows[1].scatter_floor_us, 0.0);
  EXPECT_EQ(bound_of(rows[1]), rows[1].move_floor_us);
}

// The scatter bound moves the same bytes to the same places as the cache write: for a bf16 ->
// bf16 case (a pure copy) its caches equal the optimized kernel's, byte for byte, canaries
// included, with the slots the runner draws for the case (its ScatterShape's rows).
TEST_F(Gpu, ScatterBoundWritesWhereTheCacheWriteWrites) {
  const Stream stream;
  const cudaStream_t st = stream.get();
  for (const auto& [layout, swa, interleaved, slots] :
       {std::tuple{Layout::nhd, false, false, SlotPattern::random},
        std::tuple{Layout::hnd, false, false, SlotPattern::padded},
        std::tuple{Layout::nhd, true, false, SlotPattern::random},
        std::tuple{Layout::hnd, false, true, SlotPattern::random}}) {
    Case c = testing_support::cache_case(100, 8, 128, 16);
    c.variant = Variant::optimized;
    cache_params(c).layout = layout;
    cache_params(c).swa = swa;
    cache_params(c).kv_interleaved = interleaved;
    cache_params(c).slots = slots;
    SCOPED_TRACE(describe(c));
    const CacheGeometry g = cache_geometry(c);
    const SlotData sd = make_slots(c, g, case_seed(c, 1) + 2);
    std::vector<unsigned char> key(static_cast<std::size_t>(g.key_elems) * 2), value(key.size());
    fill_random(DType::bf16, key.data(), g.key_elems, 11);
    fill_random(DType::bf16, value.data(), g.key_elems, 12);
    const std::size_t cache_bytes = static_cast<std::size_t>(g.cache_elems) * 2;
    const DeviceBuffer d_key(key.size()), d_value(value.size()),
        d_slots(sd.slot_mapping.size() * 8),
        d_swa(std::max<std::size_t>(8, sd.swa_table.size() * 8)), d_a(cache_bytes),
        d_b(cache_bytes), d_table(static_cast<std::size_t>(g.num_slots) * 4),
        d_rows(sd.slot_mapping.size() * 8), sink(4);
    // Set 0: its seed is the case's.
    const std::vector<std::int64_t> rows =
        operation(c.kernel).scatter_shape(c)->rows(case_seed(c, 1));
    KVB_CUDA_CHECK(
        cudaMemcpyAsync(d_key.get(), key.data(), key.size(), cudaMemcpyHostToDevice, st));
    KVB_CUDA_CHECK(
        cudaMemcpyAsync(d_value.get(), value.data(), value.size(), cudaMemcpyHostToDevice, st));
    KVB_CUDA_CHECK(cudaMemcpyAsync(d_slots.get(), sd.slot_mapping.data(), d_slots.bytes(),
                                   cudaMemcpyHostToDevice, st));
    if (swa)
      KVB_CUDA_CHECK(cudaMemcpyAsync(d_swa.get(), sd.swa_table.data(), sd.swa_table.size() * 8,
                                     cudaMemcpyHostToDevice, st));
    KVB_CUDA_CHECK(
        cudaMemcpyAsync(d_rows.get(), rows.data(), d_rows.bytes(), cudaMemcpyHostToDevice, st));
    KVB_CUDA_CHECK(cudaMemsetAsync(d_a.get(), 0xA5, cache_bytes, st));
    KVB_CUDA_CHECK(cudaMemsetAsync(d_b.get(), 0xA5, cache_bytes, st));
    KVB_CUDA_CHECK(cudaMemsetAsync(d_table.get(), 0xFF, d_table.bytes(), st));

    kernels::CacheWriteArgs a{};
    a.key = d_key.get();
    a.value = d_value.get();
    a.key_cache = d_a.get();
    a.value_cache = d_a.as<unsigned char>() + g.value_cache_offset * 2;
    a.slot_mapping = d_slots.as<std::int64_t>();
    a.swa_slot_mapping = swa ? d_swa.as<std::int64_t>() : nullptr;
    a.num_tokens = c.num_tokens;
    a.num_heads = c.num_heads;
    a.head_size = cache_params(c).head_size;
    a.block_size = cache_params(c).block_size;
    a.key_s0 = a.value_s0 = g.key_s0;
    a.key_s1 = a.value_s1 = g.key_s1;
    a.block_stride = g.block_stride;
    a.slot_stride = g.slot_stride;
    a.head_stride = g.head_stride;
    a.skip_slot = g.skip_slot;
    a.num_slots = g.num_slots;
    a.slot_table = d_table.as<std::int32_t>();
    a.scale = ScaleMode::none;
    a.in_dtype = a.out_dtype = DType::bf16;
    ASSERT_EQ(kernels::launch_cache_write(a, Variant::optimized, st), cudaSuccess);  // its plan

    ScatterArgs b;
    b.src_k = d_key.get();
    b.src_v = d_value.get();
    b.dst_row = d_rows.as<std::int64_t>();
    b.dst = d_b.get();
    b.v_offset = g.value_cache_offset * 2;
    b.tokens = c.num_tokens;
    b.heads = c.num_heads;
    b.head_read = b.head_write = cache_params(c).head_size * 2;
    b.head_stride = g.head_stride * 2;
    b.word_bytes = 16;
    b.sink = sink.as<std::uint32_t>();
    std::vector<unsigned char> got_a(cache_bytes), got_b(cache_bytes);
    KVB_CUDA_CHECK(
        cudaMemcpyAsync(got_a.data(), d_a.get(), cache_bytes, cudaMemcpyDeviceToHost, st));
    for (bool eager : {false, true}) {
      SCOPED_TRACE(eager ? "eager" : "row first");
      KVB_CUDA_CHECK(cudaMemsetAsync(d_b.get(), 0xA5, cache_bytes, st));
      ASSERT_EQ(launch_scatter(b, 256, 4, eager, st), cudaSuccess);
      KVB_CUDA_CHECK(
          cudaMemcpyAsync(got_b.data(), d_b.get(), cache_bytes, cudaMemcpyDeviceToHost, st));
      KVB_CUDA_CHECK(cudaStreamSynchronize(st));
      EXPECT_TRUE(got_a == got_b);
    }
    EXPECT_NE(std::count(got_a.begin(), got_a.end(), 0xA5),
              static_cast<std::ptrdiff_t>(cache_bytes));
  }
}

// The scatter bound moves each head chunk of each written token to its row, K and V, and
// touches nothing else.
TEST_F(Gpu, ScatterMovesEachRowToItsSlotAndNothingElse) {
  const Stream stream;
  constexpr std::int64_t T = 3, H = 2;
  const std::int64_t head_stride = 48, v_offset = 1024, dst_bytes = 2048;
  const std::vector<std::int64_t> rows = {512, -1, 128};
  std::vector<unsigned char> k(T * H * 32), v(T * H * 32);
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<unsigned char>(i);
    v[i] = static_cast<unsigned char>(255 - i);
  }
  const DeviceBuffer d_k(k.size()), d_v(v.size()), d_rows(8 * T), d_dst(dst_bytes), sink(4);
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(d_k.get(), k.data(), k.size(), cudaMemcpyHostToDevice, stream.get()));
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(d_v.get(), v.data(), v.size(), cudaMemcpyHostToDevice, stream.get()));
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(d_rows.get(), rows.data(), 8 * T, cudaMemcpyHostToDevice, stream.get()));
  // (bytes read, bytes written, head stride) per head: equal, narrower and wider outputs, and
  // NHD-like rows (stride = written bytes: the kernel's row path).
  for (const auto& [read, write, stride] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{32, 32, head_stride},
        {32, 16, head_stride},
        {16, 32, head_stride},
        {32, 32, 32}}) {
    for (const auto& [word, per_thread] : {std::pair{16, 1}, std::pair{16, 4}, std::pair{8, 4},
                                           std::pair{4, 1}, std::pair{2, 4}, std::pair{1, 1}})
      for (bool eager : {false, true}) {
        SCOPED_TRACE("read " + std::to_string(read) + " write " + std::to_string(write) +
                     " stride " + std::to_string(stride) + " word " + std::to_string(word) + " x" +
                     std::to_string(per_thread) + (eager ? " eager" : ""));
        KVB_CUDA_CHECK(cudaMemsetAsync(d_dst.get(), 0xAB, dst_bytes, stream.get()));
        ScatterArgs a;
        a.src_k = d_k.get();
        a.src_v = d_v.get();
        a.dst_row = d_rows.as<std::int64_t>();
        a.dst = d_dst.get();
        a.v_offset = v_offset;
        a.tokens = T;
        a.heads = H;
        a.head_read = read;
        a.head_write = write;
        a.head_stride = stride;
        a.word_bytes = word;
        a.sink = sink.as<std::uint32_t>();
        ASSERT_EQ(launch_scatter(a, 128, per_thread, eager, stream.get()), cudaSuccess);
        std::vector<unsigned char> got(dst_bytes);
        KVB_CUDA_CHECK(cudaMemcpyAsync(got.data(), d_dst.get(), dst_bytes, cudaMemcpyDeviceToHost,
                                       stream.get()));
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        std::vector<unsigned char> want(dst_bytes, 0xAB);
        for (std::int64_t t = 0; t < T; ++t)
          for (std::int64_t h = 0; h < H && rows[t] >= 0; ++h)
            for (std::int64_t b = 0; b < write; ++b) {  // the input is [T, H, read] bytes
              const std::int64_t from = (t * H + h) * read + b;
              want[rows[t] + h * stride + b] = b < read ? k[from] : 0;
              want[rows[t] + v_offset + h * stride + b] = b < read ? v[from] : 0;
            }
        EXPECT_EQ(got, want);
      }
  }
}

}  // namespace
}  // namespace kvbench
