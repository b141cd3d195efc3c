// The validator's pure parts: .npy headers, mismatch coordinates and values, launch-level
// bad-input checks and the `inject` axis.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/mismatch_report.hpp"
#include "core/npy.hpp"
#include "core/validate.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::cache_params;

TEST(Npy, HeaderIsVersion1AlignedAndDescribesTheArray) {
  const std::string h = npy_header("<f4", {2, 3});
  ASSERT_GE(h.size(), 10u);
  EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(h[6], '\x01');
  EXPECT_EQ(h[7], '\x00');
  const std::size_t len = static_cast<unsigned char>(h[8]) | static_cast<unsigned char>(h[9]) << 8;
  EXPECT_EQ(len + 10, h.size());
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.back(), '\n');
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.size(), 128u);  // 10 + 59 + newline, rounded up to 64
  EXPECT_EQ(h.find_first_not_of(' ', 10 + dict.size()), h.size() - 1);
  // One dimension is a Python 1-tuple.
  EXPECT_NE(npy_header("|u1", {5}).find("'shape': (5,), }"), std::string::npos);
  EXPECT_EQ(npy_descr(DType::f16), "<f2");
  EXPECT_EQ(npy_descr(DType::bf16), "<u2");
  EXPECT_EQ(npy_descr(DType::fp8_e4m3), "|u1");
}

TEST(Npy, WritesHeaderThenRawData) {
  const std::string path = ::testing::TempDir() + "/kvbench_test.npy";
  const float data[3] = {1.0f, -2.0f, 0.5f};
  write_npy(path, "<f4", {3}, data, sizeof data);
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string bytes = all.str();
  const std::size_t header = npy_header("<f4", {3}).size();
  ASSERT_EQ(bytes.size(), header + sizeof data);
  EXPECT_EQ(bytes.substr(0, header), npy_header("<f4", {3}));
  EXPECT_EQ(std::memcmp(bytes.data() + header, data, sizeof data), 0);
  EXPECT_THROW(write_npy("/nonexistent/dir/x.npy", "<f4", {3}, data, sizeof data),
               std::runtime_error);
}

Case concat_case() { return testing_support::concat_case(4, 3, 8, 4, StrideMode::padded); }

TEST(Locate, ConcatElementsPaddingAndGuards) {
  const Case c = concat_case();
  const ConcatGeometry g = concat_geometry(c);  // k_s1 = 28, k_s0 = 100, guard 100
  const std::int64_t k0 = g.guard_elems;
  EXPECT_EQ(locate_concat(c, g, k0), "k[t=0, h=0, d=0 (nope)]");
  EXPECT_EQ(locate_concat(c, g, k0 + 2 * g.k_s0 + 1 * g.k_s1 + 9), "k[t=2, h=1, d=9 (rope 1)]");
  EXPECT_EQ(locate_concat(c, g, k0 + g.k_s0 + 2 * g.k_s1 + 12), "padding after k[t=1, h=2] (+0)");
  EXPECT_EQ(locate_concat(c, g, k0 + g.k_s0 + 3 * g.k_s1 + 1), "padding after k[t=1] (+1)");
  EXPECT_EQ(locate_concat(c, g, 5), "guard before k (+5)");
  EXPECT_EQ(locate_concat(c, g, k0 + g.k_elems), "guard after k (+0)");
}

Case cache_case(Layout layout, bool interleaved) {
  Case c = testing_support::cache_case(10, 2, 4, 4);
  cache_params(c).layout = layout;
  cache_params(c).kv_interleaved = interleaved;
  c.strides = StrideMode::padded;
  return c;
}

TEST(Locate, CacheElementsInEveryLayout) {
  for (bool interleaved : {false, true}) {
    for (Layout layout : {Layout::nhd, Layout::hnd}) {
      const Case c = cache_case(layout, interleaved);
      const CacheGeometry g = cache_geometry(c);
      // Block 2, offset 3, head 1, dim 2 of the V cache, from the strides.
      const std::int64_t i = g.guard_elems + g.value_cache_offset + 2 * g.block_stride +
                             3 * g.slot_stride + g.head_stride + 2;
      const CacheLocation l = locate_cache(c, g, i);
      ASSERT_EQ(l.where, CacheLocation::Where::element) << to_string(layout);
      EXPECT_TRUE(l.value_cache);
      EXPECT_EQ(l.block, 2);
      EXPECT_EQ(l.offset, 3);
      EXPECT_EQ(l.head, 1);
      EXPECT_EQ(l.dim, 2);
      EXPECT_EQ(l.slot, 11);
      EXPECT_EQ(to_string(l), "value_cache[block 2, offset 3, head 1, dim 2] (slot 11)");
      const CacheLocation k = locate_cache(c, g, g.guard_elems + g.block_stride + 1);
      ASSERT_EQ(k.where, CacheLocation::Where::element);
      EXPECT_FALSE(k.value_cache);
      EXPECT_EQ(k.block, 1);
      // The 16 padding elements after K block 0's dense extent.
      EXPECT_EQ(locate_cache(c, g, g.guard_elems + 2 * 4 * 4 + 3).where,
                CacheLocation::Where::padding);
      EXPECT_EQ(to_string(locate_cache(c, g, 3)), "guard before the caches (+3)");
      EXPECT_EQ(locate_cache(c, g, g.guard_elems + g.cache_elems).where,
                CacheLocation::Where::guard_after);
    }
  }
}

