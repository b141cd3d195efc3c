// reshape_and_cache_flash with scale per_token_head (SPEC.md §7), its pure host parts: the cache
// geometry of D + 4 byte rows, the bytes moved, refusals, the injected misalignment, where a
// mismatching byte is (codes and scale bytes), and the launch plan. The reference's writes are
// checked against the geometry's naming of every byte.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "core/checked.hpp"
#include "core/columns.hpp"
#include "core/inputs.hpp"
#include "core/operation.hpp"
#include "kernels/cache_write/plan.hpp"
#include "ops/cache_write/launch.hpp"
#include "reference/quantize.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::cache_params;

Case token_head_case(std::int64_t T, std::int64_t H, std::int64_t D, std::int64_t BS,
                     Layout layout = Layout::nhd, bool interleaved = false,
                     StrideMode strides = StrideMode::contiguous) {
  Case c = testing_support::cache_case(T, H, D, BS);
  c.variant = Variant::optimized;
  c.out_dtype = DType::fp8_e4m3;
  c.strides = strides;
  cache_params(c).scale = ScaleMode::per_token_head;
  cache_params(c).layout = layout;
  cache_params(c).kv_interleaved = interleaved;
  return c;
}

TEST(TokenHead, RowsOfDPlusFourBytesInBothLayouts) {
  const Case nhd = token_head_case(100, 8, 128, 16);
  CacheGeometry g = cache_geometry(nhd);
  EXPECT_EQ(g.row, 132);
  EXPECT_EQ(g.head_stride, 132);
  EXPECT_EQ(g.slot_stride, 8 * 132);
  EXPECT_EQ(g.block_stride, 16 * 8 * 132);
  EXPECT_EQ(g.value_cache_offset, g.num_blocks * g.block_stride);
  EXPECT_EQ(g.cache_elems, 2 * g.num_blocks * 16 * 8 * 132);
  EXPECT_EQ(check_cache_strides(nhd, g), "");

  const Case hnd = token_head_case(100, 8, 128, 16, Layout::hnd, true, StrideMode::padded);
  g = cache_geometry(hnd);
  EXPECT_EQ(g.slot_stride, 132);
  EXPECT_EQ(g.head_stride, 16 * 132);
  // Interleaved K/V: each block holds K's dense block plus 16 padding bytes, then V's.
  EXPECT_EQ(g.value_cache_offset, 16 * 8 * 132 + 16);
  EXPECT_EQ(g.block_stride, 2 * (16 * 8 * 132 + 16));
  EXPECT_EQ(g.key_s1, 128 + 16);  // inputs keep D values a head
  EXPECT_EQ(check_cache_strides(hnd, g), "");

  // The other scales keep rows of D elements.
  Case plain = nhd;
  cache_params(plain).scale = ScaleMode::per_head;
  EXPECT_EQ(cache_geometry(plain).row, 128);
  EXPECT_EQ(cache_geometry(plain).head_stride, 128);
}

TEST(TokenHead, BytesCountEachRowsScale) {
  Case c = token_head_case(10, 8, 128, 16);
  // 8 bytes of slot_mapping a token, 8 more a SWA lookup; each written token reads 2 * 8 * 128
  // bf16 values and writes 2 * 8 rows of 132 bytes.
  EXPECT_EQ(cache_write_bytes(c, 0, 7), 8 * 10 + 7 * (2 * 8 * 128 * 2 + 2 * 8 * 132));
  EXPECT_EQ(cache_write_bytes(c, 9, 7), 8 * 10 + 8 * 9 + 7 * (2 * 8 * 128 * 2 + 2 * 8 * 132));
  EXPECT_EQ(operation(Kernel::cache_write).output_elems(c, 7), 7 * 2 * 8 * 132);
  c.in_dtype = DType::f16;
  EXPECT_EQ(cache_write_bytes(c, 0, 1), 8 * 10 + 2 * 8 * 128 * 2 + 2 * 8 * 132);
  // No caller scales: the device holds inputs, caches with their guards, slots and slot table.
  const Operation& op = operation(Kernel::cache_write);
  const CacheGeometry g = cache_geometry(c);
  EXPECT_EQ(op.footprint(c).device_per_set,
            static_cast<std::uint64_t>(2 * g.key_elems * 2 + g.cache_elems + 2 * g.guard_elems +
                                       8 * 10 + 4 * g.num_slots));
  const std::optional<ScatterShape> s = op.scatter_shape(c);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->head_read, 128 * 2);
  EXPECT_EQ(s->head_write, 132);
}

