// concat_and_cache_mla's pure host parts (src/ops/mla_cache/operation.hpp): geometry and bytes,
// slots, the bad-input checks and injections, and where a mismatching cache element is.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/case.hpp"
#include "core/checked.hpp"
#include "core/columns.hpp"
#include "core/csv.hpp"
#include "core/validate.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::mla_case;
using testing_support::mla_params;

TEST(MlaCache, DenseAndPaddedGeometry) {
  Case c = mla_case(100, 512, 64, 16);
  MlaCacheGeometry g = mla_cache_geometry(c);
  EXPECT_EQ(g.kv_c_s0, 512);
  EXPECT_EQ(g.k_pe_s0, 64);
  EXPECT_EQ(g.entry_elems, 576);
  EXPECT_EQ(g.entry_stride, 576);
  EXPECT_EQ(g.block_stride, 16 * 576);
  // 100 + 12 + 1 entries, rounded up to blocks of 16, and one block more.
  EXPECT_EQ(g.num_blocks, 9);
  EXPECT_EQ(g.num_slots, 144);
  EXPECT_EQ(g.cache_elems, 9 * 16 * 576);
  EXPECT_EQ(g.guard_elems, g.block_stride);
  c.strides = StrideMode::padded;
  g = mla_cache_geometry(c);
  EXPECT_EQ(g.kv_c_s0, 528);
  EXPECT_EQ(g.k_pe_s0, 80);
  EXPECT_EQ(g.entry_stride, 592);
  EXPECT_EQ(g.block_stride, 16 * 592 + 16);
  EXPECT_EQ(check_mla_strides(c, g), "");
}

TEST(MlaCache, BytesCountWrittenTokensAndEverySlotEntry) {
  Case c = mla_case(10);
  c.out_dtype = DType::fp8_e4m3;
  // 8 bytes of slot_mapping per token; each written token reads 576 bf16 and writes 576 bytes.
  EXPECT_EQ(mla_cache_bytes(c, 7), 8 * 10 + 7 * 576 * 3);
  EXPECT_EQ(operation(Kernel::mla_cache).output_elems(c, 7), 7 * 576);
  c.num_tokens = 0x7fffffff;
  mla_params(c).lora_rank = 0x7fffffff;
  EXPECT_THROW(check_sizes(c), SizeOverflow);
}

TEST(MlaCache, SlotPatternsAreDistinctInRangeAndPadded) {
  for (SlotPattern pattern : {SlotPattern::random, SlotPattern::contiguous, SlotPattern::padded}) {
    SCOPED_TRACE(std::string(to_string(pattern)));
    Case c = mla_case(300, 512, 64, 16);
    mla_params(c).slots = pattern;
    const MlaCacheGeometry g = mla_cache_geometry(c);
    const std::vector<std::int64_t> slots = make_mla_slots(c, g, 9);
    ASSERT_EQ(slots.size(), 300u);
    std::set<std::int64_t> seen;
    for (std::size_t t = 0; t < slots.size(); ++t) {
      if (pattern == SlotPattern::padded && t % 8 == 7) {
        EXPECT_EQ(slots[t], -1) << t;
        continue;
      }
      EXPECT_GE(slots[t], 0);
      EXPECT_LT(slots[t], g.num_slots);
      EXPECT_TRUE(seen.insert(slots[t]).second) << "slot " << slots[t] << " twice";
    }
    if (pattern == SlotPattern::contiguous) {
      EXPECT_EQ(slots[0], 3);
    }
    EXPECT_EQ(written_tokens(slots), pattern == SlotPattern::padded ? 300 - 37 : 300);
    EXPECT_EQ(check_mla_slots(slots, g), "");
    EXPECT_EQ(make_mla_slots(c, g, 9), slots);  // seeded
  }
}