TEST(Locate, SlotOwnersFollowSwaAndSkip) {
  Case c = cache_case(Layout::nhd, false);
  const CacheGeometry g = cache_geometry(c);
  SlotData s;
  s.slot_mapping = {5, -1, 2, 0};
  s.swa_table = {};
  CacheGeometry gs = g;
  gs.skip_slot = 0;
  const auto owners = slot_owners(s, gs);
  EXPECT_EQ(owners[5], 0);
  EXPECT_EQ(owners[2], 2);
  EXPECT_EQ(owners[0], -1);  // the skip slot is never written
  s.swa_table = {7, -1, 9, 3, 3, 3};
  const auto swa_owners = slot_owners(s, gs);  // logical 5 -> 3, 2 -> 9, 0 -> 7
  EXPECT_EQ(swa_owners[3], 0);
  EXPECT_EQ(swa_owners[9], 2);
  EXPECT_EQ(swa_owners[7], 3);
  EXPECT_EQ(swa_owners[5], -1);
}

TEST(Report, ValuesInDecimalAndHex) {
  EXPECT_EQ(format_value(DType::bf16, 0x3FC0), "1.5 (0x3fc0)");
  EXPECT_EQ(format_value(DType::f16, 0x3E00), "1.5 (0x3e00)");
  EXPECT_EQ(format_value(DType::f16, 0x0001), "5.96046448e-08 (0x0001)");
  EXPECT_EQ(format_value(DType::f32, 0xC0490FDB), "-3.14159274 (0xc0490fdb)");
  EXPECT_EQ(format_value(DType::fp8_e4m3, 0x7E), "448 (0x7e)");
  EXPECT_EQ(format_value(DType::fp8_e4m3, 0xFF), "nan (0xff)");
  EXPECT_EQ(format_value(DType::fp8_e4m3, 0x01), "0.001953125 (0x01)");
  EXPECT_EQ(format_value(DType::fp8_e5m2, 0x7B), "57344 (0x7b)");
  EXPECT_EQ(format_value(DType::fp8_e5m2, 0xFC), "-inf (0xfc)");
  EXPECT_EQ(format_value(DType::bf16, 0x7FFF), "nan (0x7fff)");
}