TEST(TokenHead, RefusesWhatTheSpecDoesNotDefine) {
  Case c = token_head_case(16, 8, 128, 16);
  EXPECT_EQ(token_head_refusal(c), "");
  c.in_dtype = DType::f32;
  EXPECT_EQ(token_head_refusal(c),
            "scale per_token_head quantizes 16-bit inputs: in_dtype bf16 or f16, not f32");
  c.in_dtype = DType::bf16;
  c.out_dtype = DType::fp8_e5m2;
  EXPECT_EQ(token_head_refusal(c),
            "scale per_token_head stores e4m3 codes (the one format SPEC.md §7 defines): "
            "out_dtype fp8_e4m3, not fp8_e5m2");
  c.out_dtype = DType::bf16;
  EXPECT_NE(token_head_refusal(c).find("not bf16"), std::string::npos);
  c.out_dtype = DType::fp8_e4m3;
  cache_params(c).head_size = 126;
  EXPECT_EQ(token_head_refusal(c),
            "scale per_token_head needs a head size that is a multiple of 4 (its fp32 scale sits "
            "after the D codes), not 126");
  // Other scales are not this check's.
  cache_params(c).scale = ScaleMode::none;
  EXPECT_EQ(token_head_refusal(c), "");
}

TEST(TokenHead, OnlyOptimizedHasThePath) {
  Case c = token_head_case(16, 8, 128, 16);
  EXPECT_EQ(variant_refusal(c), "");
  c.variant = Variant::seed_port;
  EXPECT_EQ(variant_refusal(c),
            "seed_port has no per_token_head path (it divides by a caller's scale); "
            "per_token_head runs on optimized");
  c.variant = Variant::slot_order;
  EXPECT_NE(variant_refusal(c).find("slot_order has no per_token_head path"), std::string::npos);
  cache_params(c).scale = ScaleMode::per_tensor;
  EXPECT_EQ(variant_refusal(c), "");
  // The plugin ABI has no such scale: a plugin's `supports` is never asked with one.
  Case t = token_head_case(16, 8, 128, 16);
  AbiArgs a;
  EXPECT_THROW(backend(t.kernel).plan_abi_args(t, a), std::invalid_argument);
  cache_params(t).scale = ScaleMode::per_head;
  EXPECT_NO_THROW(backend(t.kernel).plan_abi_args(t, a));
}

TEST(TokenHead, MisalignedCacheIsRejectedByTheStrideCheck) {
  for (const bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved" : "separate");
    Case c = token_head_case(300, 8, 128, 16, Layout::nhd, interleaved);
    c.inject = Inject::misaligned_cache;
    CacheGeometry g = cache_geometry(c);
    SlotData s = make_slots(c, g, 3);
    std::vector<float> none;
    ASSERT_EQ(inject_cache(c, g, s, none), "");
    EXPECT_EQ(g.block_stride % 4, 2);
    const std::string bad = check_cache_strides(c, g);
    EXPECT_EQ(
        bad.rfind("per_token_head cache misaligned: block stride " + std::to_string(g.block_stride),
                  0),
        0u)
        << bad;
    EXPECT_NE(bad.find("bytes must be multiples of 4 (every fp32 scale 4-byte aligned)"),
              std::string::npos);
    // 23 blocks of 16 * 8 * 132 bytes, each 2 bytes longer (docs/validation.md quotes this).
    if (!interleaved) {
      EXPECT_EQ(bad,
                "per_token_head cache misaligned: block stride 16898 and value cache offset "
                "388654 bytes must be multiples of 4 (every fp32 scale 4-byte aligned)");
    }
  }
  // Without per_token_head the injection does not apply; a scale injection needs a caller scale.
  Case plain = testing_support::cache_case(300, 8, 128);
  plain.inject = Inject::misaligned_cache;
  CacheGeometry g = cache_geometry(plain);
  SlotData s = make_slots(plain, g, 3);
  std::vector<float> none;
  EXPECT_EQ(inject_cache(plain, g, s, none),
            "this injection needs scale per_token_head (the other scales take any alignment)");
  Case zero = token_head_case(300, 8, 128, 16);
  zero.inject = Inject::zero_scale;
  g = cache_geometry(zero);
  s = make_slots(zero, g, 3);
  EXPECT_EQ(inject_cache(zero, g, s, none), "this injection needs scale: per_tensor or per_head");
}

