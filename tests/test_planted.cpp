// Planted bugs the CPU can show (CI has no GPU): wrong outputs built with the reference itself
// (wrong strides, wrong slots, two roundings) or by mutating a correct output (truncation,
// a skipped element, a write into padding or a guard), each of which the comparison and the
// mismatch report must catch and locate. tests/test_planted_gpu.cpp does the same with real
// wrong kernels on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/mismatch_report.hpp"
#include "reference/quantize.hpp"
#include "reference/reference.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::cache_params;
using testing_support::concat_params;

constexpr unsigned char kCanary = 0xA5;
using Bytes = std::vector<unsigned char>;

Bytes bytes(std::int64_t elems, DType t) {
  return Bytes(static_cast<std::size_t>(elems) * size_of(t));
}

// A concat case as the runner lays it out: [guard | k | guard], canary-filled, k by the reference.
struct ConcatRun {
  Case c;
  ConcatGeometry g;
  Bytes nope, rope;
  explicit ConcatRun(Case cc) : c(cc), g(concat_geometry(cc)) {
    nope = bytes(g.nope_elems, c.in_dtype);
    rope = bytes(g.rope_elems, c.in_dtype);
    fill_random(c.in_dtype, nope.data(), g.nope_elems, 11);
    fill_random(c.in_dtype, rope.data(), g.rope_elems, 12);
  }
  // The output of the reference run with the given geometry and types (planted ones too).
  Bytes output(DType in, const void* nope_data, const void* rope_data, std::int64_t nope_s0,
               std::int64_t nope_s1, std::int64_t rope_s0) const {
    Bytes out = bytes(g.k_elems + 2 * g.guard_elems, c.out_dtype);
    std::memset(out.data(), kCanary, out.size());
    ref::concat_and_cast_mha_k({in, c.out_dtype, c.num_tokens, c.num_heads,
                                concat_params(c).nope_dim, concat_params(c).rope_dim, nope_data,
                                rope_data, out.data() + g.guard_elems * size_of(c.out_dtype),
                                nope_s0, nope_s1, rope_s0, g.k_s0, g.k_s1});
    return out;
  }
  Bytes expected() const {
    return output(c.in_dtype, nope.data(), rope.data(), g.nope_s0, g.nope_s1, g.rope_s0);
  }
  std::string verdict(const Bytes& actual) const {
    const auto elems = static_cast<std::int64_t>(actual.size() / size_of(c.out_dtype));
    const CompareResult r =
        compare_bitwise(expected().data(), actual.data(), elems, size_of(c.out_dtype), 8);
    if (r.count == 0) return "";
    return report_mismatches(r, elems, c.out_dtype,
                             [&](std::int64_t i) { return locate_concat(c, g, i); });
  }
  std::size_t k_offset(std::int64_t t, std::int64_t h, std::int64_t d) const {
    return static_cast<std::size_t>(g.guard_elems + t * g.k_s0 + h * g.k_s1 + d) *
           size_of(c.out_dtype);
  }
};

Case concat_case(StrideMode strides, DType in, DType out) {
  Case c = testing_support::concat_case(19, 12, 128, 64, strides);
  c.in_dtype = in;
  c.out_dtype = out;
  return c;
}

TEST(PlantedCpu, ControlPasses) {
  const ConcatRun run(concat_case(StrideMode::sglang, DType::bf16, DType::fp8_e4m3));
  EXPECT_EQ(run.verdict(run.expected()), "");
}

TEST(PlantedCpu, WrongHeadStrideIsCaught) {
  const ConcatRun run(concat_case(StrideMode::sglang, DType::bf16, DType::bf16));
  // k_nope read with the dense head stride NOPE instead of NOPE + V.
  const Bytes wrong = run.output(DType::bf16, run.nope.data(), run.rope.data(), run.g.nope_s0,
                                 concat_params(run.c).nope_dim, run.g.rope_s0);
  const std::string v = run.verdict(wrong);
  EXPECT_NE(v.find("k[t=0, h=1, d=0 (nope)]"), std::string::npos) << v;
}