// The cache write's slot rule, word for word: a slot past NB*BS and a slot written twice.
TEST(MlaCache, BadSlotsAreNamedByTheCacheWritesRule) {
  const Case c = mla_case(4, 512, 64, 16);
  const MlaCacheGeometry g = mla_cache_geometry(c);
  EXPECT_EQ(check_mla_slots({0, -1, g.num_slots, 2}, g),
            "token 2: slot " + std::to_string(g.num_slots) +
                " >= NB*BS = " + std::to_string(g.num_slots));
  EXPECT_EQ(check_mla_slots({5, -1, 7, 5}, g),
            "token 3: physical slot 5 already written by token 0");
  EXPECT_EQ(check_mla_slots({-1, -1, -1, -1}, g), "");  // padding everywhere writes nothing
}

TEST(MlaCache, EveryInjectionIsRejectedByItsCheck) {
  for (Inject inject : all_values<Inject>()) {
    if (inject == Inject::none) continue;
    SCOPED_TRACE(std::string(to_string(inject)));
    Case c = mla_case(300, 512, 64, 16);
    mla_params(c).scale = MlaScale::per_tensor;
    mla_params(c).slots = SlotPattern::padded;
    c.inject = inject;
    MlaCacheGeometry g = mla_cache_geometry(c);
    std::vector<std::int64_t> slots = make_mla_slots(c, g, 3);
    std::vector<float> scale = {1.5f};
    const std::string why = inject_mla(c, g, slots, scale);
    if (inject == Inject::swa_out_of_range) {
      EXPECT_EQ(why, "does not apply to concat_and_cache_mla (it has no SWA table)");
      continue;
    }
    if (inject == Inject::misaligned_cache) {
      EXPECT_EQ(why, "this injection needs layout fp8_ds_mla (layout nhd takes any alignment)");
      continue;
    }
    ASSERT_EQ(why, "");
    const std::string bad =
        check_mla_slots(slots, g) + check_mla_strides(c, g) + check_scales(scale, {});
    EXPECT_FALSE(bad.empty());
    if (inject == Inject::short_stride) {
      EXPECT_EQ(bad, "kv_c token stride 511 < L = 512 (strides must cover the dense extent)");
    }
  }
  // A scale injection needs a scale.
  Case c = mla_case(16);
  c.inject = Inject::zero_scale;
  MlaCacheGeometry g = mla_cache_geometry(c);
  std::vector<std::int64_t> slots = make_mla_slots(c, g, 3);
  std::vector<float> none;
  EXPECT_EQ(inject_mla(c, g, slots, none), "this injection needs scale: per_tensor");
}

TEST(MlaCache, LocateNamesEntryPartSlotAndOwner) {
  Case c = mla_case(4, 8, 4, 2);
  c.strides = StrideMode::padded;  // entry stride 28, block stride 72
  const MlaCacheGeometry g = mla_cache_geometry(c);
  ASSERT_EQ(g.entry_stride, 28);
  ASSERT_EQ(g.block_stride, 72);
  std::vector<std::int64_t> owners(static_cast<std::size_t>(g.num_slots), -1);
  owners[3] = 2;
  const std::int64_t G = g.guard_elems;
  EXPECT_EQ(locate_mla(c, g, owners, 5), "guard before the cache (+5)");
  EXPECT_EQ(locate_mla(c, g, owners, G + g.cache_elems + 1), "guard after the cache (+1)");
  // Slot 3: block 1, entry 1.
  EXPECT_EQ(locate_mla(c, g, owners, G + 72 + 28 + 7),
            "cache[block 1, entry 1, 7 (kv_c 7)] (slot 3) of token 2");
  EXPECT_EQ(locate_mla(c, g, owners, G + 72 + 28 + 9),
            "cache[block 1, entry 1, 9 (k_pe 1)] (slot 3) of token 2");
  EXPECT_EQ(locate_mla(c, g, owners, G + 0),
            "cache[block 0, entry 0, 0 (kv_c 0)] (slot 0), "
            "which no token writes");
  EXPECT_EQ(locate_mla(c, g, owners, G + 12 + 2), "padding after cache[block 0, entry 0] (+2)");
  EXPECT_EQ(locate_mla(c, g, owners, G + 2 * 28 + 1), "padding after cache[block 0] (+1)");
}