TEST(TokenHead, LocateNamesCodesAndScaleBytes) {
  for (const Layout layout : {Layout::nhd, Layout::hnd})
    for (const bool interleaved : {false, true}) {
      SCOPED_TRACE(std::string(to_string(layout)) + (interleaved ? " interleaved" : ""));
      const Case c = token_head_case(10, 2, 8, 4, layout, interleaved, StrideMode::padded);
      const CacheGeometry g = cache_geometry(c);
      // V cache, block 2, offset 3, head 1: code 5, then scale byte 2.
      const std::int64_t row = g.guard_elems + g.value_cache_offset + 2 * g.block_stride +
                               3 * g.slot_stride + g.head_stride;
      EXPECT_EQ(to_string(locate_cache(c, g, row + 5)),
                "value_cache[block 2, offset 3, head 1, dim 5] (slot 11)");
      const CacheLocation l = locate_cache(c, g, row + 8 + 2);
      EXPECT_EQ(l.scale_byte, 2);
      EXPECT_EQ(to_string(l), "value_cache[block 2, offset 3, head 1, scale byte 2] (slot 11)");
      EXPECT_EQ(to_string(locate_cache(c, g, g.guard_elems + 3)),
                "key_cache[block 0, offset 0, head 0, dim 3] (slot 0)");
      EXPECT_EQ(to_string(locate_cache(c, g, g.guard_elems + 11)),
                "key_cache[block 0, offset 0, head 0, scale byte 3] (slot 0)");
      // The 16 padding bytes after K block 0's dense extent of 4 * 2 * 12.
      EXPECT_EQ(locate_cache(c, g, g.guard_elems + 4 * 2 * 12 + 3).where,
                CacheLocation::Where::padding);
    }
}

// Every byte the reference writes is a code or scale byte of a written (slot, head), as the
// geometry names it, and the scale bytes hold that row's scale: the geometry the runner checks
// against and the reference agree on where each row and its scale sit.
TEST(TokenHead, ReferenceWritesWhereTheGeometryNamesEachByte) {
  for (const Layout layout : {Layout::nhd, Layout::hnd})
    for (const bool interleaved : {false, true})
      for (const StrideMode strides : {StrideMode::contiguous, StrideMode::padded}) {
        SCOPED_TRACE(std::string(to_string(layout)) + (interleaved ? " interleaved " : " ") +
                     std::string(to_string(strides)));
        Case c = token_head_case(37, 3, 12, 4, layout, interleaved, strides);
        cache_params(c).slots = SlotPattern::padded;
        const CacheGeometry g = cache_geometry(c);
        const SlotData s = make_slots(c, g, 5);
        ASSERT_EQ(check_slots(s, g), "");
        std::vector<std::uint16_t> key(static_cast<std::size_t>(g.key_elems)), value(key.size());
        fill_random(DType::bf16, key.data(), g.key_elems, 1);
        fill_random(DType::bf16, value.data(), g.key_elems, 2);
        constexpr std::uint8_t kCanaryByte = 0xA5;
        std::vector<std::uint8_t> cache(static_cast<std::size_t>(g.cache_elems + 2 * g.guard_elems),
                                        kCanaryByte);
        std::uint8_t* k = cache.data() + g.guard_elems;
        ref::reshape_and_cache_flash_per_token_head({DType::bf16,
                                                     c.num_tokens,
                                                     c.num_heads,
                                                     12,
                                                     4,
                                                     g.num_blocks,
                                                     key.data(),
                                                     value.data(),
                                                     g.key_s0,
                                                     g.key_s1,
                                                     g.key_s0,
                                                     g.key_s1,
                                                     s.slot_mapping.data(),
                                                     nullptr,
                                                     0,
                                                     g.skip_slot,
                                                     layout,
                                                     k,
                                                     k + g.value_cache_offset,
                                                     g.block_stride});
        const std::vector<std::int64_t> owners = slot_owners(s, g);
        std::int64_t codes = 0, scale_bytes = 0;
        for (std::size_t i = 0; i < cache.size(); ++i) {
          const CacheLocation l = locate_cache(c, g, static_cast<std::int64_t>(i));
          const bool written = l.where == CacheLocation::Where::element &&
                               owners[static_cast<std::size_t>(l.slot)] >= 0;
          if (!written) {
            ASSERT_EQ(cache[i], kCanaryByte) << to_string(l);
            continue;
          }
          if (l.scale_byte < 0) {
            ++codes;
            continue;
          }
          ++scale_bytes;
          if (l.scale_byte != 0) continue;
          // The row's scale, from its own values.
          const std::int64_t t = owners[static_cast<std::size_t>(l.slot)];
          const std::uint16_t* x =
              (l.value_cache ? value : key).data() + t * g.key_s0 + l.head * g.key_s1;
          float stored;
          std::memcpy(&stored, &cache[i], 4);
          EXPECT_EQ(stored, ref::token_head_scale(ref::abs_max(DType::bf16, x, 12)))
              << to_string(l);
        }
        EXPECT_EQ(codes, s.written_tokens * 2 * 3 * 12);
        EXPECT_EQ(scale_bytes, s.written_tokens * 2 * 3 * 4);
      }
}

