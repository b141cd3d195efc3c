// Pure pieces of src/core: enums, statistics, comparison, geometry, bytes, inputs and slots.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/stats.hpp"
#include "core/types.hpp"
#include "kernels/common/fast_div.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

TEST(Types, EveryEnumRoundTripsThroughItsName) {
  for (auto v : all_values<DType>()) EXPECT_EQ(from_string<DType>(to_string(v)), v);
  for (auto v : all_values<Status>()) EXPECT_EQ(from_string<Status>(to_string(v)), v);
  for (auto v : all_values<SlotPattern>()) EXPECT_EQ(from_string<SlotPattern>(to_string(v)), v);
  EXPECT_EQ(from_string<Kernel>("reshape_and_cache_flash"), Kernel::cache_write);
  try {
    from_string<Layout>("nchw");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown layout 'nchw' (expected one of nhd, hnd)");
  }
}

// Variants from outside are named up to kMaxExternalVariants, each a value of its own; one more
// is refused rather than wrapping the 16-bit value. In a child: the names are process-wide.
TEST(TypesDeathTest, ExternalVariantsStopAtTheirLimit) {
  const auto name_all = [] {
    std::set<Variant> values;
    for (std::size_t i = 0; i < kMaxExternalVariants; ++i)
      values.insert(name_external_variant("ext" + std::to_string(i)));
    if (values.size() != kMaxExternalVariants || to_string(*values.rbegin()) != "ext4095")
      std::exit(1);
    try {
      name_external_variant("one_more");
    } catch (const std::invalid_argument& e) {
      std::fputs(e.what(), stderr);
      std::exit(0);
    }
    std::exit(2);
  };
  EXPECT_EXIT(name_all(), ::testing::ExitedWithCode(0),
              "^variant 'one_more': more than 4096 variants from plugins in one process$");
}

TEST(Stats, MedianPercentilesAndSpread) {
  const Stats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.samples, 5);
  EXPECT_DOUBLE_EQ(s.median_us, 3);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 5);
  EXPECT_DOUBLE_EQ(s.mean_us, 3);
  EXPECT_DOUBLE_EQ(s.p10_us, 1.4);
  EXPECT_DOUBLE_EQ(s.p90_us, 4.6);
  EXPECT_NEAR(s.rel_stdev, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(summarize({2, 4}).median_us, 3);
  EXPECT_EQ(summarize({}).samples, 0);
}

TEST(Compare, CountsEveryDifferenceAndReportsTheFirst) {
  std::vector<std::uint16_t> e(200000, 0x3f80), a = e;
  a[3] = 0x0000;
  a[150000] = 0x7fc1;  // NaN vs a number: compared by bits
  const CompareResult r = compare_bitwise(e.data(), a.data(), 200000, 2, 1);
  EXPECT_EQ(r.count, 2);
  ASSERT_EQ(r.first.size(), 1u);
  EXPECT_EQ(r.first[0].index, 3);
  EXPECT_EQ(r.first[0].expected, 0x3f80u);
  EXPECT_EQ(r.first[0].actual, 0x0000u);
  EXPECT_EQ(compare_bitwise(e.data(), e.data(), 200000, 2).count, 0);
}

Case cache_case(std::int64_t T) { return testing_support::cache_case(T, 8, 128); }

TEST(Bytes, FollowSpecSection4) {
  Case c = testing_support::concat_case(2, 128, 128, 64);  // DeepSeek concat, bf16 -> bf16
  EXPECT_EQ(concat_bytes(c), 2 * 128 * 128 * 2 + 2 * 64 * 2 + 2 * 128 * 192 * 2);
  c.in_dtype = DType::f32;
  c.out_dtype = DType::fp8_e4m3;
  EXPECT_EQ(concat_bytes(c), 2 * 128 * 128 * 4 + 2 * 64 * 4 + 2 * 128 * 192 * 1);
  // Cache write: 10 tokens, 9 looked up, 7 written; K and V each read (bf16) and written (bf16).
  EXPECT_EQ(cache_write_bytes(cache_case(10), 9, 7), 8 * 10 + 8 * 9 + 7 * 2 * 8 * 128 * (2 + 2));
}