TEST(PlantedCpu, TruncationInsteadOfRoundingIsCaught) {
  const ConcatRun run(concat_case(StrideMode::contiguous, DType::f32, DType::bf16));
  Bytes wrong = run.expected();
  std::int64_t changed = 0;
  for (std::int64_t t = 0; t < run.c.num_tokens; ++t)
    for (std::int64_t h = 0; h < run.c.num_heads; ++h)
      for (std::int64_t d = 0; d < concat_params(run.c).nope_dim; ++d) {
        std::uint32_t x;
        std::memcpy(&x, run.nope.data() + 4 * (t * run.g.nope_s0 + h * run.g.nope_s1 + d), 4);
        const auto truncated = static_cast<std::uint16_t>(x >> 16);
        std::uint16_t rounded;
        std::memcpy(&rounded, wrong.data() + run.k_offset(t, h, d), 2);
        changed += truncated != rounded;
        std::memcpy(wrong.data() + run.k_offset(t, h, d), &truncated, 2);
      }
  ASSERT_GT(changed, 0);
  const std::string v = run.verdict(wrong);
  EXPECT_EQ(v.substr(0, v.find(' ')), std::to_string(changed)) << v;
  EXPECT_NE(v.find("(nope)]: expected "), std::string::npos) << v;
}

TEST(PlantedCpu, DoubleRoundingThroughBf16IsCaught) {
  const ConcatRun run(concat_case(StrideMode::contiguous, DType::f32, DType::fp8_e4m3));
  // First rounding: the same inputs to bf16, densely; second: bf16 to e4m3.
  ConcatRun to_bf16(concat_case(StrideMode::contiguous, DType::f32, DType::bf16));
  to_bf16.nope = run.nope;
  to_bf16.rope = run.rope;
  const Bytes mid = to_bf16.expected();
  const Bytes wrong =
      run.output(DType::bf16, mid.data() + 2 * run.g.guard_elems,
                 mid.data() + 2 * run.g.guard_elems + 2 * concat_params(run.c).nope_dim, run.g.k_s0,
                 run.g.k_s1, run.g.k_s0);
  const std::string v = run.verdict(wrong);
  EXPECT_NE(v.find(" elements differ; first: k[t="), std::string::npos) << v;
}

TEST(PlantedCpu, RopeNotBroadcastAndLastElementSkippedAreCaught) {
  const ConcatRun run(concat_case(StrideMode::padded, DType::bf16, DType::f16));
  Bytes wrong = run.expected();
  for (std::int64_t h = 1; h < run.c.num_heads; ++h)
    std::memset(wrong.data() + run.k_offset(3, h, concat_params(run.c).nope_dim), kCanary,
                2 * concat_params(run.c).rope_dim);
  std::string v = run.verdict(wrong);
  EXPECT_EQ(v.substr(0, v.find(" of ")),
            std::to_string((run.c.num_heads - 1) * concat_params(run.c).rope_dim));
  EXPECT_NE(v.find("k[t=3, h=1, d=128 (rope 0)]: expected "), std::string::npos) << v;
  EXPECT_NE(v.find("got -0.0220489502 (0xa5a5)"), std::string::npos) << v;

  Bytes skipped = run.expected();
  const std::int64_t T = run.c.num_tokens, H = run.c.num_heads,
                     W = concat_params(run.c).nope_dim + concat_params(run.c).rope_dim;
  std::memset(skipped.data() + run.k_offset(T - 1, H - 1, W - 1), kCanary, 2);
  v = run.verdict(skipped);
  EXPECT_EQ(v.substr(0, v.find(" of ")), "1");
  EXPECT_NE(v.find("k[t=18, h=11, d=191 (rope 63)]"), std::string::npos) << v;
}

TEST(PlantedCpu, WritesIntoPaddingAndGuardsAreCaught) {
  const ConcatRun run(concat_case(StrideMode::padded, DType::bf16, DType::bf16));
  Bytes wrong = run.expected();
  wrong[run.k_offset(2, 4, concat_params(run.c).nope_dim + concat_params(run.c).rope_dim + 3)] ^=
      1;                         // padding after head 4
  wrong[0] ^= 1;                 // guard before k
  wrong[wrong.size() - 1] ^= 1;  // guard after k
  const std::string v = run.verdict(wrong);
  EXPECT_EQ(v.substr(0, v.find(" of ")), "3");
  EXPECT_NE(v.find("guard before k (+0)"), std::string::npos) << v;
  EXPECT_NE(v.find("padding after k[t=2, h=4] (+3)"), std::string::npos) << v;
  EXPECT_NE(v.find("guard after k (+"), std::string::npos) << v;
}

