// Each kernel against the CPU reference, bit for bit, through the same runner `kvbench run`
// uses (canary-filled outputs, whole-buffer comparison). Skips visibly without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "kernels/common/device_props.hpp"
#include "offsets64_cases.hpp"
#include "runtime/bound_kernels.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/calibrate.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

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
      if (c.kernel == Kernel::concat_mla_k && variant == Variant::slot_order) {
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
  Case c;
  c.kernel = Kernel::concat_mla_k;
  c.num_tokens = T;
  c.num_heads = H;
  c.head_dim = 128;
  c.rope_dim = 64;
  c.strides = strides;
  c.in_dtype = in;
  c.out_dtype = out;
  return c;
}

Case cache(std::int64_t T, std::int64_t H, std::int64_t D, std::int64_t BS) {
  Case c;
  c.kernel = Kernel::cache_write;
  c.num_tokens = T;
  c.num_heads = H;
  c.head_dim = D;
  c.block_size = BS;
  return c;
}

TEST_F(Gpu, ConcatBf16DeepSeekShapes) {
  for (std::int64_t T : {1, 7, 300})
    for (auto strides : {StrideMode::contiguous, StrideMode::sglang, StrideMode::padded})
      expect_passes(concat(T, 128, strides));
}

TEST_F(Gpu, ConcatNonPowerOfTwoHeadsAndDims) {
  expect_passes(concat(33, 12, StrideMode::contiguous));
  Case c = concat(5, 3, StrideMode::padded);
  c.head_dim = 100;
  c.rope_dim = 24;
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
      c.slots = slots;
      c.swa = swa;
      expect_passes(c);
    }
}

TEST_F(Gpu, CacheWriteLayoutsStridesAndOddSizes) {
  for (auto layout : {Layout::nhd, Layout::hnd})
    for (bool interleaved : {false, true})
      for (auto [H, D, BS] :
           {std::tuple{8, 80, 16}, std::tuple{1, 576, 64}, std::tuple{3, 96, 1}}) {
        Case c = cache(100, H, D, BS);
        c.layout = layout;
        c.kv_interleaved = interleaved;
        c.strides = StrideMode::padded;
        expect_passes(c);
      }
}

TEST_F(Gpu, CacheWriteScalesAndDtypes) {
  for (auto scale : all_values<ScaleMode>())
    for (auto in : {DType::f32, DType::f16, DType::bf16})
      for (auto out : all_values<DType>()) {
        Case c = cache(64, 8, 128, 16);
        c.scale = scale;
        c.in_dtype = in;
        c.out_dtype = out;
        expect_passes(c);
      }
}

// Large enough for the unrolled (UNROLL=4) tiling; padded strides with D=80 keep 16-byte
// alignment, D=100 forces the 1-element fallback.
TEST_F(Gpu, LargeLaunchesAndScalarFallback) {
  expect_passes(concat(3000, 128, StrideMode::sglang));
  Case odd = concat(2000, 12, StrideMode::padded);
  odd.rope_dim = 60;
  expect_passes(odd);
  for (std::int64_t D : {80, 100}) {
    Case c = cache(20000, 8, D, 16);
    c.slots = SlotPattern::padded;
    c.swa = true;
    c.strides = StrideMode::padded;
    expect_passes(c);
  }
  // Above L2 the concat takes the 2-D tiling, two tokens per thread where the input vector is
  // 16 bytes: a last block of partial tokens (T odd; H=1 puts several tokens in a block), the
  // 1-element fallback (ROPE 60) and fp8's 12 vectors per head.
  for (std::int64_t H : {1, 12}) {
    Case c = concat(H == 1 ? 150001 : 20001, H, StrideMode::padded);
    c.rope_dim = 60;
    expect_passes(c);
    c.rope_dim = 64;
    c.strides = StrideMode::contiguous;
    c.out_dtype = DType::fp8_e4m3;
    expect_passes(c);
  }
  Case fp8 = cache(9000, 8, 128, 16);
  fp8.out_dtype = DType::fp8_e4m3;
  fp8.scale = ScaleMode::per_head;
  fp8.layout = Layout::hnd;
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
  ASSERT_GT(c.num_tokens * c.num_heads * (c.head_dim + c.rope_dim), std::int64_t{1} << 31);
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

// The committed h200 profile (what `kvbench list --plan --device-profile h200` and the plan
// coverage test use) against the real H200: SM count, L2 size, and the occupancy of every
// kernel instantiation the plans ask about, at every block size they can use.
TEST_F(Gpu, H200ProfileMatchesTheDevice) {
  const kernels::DeviceProps& real = kernels::current_device_props();
  if (real.name.find("H200") == std::string::npos)
    GTEST_SKIP() << "not an H200: " << real.name;
  const kernels::DeviceProps h200 = kernels::device_profile("h200");
  EXPECT_EQ(real.sm_count, h200.sm_count);
  EXPECT_EQ(real.l2_bytes, h200.l2_bytes);
  using K = kernels::KernelRef::Kernel;
  int checked = 0;
  for (const DType in : {DType::f32, DType::f16, DType::bf16})
    for (const DType out : all_values<DType>()) {
      const auto in_b = static_cast<int>(size_of(in)), out_b = static_cast<int>(size_of(out));
      const int wide = 16 / std::min(in_b, out_b), narrow = 16 / in_b;
      for (const int v : {wide, narrow, 1}) {
        std::vector<kernels::KernelRef> refs{{K::concat_2d, in, out, v, 1, false},
                                             {K::concat_walk, in, out, v, v * in_b == 16 ? 4 : 1, false},
                                             {K::concat_flat, in, out, v, 1, false},
                                             {K::cache_write_optimized, in, out, v, 1, false},
                                             {K::cache_write_optimized, in, out, v, 1, true}};
        for (const kernels::KernelRef& k : refs)
          for (int threads = 32; threads <= 512; threads += 32) {
            if (k.kernel == K::cache_write_optimized && threads > 256) continue;
            if (k.kernel == K::concat_flat && threads > 256) continue;
            EXPECT_EQ(real.resident_blocks(k, threads), h200.resident_blocks(k, threads))
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
        KVB_CUDA_CHECK(cudaMemcpyAsync(d_src.get(), src.data(), 16 * words,
                                       cudaMemcpyHostToDevice, stream.get()));
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
          const std::uint32_t want =
              i >= 4 * write_words ? 0xABABABABu : i < 4 * read_words ? src[i] : 0u;
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

TEST_F(Gpu, BoundsTimeEverySmallRowOnce) {
  const auto row = [](const std::string& tokens, std::int64_t bytes) {
    ResultRow r;
    r.axes = {"reshape_and_cache_flash", "optimized", "s", tokens, "8", "128", "0", "16", "bf16",
              "bf16", "nhd", "none", "false", "false", "contiguous", "random"};
    r.status = Status::passed;
    r.timing = Timing{1.0, 0.9, 1.1};
    r.written_tokens = std::stoll(tokens);
    r.bytes = bytes;
    return r;
  };
  const std::int64_t per_token = 8 + 2 * 8 * 128 * 4;
  ResultTable t{"t.csv", {row("1", per_token), row("16", 16 * per_token),
                          row("16", 16 * per_token), row("1024", 1024 * per_token)}};
  RunSettings s;
  s.warmup = 1;
  s.min_samples = 2;
  s.min_time_s = 0;
  s.timeout_s = 0.05;
  const std::vector<BoundRow> rows = measure_bounds(t, 128, s);
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
}

}  // namespace
}  // namespace kvbench