TEST(Geometry, LayoutsAndInterleavedCaches) {
  Case c = cache_case(100);
  CacheGeometry g = cache_geometry(c);
  EXPECT_EQ(g.slot_stride, 8 * 128);
  EXPECT_EQ(g.head_stride, 128);
  EXPECT_EQ(g.block_stride, 16 * 8 * 128);
  EXPECT_GE(g.num_slots, 100 + 12);
  EXPECT_EQ(g.value_cache_offset, g.num_blocks * g.block_stride);
  testing_support::cache_params(c).layout = Layout::hnd;
  testing_support::cache_params(c).kv_interleaved = true;
  g = cache_geometry(c);
  EXPECT_EQ(g.slot_stride, 128);
  EXPECT_EQ(g.head_stride, 16 * 128);
  EXPECT_EQ(g.block_stride, 2 * 16 * 8 * 128);  // vLLM's FlashInfer-style K/V interleave
  EXPECT_EQ(g.value_cache_offset, 16 * 8 * 128);
  EXPECT_EQ(g.cache_elems, 2 * g.num_blocks * 16 * 8 * 128);

  // NOPE 128, ROPE 64, one head.
  const Case k = testing_support::concat_case(3, 1, 128, 64, StrideMode::sglang);
  const ConcatGeometry cg = concat_geometry(k);
  EXPECT_EQ(cg.nope_s1, 256);  // view of kv_b_proj's [T, H, NOPE + V]
  EXPECT_EQ(cg.rope_s0, 576);  // view of the 576-wide latent
  EXPECT_EQ(cg.k_s1, 192);
}

TEST(Inputs, RandomValuesAreFiniteNonZeroAndSeeded) {
  std::vector<std::uint16_t> a(100000), b(100000), c(100000);
  fill_random(DType::bf16, a.data(), 100000, 42);
  fill_random(DType::bf16, b.data(), 100000, 42);
  fill_random(DType::bf16, c.data(), 100000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (auto v : a) {
    EXPECT_NE(v & 0x7fff, 0);       // never zero
    EXPECT_NE(v & 0x7f80, 0x7f80);  // never inf or NaN
  }
  std::vector<float> f(1000);
  fill_random(DType::f32, f.data(), 1000, 1);
  for (float x : f) EXPECT_TRUE(std::isfinite(x) && x != 0.0f);
}

TEST(Inputs, ScaleInjectionsCorruptTheScaleAndOnlyThose) {
  EXPECT_EQ(injected_scale(Inject::zero_scale, 0.5f), 0.0f);
  EXPECT_EQ(injected_scale(Inject::negative_scale, 0.5f), -0.5f);
  EXPECT_TRUE(std::isnan(injected_scale(Inject::nan_scale, 0.5f)));
  const float inf = injected_scale(Inject::inf_scale, 0.5f);
  EXPECT_TRUE(std::isinf(inf) && inf > 0.0f);
  for (Inject other : {Inject::none, Inject::slot_out_of_range, Inject::duplicate_slot,
                       Inject::short_stride, Inject::misaligned_cache})
    EXPECT_EQ(injected_scale(other, 0.5f), 0.5f) << to_string(other);
}

TEST(Slots, EveryPatternIsValidAndDistinct) {
  for (auto pattern : all_values<SlotPattern>()) {
    for (bool swa : {false, true}) {
      Case c = cache_case(1000);
      testing_support::cache_params(c).slots = pattern;
      testing_support::cache_params(c).swa = swa;
      const CacheGeometry g = cache_geometry(c);
      const SlotData s = make_slots(c, g, 9);
      SCOPED_TRACE(std::string(to_string(pattern)) + (swa ? " swa" : ""));
      EXPECT_EQ(check_slots(s, g), "");
      EXPECT_EQ(s.slot_mapping.size(), 1000u);
      EXPECT_EQ(s.swa_table.size(), swa ? static_cast<std::size_t>(g.logical_slots) : 0u);
      EXPECT_GT(s.written_tokens, 800);
      EXPECT_LE(s.written_tokens, 1000);
      if (pattern == SlotPattern::random && !swa) {
        EXPECT_EQ(s.written_tokens, 1000);
      }
      if (pattern == SlotPattern::padded) {
        EXPECT_EQ(s.slot_mapping[7], -1);
      }
    }
  }
}

TEST(Slots, CheckRejectsBadInputNamingTheToken) {
  Case c = cache_case(4);
  const CacheGeometry g = cache_geometry(c);
  SlotData s;
  s.slot_mapping = {0, 1, g.num_slots, 3};
  EXPECT_EQ(check_slots(s, g), "token 2: slot " + std::to_string(g.num_slots) +
                                   " >= NB*BS = " + std::to_string(g.num_slots));
  s.slot_mapping = {5, -1, 5, 3};
  EXPECT_EQ(check_slots(s, g), "token 2: physical slot 5 already written by token 0");
  s.slot_mapping = {0, 1, 2, 3};
  s.swa_table = {4, -1};
  EXPECT_EQ(check_slots(s, g), "token 2: SWA index 2 >= table size 2");
}

}  // namespace
}  // namespace kvbench