// Lanes per row and vectors per lane follow D; inputs and caches must allow the 4-value vectors.
TEST(TokenHead, PlanFollowsTheHeadSize) {
  const kernels::DeviceProps d = kernels::device_profile("h200");
  struct Want {
    std::int64_t D;
    int lanes, regs;
  };
  for (const Want w : {Want{4, 1, 1}, Want{8, 2, 1}, Want{64, 16, 1}, Want{80, 32, 1},
                       Want{100, 32, 1}, Want{128, 32, 1}, Want{132, 32, 2}, Want{256, 32, 2},
                       Want{512, 32, 4}, Want{576, 32, 8}, Want{1024, 32, 8}, Want{1040, 32, 0}}) {
    SCOPED_TRACE(w.D);
    const Case c = token_head_case(37, 8, w.D, 16);
    const kernels::CacheWritePlan p =
        kernels::plan_cache_write(cache_write_plan_args(c), Variant::optimized, d);
    ASSERT_EQ(p.error, "");
    EXPECT_EQ(p.path, kernels::CacheWritePath::token_head);
    EXPECT_EQ(p.lanes, w.lanes);
    EXPECT_EQ(p.row_vecs, w.regs);
    EXPECT_EQ(p.vec, 4);
    // Whole rows a block: the threads cover 37 * 8 rows of `lanes` lanes.
    EXPECT_EQ(p.block.x % 32, 0u);
    EXPECT_GE(std::int64_t{p.grid.x} * p.block.x, 37 * 8 * w.lanes);
    EXPECT_LT(std::int64_t{p.grid.x - 1} * p.block.x, 37 * 8 * w.lanes);
  }
  const Case c = token_head_case(37, 8, 128, 16);
  EXPECT_EQ(
      kernels::to_string(kernels::plan_cache_write(cache_write_plan_args(c), Variant::optimized, d),
                         DType::bf16),
      "token_head regs=1 lanes=32 V=4 pdl grid=37 block=256");
  kernels::CacheWriteArgs a = cache_write_plan_args(c);
  EXPECT_EQ(kernels::plan_cache_write(a, Variant::seed_port, d).error,
            "per_token_head runs on optimized only");
  a.block_stride += 2;
  EXPECT_EQ(kernels::plan_cache_write(a, Variant::optimized, d).error,
            "per_token_head cache rows not 4-byte aligned");
  a = cache_write_plan_args(c);
  a.key_s1 = 130;
  EXPECT_EQ(kernels::plan_cache_write(a, Variant::optimized, d).error,
            "per_token_head inputs not in aligned 4-value vectors");
  a = cache_write_plan_args(c);
  a.out_dtype = DType::fp8_e5m2;
  EXPECT_EQ(kernels::plan_cache_write(a, Variant::optimized, d).error,
            "per_token_head takes bf16 or f16 into fp8_e4m3");
  a = cache_write_plan_args(c);
  a.head_size = 126;
  EXPECT_EQ(kernels::plan_cache_write(a, Variant::optimized, d).error,
            "per_token_head needs D a multiple of 4");
}

TEST(TokenHead, ScaleColumnRoundTrips) {
  const Operation& op = operation(Kernel::cache_write);
  const Case c = token_head_case(16, 8, 128, 16, Layout::hnd);
  const OpColumns cols = op.columns(c);
  EXPECT_EQ(cols.scale, "per_token_head");
  Case back = op.default_case();
  op.set_columns(back, cols);
  EXPECT_EQ(cache_params(back).scale, ScaleMode::per_token_head);
  EXPECT_EQ(from_string<ScaleMode>("per_token_head"), ScaleMode::per_token_head);
  EXPECT_NE(describe(c).find("scale=per_token_head"), std::string::npos);
}

}  // namespace
}  // namespace kvbench