TEST(MlaCache, ColumnsHoldLoraRankRopeBlockScaleAndSlots) {
  Case c = mla_case(16, 256, 32, 128);
  mla_params(c).scale = MlaScale::per_tensor;
  mla_params(c).slots = SlotPattern::padded;
  c.out_dtype = DType::fp8_e5m2;
  const std::vector<std::string> f = case_fields(c);
  const std::vector<std::string>& cols = case_columns();
  const auto at = [&](const char* name) {
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return f[i];
    return std::string("?");
  };
  EXPECT_EQ(at("kernel"), "concat_and_cache_mla");
  EXPECT_EQ(at("num_heads"), "1");
  EXPECT_EQ(at("head_dim"), "256");
  EXPECT_EQ(at("rope_dim"), "32");
  EXPECT_EQ(at("block_size"), "128");
  EXPECT_EQ(at("layout"), "nhd");
  EXPECT_EQ(at("scale"), "per_tensor");
  EXPECT_EQ(at("slots"), "padded");
  EXPECT_EQ(at("out_dtype"), "fp8_e5m2");
  EXPECT_EQ(describe(c),
            "concat_and_cache_mla optimized T=16 L=256 R=32 BS=128 nhd bf16->fp8_e5m2 "
            "strides=contiguous scale=per_tensor slots=padded");
}

Case ds_case(std::int64_t T, MlaScale rule = MlaScale::tile_raw, std::int64_t BS = 16) {
  Case c = mla_case(T, 512, 64, BS);
  c.out_dtype = DType::fp8_e4m3;
  mla_params(c).layout = MlaLayout::fp8_ds_mla;
  mla_params(c).scale = rule;
  return c;
}

TEST(MlaCache, DsMlaEntriesAre656BytesSixteenAligned) {
  Case c = ds_case(100);
  MlaCacheGeometry g = mla_cache_geometry(c);
  EXPECT_EQ(g.entry_elems, 656);
  EXPECT_EQ(g.entry_stride, 656);
  EXPECT_EQ(g.block_stride, 16 * 656);
  EXPECT_EQ(check_mla_strides(c, g), "");
  c.strides = StrideMode::padded;
  g = mla_cache_geometry(c);
  EXPECT_EQ(g.entry_stride, 672);
  EXPECT_EQ(g.block_stride, 16 * 672 + 16);
  EXPECT_EQ(check_mla_strides(c, g), "");
  // 576 bf16 values read and 656 bytes written per written token, 8 bytes of slot per token.
  EXPECT_EQ(mla_cache_bytes(c, 7), 8 * 100 + 7 * (576 * 2 + 656));
  EXPECT_EQ(operation(Kernel::mla_cache).output_elems(c, 7), 7 * 656);
}

TEST(MlaCache, LayoutScaleDtypeAndWidthsMustGoTogether) {
  EXPECT_EQ(mla_refusal(ds_case(4)), "");
  EXPECT_EQ(mla_refusal(ds_case(4, MlaScale::tile_pow2)), "");
  Case c = ds_case(4);
  c.out_dtype = DType::bf16;
  EXPECT_EQ(mla_refusal(c), "layout fp8_ds_mla stores e4m3 codes: out_dtype fp8_e4m3, not bf16");
  c = ds_case(4, MlaScale::per_tensor);
  EXPECT_EQ(mla_refusal(c),
            "layout fp8_ds_mla scales each tile: scale tile_raw or tile_pow2, not per_tensor");
  c = ds_case(4);
  mla_params(c).lora_rank = 256;
  EXPECT_EQ(mla_refusal(c), "layout fp8_ds_mla holds L = 512 and R = 64, not L = 256, R = 64");
  c = mla_case(4);
  mla_params(c).scale = MlaScale::tile_pow2;
  EXPECT_EQ(mla_refusal(c),
            "scale tile_pow2 is a tile rule of layout fp8_ds_mla (layout nhd takes none or "
            "per_tensor)");
  for (MlaScale s : {MlaScale::none, MlaScale::per_tensor}) {
    mla_params(c).scale = s;
    EXPECT_EQ(mla_refusal(c), "");
  }
}