// kernels/common/fast_div.hpp: the optimized kernels' index division, against the `/` operator
// around every multiple of a range of divisors (where a wrong multiplier would first show) and at
// the top of its domain.
TEST(FastDiv, MatchesDivisionAtEveryMultipleBoundary) {
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 1024; ++d) divisors.push_back(d);
  for (std::uint32_t d : {1536u, 3072u, 4607u, 65535u, 65536u, 65537u, 1000003u, (1u << 30) - 1,
                          1u << 30, (1u << 30) + 1, 0x7FFFFFFFu})
    divisors.push_back(d);
  std::int64_t wrong = 0;
  for (std::uint32_t d : divisors) {
    const kvbench::kernels::FastDiv f(d);
    auto check = [&](std::uint64_t n) {
      if (n < 0x80000000u) wrong += f.div(static_cast<std::uint32_t>(n)) != n / d;
    };
    const std::uint64_t top = 0x7FFFFFFFu / d;  // the last multiple below 2^31
    const std::uint64_t stride = top / 1024 + 1;
    for (std::uint64_t k = 0; k <= top; k += (k < 4096 || top - k < 4096) ? 1 : stride) {
      check(k * d);
      check(k * d + d - 1);
    }
    check(0x7FFFFFFFu);
  }
  EXPECT_EQ(wrong, 0);
}