TEST(Report, NamesCountCoordinatesAndValues) {
  const std::uint16_t expected[4] = {0x3F80, 0x3FC0, 0x4000, 0xA5A5};
  const std::uint16_t actual[4] = {0x3F80, 0x3FC1, 0x4000, 0x0000};
  const CompareResult r = compare_bitwise(expected, actual, 4, 2, 8);
  const std::string s = report_mismatches(
      r, 4, DType::bf16, [](std::int64_t i) { return "k[i=" + std::to_string(i) + "]"; });
  EXPECT_EQ(s.substr(0, 37), "2 of 4 elements differ; first: k[i=1]");
  EXPECT_NE(s.find("k[i=1]: expected 1.5 (0x3fc0), got 1.5078125 (0x3fc1)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("; k[i=3]: expected "), std::string::npos) << s;
  EXPECT_NE(s.find("got 0 (0x0000)"), std::string::npos) << s;
}

TEST(BadInput, StridesBelowTheDenseExtentAreNamed) {
  Case c = concat_case();
  ConcatGeometry g = concat_geometry(c);
  EXPECT_EQ(check_concat_strides(c, g), "");
  g.k_s1 = 11;
  EXPECT_NE(check_concat_strides(c, g).find("k head stride 11 < NOPE+ROPE = 12"),
            std::string::npos);
  g = concat_geometry(c);
  g.rope_s0 = 3;
  EXPECT_NE(check_concat_strides(c, g).find("k_rope token stride 3 < ROPE = 4"), std::string::npos);

  for (Layout layout : {Layout::nhd, Layout::hnd})
    for (bool inter : {false, true}) {
      const Case cc = cache_case(layout, inter);
      CacheGeometry cg = cache_geometry(cc);
      EXPECT_EQ(check_cache_strides(cc, cg), "") << to_string(layout) << inter;
      cg.block_stride = 4 * 2 * 4 - 1;
      EXPECT_NE(check_cache_strides(cc, cg).find("cache block stride"), std::string::npos);
      cg = cache_geometry(cc);
      cg.key_s0 = cg.key_s1 + 3;
      EXPECT_NE(check_cache_strides(cc, cg).find("key/value token stride"), std::string::npos);
      cg = cache_geometry(cc);
      cg.value_cache_offset = inter ? 5 : cg.block_stride;
      EXPECT_NE(check_cache_strides(cc, cg).find("overlaps the key cache"), std::string::npos);
    }
  Case hnd = cache_case(Layout::hnd, false);
  CacheGeometry hg = cache_geometry(hnd);
  hg.head_stride = 3 * cache_params(hnd).head_size;  // 3 slots per head, BS = 4
  EXPECT_NE(check_cache_strides(hnd, hg).find("cache head stride 12"), std::string::npos)
      << check_cache_strides(hnd, hg);
}

TEST(BadInput, ScalesMustBePositiveAndFinite) {
  EXPECT_EQ(check_scales({}, {}), "");
  EXPECT_EQ(check_scales({1.5f, 0.1f}, {2.0f, 3.0f}), "");
  EXPECT_NE(check_scales({0.0f}, {1.0f}).find("k_scale[0] is zero"), std::string::npos);
  EXPECT_NE(check_scales({1.0f}, {1.0f, -1.0f}).find("v_scale[1] is negative"), std::string::npos);
  EXPECT_NE(check_scales({std::nanf("")}, {1.0f}).find("is NaN"), std::string::npos);
  EXPECT_NE(check_scales({1.0f}, {INFINITY}).find("is infinite"), std::string::npos);
}

// Each injection, applied to valid generated inputs, makes exactly the check that should fire
// fire, naming the problem.
TEST(BadInput, EveryInjectionIsRejectedByItsCheck) {
  auto run = [](Inject inject, bool swa, ScaleMode scale) {
    Case c = cache_case(Layout::nhd, false);
    c.num_tokens = 64;
    cache_params(c).slots = SlotPattern::padded;
    cache_params(c).swa = swa;
    cache_params(c).scale = scale;
    c.inject = inject;
    CacheGeometry g = cache_geometry(c);
    SlotData s = make_slots(c, g, 9);
    EXPECT_EQ(check_slots(s, g), "");
    std::vector<float> ks(scale == ScaleMode::none ? 0 : 1, 1.5f), vs = ks;
    const std::string why = inject_cache(c, g, s, ks);
    EXPECT_EQ(why, "") << to_string(inject);
    return check_slots(s, g) + "|" + check_cache_strides(c, g) + "|" + check_scales(ks, vs);
  };
  for (bool swa : {false, true}) {
    EXPECT_NE(run(Inject::slot_out_of_range, swa, ScaleMode::none).find(">= NB*BS"),
              std::string::npos);
    EXPECT_NE(run(Inject::duplicate_slot, swa, ScaleMode::none).find("already written by token"),
              std::string::npos);
  }
  EXPECT_NE(run(Inject::swa_out_of_range, true, ScaleMode::none).find("SWA index"),
            std::string::npos);
  EXPECT_NE(run(Inject::zero_scale, false, ScaleMode::per_tensor).find("is zero"),
            std::string::npos);
  EXPECT_NE(run(Inject::negative_scale, false, ScaleMode::per_head).find("negative"),
            std::string::npos);
  EXPECT_NE(run(Inject::nan_scale, false, ScaleMode::per_tensor).find("NaN"), std::string::npos);
  EXPECT_NE(run(Inject::inf_scale, false, ScaleMode::per_tensor).find("infinite"),
            std::string::npos);
  EXPECT_NE(run(Inject::short_stride, false, ScaleMode::none).find("head stride 3 < D = 4"),
            std::string::npos);
  EXPECT_EQ(run(Inject::none, true, ScaleMode::per_head), "||");

  // Injections that cannot apply say why.
  Case c = cache_case(Layout::nhd, false);
  c.inject = Inject::swa_out_of_range;
  CacheGeometry g = cache_geometry(c);
  SlotData s = make_slots(c, g, 1);
  std::vector<float> ks;
  EXPECT_NE(inject_cache(c, g, s, ks).find("needs swa: true"), std::string::npos);
  c.inject = Inject::zero_scale;
  EXPECT_NE(inject_cache(c, g, s, ks).find("needs scale"), std::string::npos);
  Case cc = concat_case();
  ConcatGeometry cg = concat_geometry(cc);
  cc.inject = Inject::short_stride;
  EXPECT_EQ(inject_concat(cc, cg), "");
  EXPECT_NE(check_concat_strides(cc, cg).find("k_nope head stride 7 < NOPE = 8"),
            std::string::npos);
  cc.inject = Inject::duplicate_slot;
  EXPECT_NE(inject_concat(cc, cg).find("does not apply"), std::string::npos);
}

}  // namespace
}  // namespace kvbench