// A cache-write case as the runner lays it out: [guard | K, V | guard].
struct CacheRun {
  Case c;
  CacheGeometry g;
  SlotData slots;
  Bytes key, value;
  explicit CacheRun(Case cc) : c(cc), g(cache_geometry(cc)), slots(make_slots(cc, g, 5)) {
    key = bytes(g.key_elems, c.in_dtype);
    value = bytes(g.key_elems, c.in_dtype);
    fill_random(c.in_dtype, key.data(), g.key_elems, 6);
    fill_random(c.in_dtype, value.data(), g.key_elems, 7);
  }
  Bytes output(const std::vector<std::int64_t>& slot_mapping,
               const std::vector<std::int64_t>& swa) const {
    Bytes out = bytes(g.cache_elems + 2 * g.guard_elems, c.out_dtype);
    std::memset(out.data(), kCanary, out.size());
    unsigned char* k = out.data() + g.guard_elems * size_of(c.out_dtype);
    ref::reshape_and_cache_flash({c.in_dtype,
                                  c.out_dtype,
                                  c.num_tokens,
                                  c.num_heads,
                                  cache_params(c).head_size,
                                  cache_params(c).block_size,
                                  g.num_blocks,
                                  key.data(),
                                  value.data(),
                                  g.key_s0,
                                  g.key_s1,
                                  g.key_s0,
                                  g.key_s1,
                                  slot_mapping.data(),
                                  cache_params(c).swa ? swa.data() : nullptr,
                                  static_cast<std::int64_t>(swa.size()),
                                  g.skip_slot,
                                  cache_params(c).layout,
                                  k,
                                  k + g.value_cache_offset * size_of(c.out_dtype),
                                  g.block_stride,
                                  ScaleMode::none,
                                  nullptr,
                                  nullptr});
    return out;
  }
  std::string verdict(const Bytes& actual) const {
    const auto elems = static_cast<std::int64_t>(actual.size() / size_of(c.out_dtype));
    const Bytes expected = output(slots.slot_mapping, slots.swa_table);
    const CompareResult r =
        compare_bitwise(expected.data(), actual.data(), elems, size_of(c.out_dtype), 8);
    if (r.count == 0) return "";
    const auto owners = slot_owners(slots, g);
    return report_mismatches(r, elems, c.out_dtype, [&](std::int64_t i) {
      const CacheLocation l = locate_cache(c, g, i);
      std::string s = to_string(l);
      if (l.where == CacheLocation::Where::element)
        s += owners[static_cast<std::size_t>(l.slot)] >= 0 ? " owned" : " unowned";
      return s;
    });
  }
};

Case cache_case(SlotPattern slots, bool swa, Layout layout) {
  Case c = testing_support::cache_case(200, 4, 96);
  cache_params(c).slots = slots;
  cache_params(c).swa = swa;
  cache_params(c).layout = layout;
  c.strides = StrideMode::padded;
  return c;
}

TEST(PlantedCpu, CacheSlotOffByOneIsCaught) {
  const CacheRun run(cache_case(SlotPattern::contiguous, false, Layout::hnd));
  EXPECT_EQ(run.verdict(run.output(run.slots.slot_mapping, run.slots.swa_table)), "");
  std::vector<std::int64_t> shifted = run.slots.slot_mapping;
  for (auto& s : shifted) ++s;  // contiguous from slot 3: still in range
  const std::string v = run.verdict(run.output(shifted, run.slots.swa_table));
  EXPECT_NE(v.find("key_cache[block 0, offset 3, head 0, dim 0] (slot 3) owned"), std::string::npos)
      << v;
}

TEST(PlantedCpu, SwaLookupBeforeTheNegativeCheckIsCaught) {
  const CacheRun run(cache_case(SlotPattern::padded, true, Layout::nhd));
  // What the seed's kernel does for a padding token: read swa[-1] (here: an unowned slot, as the
  // runner's guard entry is) and write there.
  const auto owners = slot_owners(run.slots, run.g);
  std::int64_t unowned = 0;
  while (owners[static_cast<std::size_t>(unowned)] >= 0) ++unowned;
  std::vector<std::int64_t> swa = run.slots.swa_table, slot_mapping = run.slots.slot_mapping;
  swa.push_back(unowned);
  for (auto& s : slot_mapping)
    if (s < 0) s = static_cast<std::int64_t>(swa.size()) - 1;
  // Several padding tokens then write the same slot: the reference's last one wins, which is
  // fine here, since any write there is wrong.
  const std::string v = run.verdict(run.output(slot_mapping, swa));
  EXPECT_NE(v.find("(slot " + std::to_string(unowned) + ") unowned"), std::string::npos) << v;
}