// kernels/common/fast_div.hpp: slot -> (block, offset) on both of its paths, the multiply-shift
// below 2^31 and the 64-bit division at and past it, against `/` and `%`.
TEST(SplitSlot, MatchesDivisionOnBothPaths) {
  using kvbench::kernels::fast_div_below_2_31;
  constexpr std::int64_t k31 = std::int64_t{1} << 31;
  int wrong = 0, cases = 0;
  for (const std::int64_t bs : {std::int64_t{1}, std::int64_t{16}, std::int64_t{64},
                                std::int64_t{1000}, k31 - 1, k31, k31 + 5}) {
    const kvbench::kernels::FastDiv div = fast_div_below_2_31(bs);
    for (const std::int64_t slot : {std::int64_t{0}, std::int64_t{1}, bs - 1, bs, 3 * bs + 1,
                                    k31 - 1, k31, k31 + 17, (std::int64_t{1} << 40) + 12345}) {
      if (slot < 0) continue;
      std::int64_t block = -1, offset = -1;
      kvbench::kernels::split_slot(slot, bs, div, block, offset);
      wrong += block != slot / bs || offset != slot % bs;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 63);
  EXPECT_EQ(wrong, 0);
}

// kernels/common/fast_div.hpp: the test that picks 32-bit index arithmetic. The largest offset a
// kernel may form is (T+1023)·s0 + (H-1)·s1 + D-1; it must stay at or below INT32_MAX.
TEST(OffsetsFitInt32, AcceptsUpToInt32MaxAndRejectsPastIt) {
  using kvbench::kernels::offsets_fit_int32;
  constexpr std::int64_t kMax = 0x7fffffff;
  EXPECT_TRUE(offsets_fit_int32(1, 0, 0, 1, 1));
  // concat's output at T=65536, H=128, NOPE+ROPE=192 (perf.yaml's largest): 1.6e9 elements.
  EXPECT_TRUE(offsets_fit_int32(65536, 128 * 192, 192, 128, 192));
  // Exactly at the limit, and one element past it: 1024·(2^21-1) + 4·2 + 1015 = INT32_MAX.
  EXPECT_TRUE(offsets_fit_int32(1, (1 << 21) - 1, 2, 5, 1016));
  EXPECT_FALSE(offsets_fit_int32(1, (1 << 21) - 1, 2, 5, 1017));
  EXPECT_FALSE(offsets_fit_int32(1, 1 << 21, 0, 1, 1));  // 1024·2^21 = 2^31
  // The heads' term alone past the limit.
  EXPECT_TRUE(offsets_fit_int32(1, 0, 1 << 20, 2048, 1 << 20));
  EXPECT_FALSE(offsets_fit_int32(1, 0, 1 << 20, 2048, (1 << 20) + 1));
  // Strides that could not be held, negative strides, empty or huge token counts.
  EXPECT_FALSE(offsets_fit_int32(1, kMax + 1, 0, 1, 1));
  EXPECT_FALSE(offsets_fit_int32(1, -1, 0, 1, 1));
  EXPECT_FALSE(offsets_fit_int32(4, 1, -8, 2, 8));
  EXPECT_FALSE(offsets_fit_int32(0, 1, 1, 1, 1));
  EXPECT_FALSE(offsets_fit_int32(kMax - 1000, 0, 0, 1, 1));
  EXPECT_FALSE(offsets_fit_int32(std::int64_t{1} << 40, 1 << 20, 0, 1, 1));  // no int64 wrap
}

TEST(CacheOffsetsFitInt32, AcceptsUpToInt32MaxAndRejectsPastIt) {
  using kvbench::kernels::cache_offsets_fit_int32;
  constexpr std::int64_t kMax = 0x7fffffff;
  EXPECT_TRUE(cache_offsets_fit_int32(1, 1, 0, 0, 1, 0, 1));
  // NHD H=8 D=128 BS=16: (2^17 blocks - 1)·16384 + 15·1024 + 7·128 + 127 < 2^31.
  EXPECT_TRUE(cache_offsets_fit_int32(1 << 21, 16, 16384, 1024, 8, 128, 128));
  // One more block passes the limit: 2^17·16384 = 2^31.
  EXPECT_FALSE(cache_offsets_fit_int32((1 << 21) + 1, 16, 16384, 1024, 8, 128, 128));
  // Exactly at the limit and one element past it (HND strides: slot D, head BS·D).
  const std::int64_t below = 1023 * 2097152 + 15 * 64 + 7 * 1024;  // blocks 1024, BS 16, H 8
  EXPECT_TRUE(cache_offsets_fit_int32(1024 * 16, 16, 2097152, 64, 8, 1024, kMax - below + 1));
  EXPECT_FALSE(cache_offsets_fit_int32(1024 * 16, 16, 2097152, 64, 8, 1024, kMax - below + 2));
  // A partial last block counts as a block: a third block starts at 2·2^30 = 2^31.
  EXPECT_TRUE(cache_offsets_fit_int32(32, 16, 1 << 30, 0, 1, 0, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(33, 16, 1 << 30, 0, 1, 0, 1));
  // Empty, negative or unholdable sizes and strides; products that would wrap int64.
  EXPECT_FALSE(cache_offsets_fit_int32(0, 16, 1, 1, 1, 1, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(16, 0, 1, 1, 1, 1, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(16, 16, -1, 1, 1, 1, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(16, 16, 1, 1, 1, kMax + 1, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(kMax + 1, 1, 0, 1, 1, 1, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(kMax, 1, kMax, 0, 1, 0, 1));
  EXPECT_FALSE(cache_offsets_fit_int32(2, 1, 0, 0, kMax, kMax, 1));
}