TEST(MlaCache, DsMlaMisalignedCacheIsRejected) {
  Case c = ds_case(64);
  c.inject = Inject::misaligned_cache;
  MlaCacheGeometry g = mla_cache_geometry(c);
  std::vector<std::int64_t> slots = make_mla_slots(c, g, 3);
  std::vector<float> none;
  ASSERT_EQ(inject_mla(c, g, slots, none), "");
  EXPECT_EQ(check_mla_strides(c, g),
            "fp8_ds_mla cache misaligned: entry stride 664 and block stride 10624 bytes must be "
            "multiples of 16 (every entry 16-byte aligned)");
  EXPECT_EQ(check_mla_slots(slots, g), "");  // the slots stay valid: only the alignment is bad
  c.inject = Inject::slot_out_of_range;
  g = mla_cache_geometry(c);
  slots = make_mla_slots(c, g, 3);
  ASSERT_EQ(inject_mla(c, g, slots, none), "");
  EXPECT_NE(check_mla_slots(slots, g).find(">= NB*BS = " + std::to_string(g.num_slots)),
            std::string::npos);
}

TEST(MlaCache, DsMlaLocateNamesCodeScaleAndRopeBytes) {
  const Case c = ds_case(4, MlaScale::tile_raw, 2);
  const MlaCacheGeometry g = mla_cache_geometry(c);
  std::vector<std::int64_t> owners(static_cast<std::size_t>(g.num_slots), -1);
  owners[1] = 3;
  const std::int64_t e1 = g.guard_elems + 656;  // slot 1: block 0, entry 1
  EXPECT_EQ(locate_mla(c, g, owners, e1 + 300),
            "cache[block 0, entry 1, 300 (kv_c 300, tile 2)] (slot 1) of token 3");
  EXPECT_EQ(locate_mla(c, g, owners, e1 + 512 + 4 * 3 + 2),
            "cache[block 0, entry 1, 526 (scale of tile 3, byte 2)] (slot 1) of token 3");
  EXPECT_EQ(locate_mla(c, g, owners, e1 + 528 + 2 * 63 + 1),
            "cache[block 0, entry 1, 655 (k_pe 63, byte 1)] (slot 1) of token 3");
}

// The CSV's layout and scale columns carry the operation's own names there and back; an unknown
// one is refused naming the accepted set.
TEST(MlaCache, DsMlaColumnsRoundTripThroughTheCaseKey) {
  const Case c = ds_case(37, MlaScale::tile_pow2);
  const std::vector<std::string> key = case_key(c);
  const std::vector<std::string>& cols = case_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] == "layout") {
      EXPECT_EQ(key[i], "fp8_ds_mla");
    }
    if (cols[i] == "scale") {
      EXPECT_EQ(key[i], "tile_pow2");
    }
  }
  EXPECT_EQ(describe(case_of_key(key)), describe(c));
  std::vector<std::string> bad = key;
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == "scale") bad[i] = "per_head";
  try {
    case_of_key(bad);
    FAIL() << "per_head accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "unknown scale 'per_head' (expected one of none, per_tensor, tile_raw, tile_pow2)");
  }
}

// compare's reports name a row from its key's text as describe() names the case.
TEST(MlaCache, DescribeKeyMatchesDescribe) {
  for (const Case& c : {ds_case(37, MlaScale::tile_pow2), mla_case(5)}) {
    const std::vector<std::string> key = case_key(c);
    const std::string text =
        operation(Kernel::mla_cache).describe_key([&](Col col) -> const std::string& {
          return key[key_index(col)];
        });
    const std::string d = describe(c);
    EXPECT_EQ(d.substr(d.find(" T=") + 1), text);
  }
}

}  // namespace
}  // namespace kvbench