TEST(PlantedCpu, CachePaddingAndGuardWritesAreCaught) {
  const CacheRun run(cache_case(SlotPattern::random, false, Layout::nhd));
  Bytes wrong = run.output(run.slots.slot_mapping, run.slots.swa_table);
  const std::size_t osz = size_of(run.c.out_dtype);
  const std::int64_t dense =
      cache_params(run.c).block_size * run.c.num_heads * cache_params(run.c).head_size;
  wrong[(run.g.guard_elems + dense + 2) * osz] ^= 0x10;  // padding after K block 0
  wrong[(run.g.guard_elems - 1) * osz] ^= 0x10;          // just before the K cache
  const std::string v = run.verdict(wrong);
  EXPECT_EQ(v.substr(0, v.find(" of ")), "2") << v;
  EXPECT_NE(v.find("guard before the caches (+" + std::to_string(run.g.guard_elems - 1) + ")"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("padding (outside any K/V element)"), std::string::npos) << v;
}

// A concat_and_cache_mla case as the runner lays it out: [guard | cache | guard].
struct MlaRun {
  Case c;
  MlaCacheGeometry g;
  std::vector<std::int64_t> slots;
  Bytes kv_c, k_pe;
  explicit MlaRun(Case cc) : c(cc), g(mla_cache_geometry(cc)), slots(make_mla_slots(cc, g, 5)) {
    kv_c = bytes(g.kv_c_elems, c.in_dtype);
    k_pe = bytes(g.k_pe_elems, c.in_dtype);
    fill_random(c.in_dtype, kv_c.data(), g.kv_c_elems, 6);
    fill_random(c.in_dtype, k_pe.data(), g.k_pe_elems, 7);
  }
  Bytes output(const std::vector<std::int64_t>& slot_mapping, const float* scale) const {
    Bytes out = bytes(g.cache_elems + 2 * g.guard_elems, c.out_dtype);
    std::memset(out.data(), kCanary, out.size());
    ref::MlaCacheProblem p{};
    p.in_dtype = c.in_dtype;
    const MlaCacheParams& mp = testing_support::mla_params(c);
    p.layout = mp.layout == MlaLayout::fp8_ds_mla ? ref::MlaCacheLayout::fp8_ds_mla
                                                  : ref::MlaCacheLayout::plain;
    p.rule = mp.scale == MlaScale::tile_pow2 ? ref::TileScaleRule::pow2 : ref::TileScaleRule::raw;
    p.cache_dtype = c.out_dtype;
    p.num_tokens = c.num_tokens;
    p.lora_rank = testing_support::mla_params(c).lora_rank;
    p.rope_dim = testing_support::mla_params(c).rope_dim;
    p.block_size = testing_support::mla_params(c).block_size;
    p.num_blocks = g.num_blocks;
    p.kv_c = kv_c.data();
    p.k_pe = k_pe.data();
    p.kv_c_s0 = g.kv_c_s0;
    p.k_pe_s0 = g.k_pe_s0;
    p.slot_mapping = slot_mapping.data();
    p.cache = out.data() + g.guard_elems * size_of(c.out_dtype);
    p.block_stride = g.block_stride;
    p.entry_stride = g.entry_stride;
    p.scale = scale;
    ref::concat_and_cache_mla(p);
    return out;
  }
  std::string verdict(const Bytes& expected, const Bytes& actual) const {
    const auto elems = static_cast<std::int64_t>(actual.size() / size_of(c.out_dtype));
    const CompareResult r =
        compare_bitwise(expected.data(), actual.data(), elems, size_of(c.out_dtype), 8);
    if (r.count == 0) return "";
    const std::vector<std::int64_t> owners = mla_slot_owners(slots, g);
    return report_mismatches(r, elems, c.out_dtype,
                             [&](std::int64_t i) { return locate_mla(c, g, owners, i); });
  }
  std::size_t entry_offset(std::int64_t slot) const {
    const std::int64_t BS = testing_support::mla_params(c).block_size;
    return static_cast<std::size_t>(g.guard_elems + (slot / BS) * g.block_stride +
                                    (slot % BS) * g.entry_stride) *
           size_of(c.out_dtype);
  }
};

Case mla_case(DType out, SlotPattern slots) {
  Case c = testing_support::mla_case(40, 512, 64, 16);
  c.out_dtype = out;
  c.strides = StrideMode::padded;
  testing_support::mla_params(c).slots = slots;
  return c;
}

TEST(PlantedCpu, MlaSlotOffByOneIsCaught) {
  const MlaRun run(mla_case(DType::bf16, SlotPattern::contiguous));
  const Bytes expected = run.output(run.slots, nullptr);
  EXPECT_EQ(run.verdict(expected, expected), "");
  std::vector<std::int64_t> shifted = run.slots;
  for (auto& s : shifted) ++s;  // contiguous from slot 3: still in range
  const std::string v = run.verdict(expected, run.output(shifted, nullptr));
  EXPECT_NE(v.find("cache[block 0, entry 3, 0 (kv_c 0)] (slot 3) of token 0: expected "),
            std::string::npos)
      << v;
}

// k_pe written one element early (at L - 1 instead of L): the last kv_c value is overwritten and
// the entry's last element keeps its canary.
TEST(PlantedCpu, MlaRopeBoundaryOffByOneIsCaught) {
  const MlaRun run(mla_case(DType::fp8_e4m3, SlotPattern::padded));
  const float scale = 1.75f;
  const Bytes expected = run.output(run.slots, &scale);
  Bytes wrong = expected;
  for (std::int64_t s : run.slots) {
    if (s < 0) continue;
    unsigned char* entry = wrong.data() + run.entry_offset(s);
    std::memmove(entry + 511, entry + 512, 64);
    entry[575] = kCanary;
  }
  const std::string v = run.verdict(expected, wrong);
  EXPECT_NE(v.find(", 511 (kv_c 511)] (slot "), std::string::npos) << v;
  EXPECT_NE(v.find(", 512 (k_pe 0)] (slot "), std::string::npos) << v;
}

// A padding token (slot -1) written: its entry lands just before the cache, in the guard.
TEST(PlantedCpu, MlaPaddingTokenWrittenIsCaught) {
  const MlaRun run(mla_case(DType::f16, SlotPattern::padded));
  const Bytes expected = run.output(run.slots, nullptr);
  Bytes wrong = expected;
  wrong[run.entry_offset(0) - run.g.entry_stride * 2] ^= 0x40;
  const std::string v = run.verdict(expected, wrong);
  EXPECT_NE(v.find("guard before the cache (+" +
                   std::to_string(run.g.guard_elems - run.g.entry_stride) + ")"),
            std::string::npos)
      << v;
}

// fp8_ds_mla: a tile scale one ulp off, and a rope value quantized, each located at its byte.
TEST(PlantedCpu, DsMlaScaleAndRopeBytesAreLocated) {
  Case c = mla_case(DType::fp8_e4m3, SlotPattern::padded);
  testing_support::mla_params(c).layout = MlaLayout::fp8_ds_mla;
  testing_support::mla_params(c).scale = MlaScale::tile_pow2;
  const MlaRun run(c);
  const Bytes expected = run.output(run.slots, nullptr);
  EXPECT_EQ(run.verdict(expected, expected), "");
  Bytes wrong = expected;
  const std::size_t entry = run.entry_offset(run.slots[0]);
  wrong[entry + 512 + 4 * 2] ^= 1;     // tile 2's scale, lowest byte: one ulp
  wrong[entry + 528 + 2 * 5 + 1] = 0;  // k_pe 5's high byte
  const std::string v = run.verdict(expected, wrong);
  EXPECT_EQ(v.substr(0, v.find(" of ")), "2") << v;
  EXPECT_NE(v.find(", 520 (scale of tile 2, byte 0)] (slot " + std::to_string(run.slots[0]) +
                   ") of token 0"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find(", 539 (k_pe 5, byte 1)]"), std::string::npos) << v;
}

// per_token_head (SPEC.md §7): the caches as the runner lays them out, written by the reference;
// a row's scale one ulp high, the scale stored before the row's codes, and a row quantized by its
// token's scale shared over the heads, each located at its row and byte.
TEST(PlantedCpu, TokenHeadScaleBytesAreLocated) {
  Case c = testing_support::cache_case(200, 4, 96);
  c.variant = Variant::optimized;
  c.out_dtype = DType::fp8_e4m3;
  c.strides = StrideMode::padded;
  cache_params(c).scale = ScaleMode::per_token_head;
  cache_params(c).layout = Layout::hnd;
  cache_params(c).slots = SlotPattern::padded;
  const CacheGeometry g = cache_geometry(c);
  const SlotData slots = make_slots(c, g, 7);
  std::vector<std::uint16_t> key(static_cast<std::size_t>(g.key_elems)), value(key.size());
  fill_random(DType::bf16, key.data(), g.key_elems, 1);
  fill_random(DType::bf16, value.data(), g.key_elems, 2);
  const auto write = [&](const std::vector<std::uint16_t>& k) {
    Bytes out(static_cast<std::size_t>(g.cache_elems + 2 * g.guard_elems), kCanary);
    unsigned char* kc = out.data() + g.guard_elems;
    ref::reshape_and_cache_flash_per_token_head({DType::bf16,
                                                 c.num_tokens,
                                                 c.num_heads,
                                                 96,
                                                 16,
                                                 g.num_blocks,
                                                 k.data(),
                                                 value.data(),
                                                 g.key_s0,
                                                 g.key_s1,
                                                 g.key_s0,
                                                 g.key_s1,
                                                 slots.slot_mapping.data(),
                                                 nullptr,
                                                 0,
                                                 -1,
                                                 Layout::hnd,
                                                 kc,
                                                 kc + g.value_cache_offset,
                                                 g.block_stride});
    return out;
  };
  const Bytes expected = write(key);
  const auto verdict = [&](const Bytes& actual) {
    const auto elems = static_cast<std::int64_t>(actual.size());
    const CompareResult r = compare_bitwise(expected.data(), actual.data(), elems, 1, 8);
    if (r.count == 0) return std::string();
    return report_mismatches(r, elems, DType::fp8_e4m3,
                             [&](std::int64_t i) { return to_string(locate_cache(c, g, i)); });
  };
  EXPECT_EQ(verdict(expected), "");
  // Token 0's key row of head 2.
  const std::int64_t s = slots.slot_mapping[0];
  const std::int64_t row =
      g.guard_elems + (s / 16) * g.block_stride + (s % 16) * g.slot_stride + 2 * g.head_stride;
  const std::string at = "key_cache[block " + std::to_string(s / 16) + ", offset " +
                         std::to_string(s % 16) + ", head 2, ";
  const std::string slot = "] (slot " + std::to_string(s) + ")";

  Bytes wrong = expected;
  float scale;
  std::memcpy(&scale, &wrong[static_cast<std::size_t>(row + 96)], 4);
  scale = std::nextafter(scale, 1e30f);
  std::memcpy(&wrong[static_cast<std::size_t>(row + 96)], &scale, 4);
  std::string v = verdict(wrong);
  EXPECT_NE(v.find(at + "scale byte 0" + slot), std::string::npos) << v;

  wrong = expected;
  std::memmove(&wrong[static_cast<std::size_t>(row + 4)], &expected[static_cast<std::size_t>(row)],
               96);
  std::memcpy(&wrong[static_cast<std::size_t>(row)], &expected[static_cast<std::size_t>(row + 96)],
              4);
  v = verdict(wrong);
  EXPECT_NE(v.find(at + "dim 0" + slot), std::string::npos) << v;

  // One scale per token, from the amax over its heads: the head with the smallest amax is
  // quantized by the token's scale instead of its own.
  float token_amax = 0.0f, least = INFINITY;
  std::int64_t quiet = 0;
  for (std::int64_t h = 0; h < 4; ++h) {
    const float a = ref::abs_max(DType::bf16, &key[static_cast<std::size_t>(h * g.key_s1)], 96);
    token_amax = std::fmax(token_amax, a);
    if (a < least) {
      least = a;
      quiet = h;
    }
  }
  ASSERT_LT(least, token_amax);
  const std::int64_t quiet_row = row + (quiet - 2) * g.head_stride;
  wrong = expected;
  const float shared = ref::token_head_scale(token_amax);
  ref::quantize_e4m3(DType::bf16, &key[static_cast<std::size_t>(quiet * g.key_s1)], 96, shared,
                     &wrong[static_cast<std::size_t>(quiet_row)]);
  std::memcpy(&wrong[static_cast<std::size_t>(quiet_row + 96)], &shared, 4);
  v = verdict(wrong);
  EXPECT_NE(v.find("key_cache[block " + std::to_string(s / 16) + ", offset " +
                   std::to_string(s % 16) + ", head " + std::to_string(quiet) + ", "),
            std::string::npos)
      << v;
}

}  // namespace
}  // namespace kvbench
