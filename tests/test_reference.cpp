#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/reference.hpp"

namespace kvbench::ref {
namespace {

constexpr float kCanary = 12345.0f;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

float f32_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint8_t to_fp8(DType t, float x, const float* scale = nullptr) {
  std::uint8_t out = 0;
  convert(DType::f32, &x, t, &out, scale);
  return out;
}

std::uint16_t to_16(DType t, float x) {
  std::uint16_t out = 0;
  convert(DType::f32, &x, t, &out);
  return out;
}

float from_bits16(DType t, std::uint16_t bits) {
  float out = 0;
  convert(t, &bits, DType::f32, &out);
  return out;
}

bool is_nan16(DType t, std::uint16_t bits) {
  const std::uint16_t exp_mask = t == DType::f16 ? 0x7C00 : 0x7F80;
  return (bits & exp_mask) == exp_mask && (bits & ~exp_mask & 0x7FFF) != 0;
}

// SPEC.md §3, read off an H200.
TEST(ReferenceConvert, Fp8SpecVectors) {
  const std::vector<float> input = {1000, -1000, 448,  464,   0.0019f, kNaN, kInf, -kInf,
                                    240,  1e-9f, 3.3f, -0.7f, 17,      300,  500,  449};
  const std::vector<int> e4m3 = {126, 254, 126, 126, 1,  127, 126, 254,
                                 119, 0,   69,  179, 88, 121, 126, 126};
  const std::vector<int> e5m2 = {100, 228, 95, 95,  24, 127, 123, 251,
                                 92,  0,   67, 186, 76, 93,  96,  95};
  for (std::size_t i = 0; i < input.size(); ++i) {
    EXPECT_EQ(to_fp8(DType::fp8_e4m3, input[i]), e4m3[i]) << "input " << input[i];
    EXPECT_EQ(to_fp8(DType::fp8_e5m2, input[i]), e5m2[i]) << "input " << input[i];
  }
  // The hardware ignores the sign of a NaN.
  EXPECT_EQ(to_fp8(DType::fp8_e4m3, -kNaN), 0x7F);
  EXPECT_EQ(to_fp8(DType::fp8_e5m2, -kNaN), 0x7F);
}

TEST(ReferenceConvert, Fp8EveryByteRoundTrips) {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<std::uint8_t>(b);
      float decoded = 0;
      convert(t, &byte, DType::f32, &decoded);
      const bool nan_byte = t == DType::fp8_e4m3 ? (b & 0x7F) == 0x7F : (b & 0x7F) > 0x7C;
      if (nan_byte) {
        EXPECT_TRUE(std::isnan(decoded)) << to_string(t) << " byte " << b;
        EXPECT_EQ(to_fp8(t, decoded), 0x7F);
      } else if (std::isinf(decoded)) {
        // e5m2 infinities exist as encodings but the conversion saturates.
        EXPECT_EQ(t, DType::fp8_e5m2);
        EXPECT_EQ(to_fp8(t, decoded), (b & 0x80) | 0x7B);
      } else {
        EXPECT_EQ(to_fp8(t, decoded), b) << to_string(t) << " byte " << b << " = " << decoded;
      }
    }
  }
  float max4 = 0, max5 = 0;
  const std::uint8_t b4 = 0x7E, b5 = 0x7B;
  convert(DType::fp8_e4m3, &b4, DType::f32, &max4);
  convert(DType::fp8_e5m2, &b5, DType::f32, &max5);
  EXPECT_EQ(max4, 448.0f);
  EXPECT_EQ(max5, 57344.0f);
}

TEST(ReferenceConvert, Fp8SubnormalsAndTies) {
  const DType e4 = DType::fp8_e4m3, e5 = DType::fp8_e5m2;
  // e4m3 subnormal unit 2^-9: half a unit ties to 0 (even), 1.5 units to 2.
  EXPECT_EQ(to_fp8(e4, std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(to_fp8(e4, std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(to_fp8(e4, std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(to_fp8(e4, std::ldexp(3.0f, -10)), 0x02);
  EXPECT_EQ(to_fp8(e4, -std::ldexp(7.5f, -9)), 0x88);  // largest subnormal rounds to min normal
  EXPECT_EQ(to_fp8(e4, -0.0f), 0x80);
  // Normal ties: 1 + 1/16 lies between 1 (even) and 1.125; 1 + 3/16 between 1.125 and 1.25 (even).
  EXPECT_EQ(to_fp8(e4, 1.0625f), 0x38);
  EXPECT_EQ(to_fp8(e4, 1.1875f), 0x3A);
  EXPECT_EQ(to_fp8(e4, std::nextafter(1.0625f, 2.0f)), 0x39);
  // 464 ties between 448 and the NaN code: saturate, never NaN.
  EXPECT_EQ(to_fp8(e4, std::nextafter(464.0f, 0.0f)), 0x7E);
  EXPECT_EQ(to_fp8(e4, 1e30f), 0x7E);
  // e5m2 subnormal unit 2^-16.
  EXPECT_EQ(to_fp8(e5, std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(to_fp8(e5, std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(to_fp8(e5, std::ldexp(3.0f, -17)), 0x02);
  EXPECT_EQ(to_fp8(e5, std::ldexp(1.0f, -14)), 0x04);  // min normal
  EXPECT_EQ(to_fp8(e5, std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(to_fp8(e5, 61440.0f), 0x7B);  // would round to inf without saturation
  EXPECT_EQ(to_fp8(e5, -1e30f), 0xFB);
}

TEST(ReferenceConvert, Bf16RoundsToNearestEven) {
  const DType bf = DType::bf16;
  EXPECT_EQ(to_16(bf, f32_from_bits(0x3F808000)), 0x3F80);  // tie, down to even
  EXPECT_EQ(to_16(bf, f32_from_bits(0x3F818000)), 0x3F82);  // tie, up to even
  EXPECT_EQ(to_16(bf, f32_from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(to_16(bf, f32_from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(to_16(bf, f32_from_bits(0x00018000)), 0x0002);  // fp32 subnormal, tie up to even
  EXPECT_EQ(to_16(bf, f32_from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(to_16(bf, std::numeric_limits<float>::max()), 0x7F80);  // overflow -> inf
  EXPECT_EQ(to_16(bf, -std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(to_16(bf, -kInf), 0xFF80);
  EXPECT_TRUE(is_nan16(bf, to_16(bf, kNaN)));
  EXPECT_TRUE(is_nan16(bf, to_16(bf, f32_from_bits(0x7F800001))));  // must not become inf
  EXPECT_TRUE(std::isnan(from_bits16(bf, 0x7FC1)));
}

TEST(ReferenceConvert, Fp16RoundsToNearestEven) {
  const DType h = DType::f16;
  EXPECT_EQ(to_16(h, 1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, down to even
  EXPECT_EQ(to_16(h, 1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie, up to even
  EXPECT_EQ(to_16(h, std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  EXPECT_EQ(to_16(h, std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(to_16(h, std::ldexp(1.0f, -25)), 0x0000);  // tie to zero
  EXPECT_EQ(to_16(h, std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(to_16(h, 65504.0f), 0x7BFF);
  EXPECT_EQ(to_16(h, std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(to_16(h, 65520.0f), 0x7C00);  // tie above the max rounds to inf
  EXPECT_EQ(to_16(h, -1e6f), 0xFC00);
  EXPECT_EQ(to_16(h, kInf), 0x7C00);
  EXPECT_TRUE(is_nan16(h, to_16(h, kNaN)));
  EXPECT_TRUE(is_nan16(h, to_16(h, f32_from_bits(0x7F800001))));
  EXPECT_EQ(from_bits16(h, 0x0001), std::ldexp(1.0f, -24));
}

TEST(ReferenceConvert, HalfAndBf16ConvertThroughFp32) {
  auto cast16 = [](DType from, std::uint16_t bits, DType to) {
    std::uint16_t out = 0;
    convert(from, &bits, to, &out);
    return out;
  };
  // 1 + 2^-8 and 1 + 3 * 2^-8 are bf16 ties: to even, once.
  EXPECT_EQ(cast16(DType::f16, 0x3C04, DType::bf16), 0x3F80);
  EXPECT_EQ(cast16(DType::f16, 0x3C0C, DType::bf16), 0x3F82);
  EXPECT_EQ(cast16(DType::f16, 0x3C05, DType::bf16), 0x3F81);
  EXPECT_EQ(cast16(DType::f16, 0x7BFF, DType::bf16), 0x4780);  // 65504 -> 65536
  EXPECT_EQ(cast16(DType::f16, 0x0001, DType::bf16), 0x3380);  // subnormal 2^-24 is exact
  EXPECT_EQ(cast16(DType::bf16, 0x4780, DType::f16), 0x7C00);  // 65536 overflows fp16
  EXPECT_EQ(cast16(DType::bf16, 0xC2F7, DType::f16), 0xD7B8);  // -123.5
  EXPECT_EQ(cast16(DType::bf16, 0x3300, DType::f16), 0x0000);  // 2^-25: fp16 tie to zero
  // Same-type copies keep the bits, NaN payloads included.
  EXPECT_EQ(cast16(DType::f16, 0x7C01, DType::f16), 0x7C01);
  EXPECT_EQ(cast16(DType::bf16, 0xFF81, DType::bf16), 0xFF81);
}

TEST(ReferenceConvert, ScaleIsCorrectlyRoundedDivision) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> values(-500.0f, 500.0f), scales(0.01f, 10.0f);
  int reciprocal_differs = 0;
  for (int i = 0; i < 20000; ++i) {
    const float x = values(rng), s = scales(rng);
    const float expected = x / s;
    if (x * (1.0f / s) != expected) ++reciprocal_differs;
    float out = 0;
    convert(DType::f32, &x, DType::f32, &out, &s);
    ASSERT_EQ(out, expected) << x << " / " << s;
    ASSERT_EQ(to_fp8(DType::fp8_e4m3, x, &s), to_fp8(DType::fp8_e4m3, expected));
  }
  // Otherwise the loop above could not tell a division from a reciprocal multiply.
  EXPECT_GT(reciprocal_differs, 100);
  const float two = 2.0f;
  EXPECT_EQ(to_fp8(DType::fp8_e4m3, 896.0f, &two), 0x7E);
  EXPECT_EQ(to_fp8(DType::fp8_e4m3, 1e6f, &two), 0x7E);
}

// docs/validation.md, "NaN policy": a rounding conversion writes the device's canonical NaN;
// copies and widenings keep the bits. tests/test_convert_gpu.cpp proves it on the GPU.
TEST(ReferenceConvert, NanPolicyMatchesTheDevice) {
  for (std::uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFBFFFFFu, 0x7FC12345u}) {
    const float nan = f32_from_bits(bits);
    EXPECT_EQ(to_16(DType::f16, nan), kCanonicalNaN16) << std::hex << bits;
    EXPECT_EQ(to_16(DType::bf16, nan), kCanonicalNaN16) << std::hex << bits;
    const float two = 2.0f;
    float q = 0;
    convert(DType::f32, &nan, DType::f32, &q, &two);
    std::uint32_t q_bits = 0;
    std::memcpy(&q_bits, &q, 4);
    EXPECT_EQ(q_bits, kCanonicalNaN32) << std::hex << bits;
    float copy = 0;
    convert(DType::f32, &nan, DType::f32, &copy);
    std::memcpy(&q_bits, &copy, 4);
    EXPECT_EQ(q_bits, bits);  // same type, no scale: the bits travel unchanged
  }
  auto cast16 = [](DType from, std::uint16_t bits, DType to) {
    std::uint16_t out = 0;
    convert(from, &bits, to, &out);
    return out;
  };
  EXPECT_EQ(cast16(DType::f16, 0xFE01, DType::bf16), kCanonicalNaN16);
  EXPECT_EQ(cast16(DType::bf16, 0xFF81, DType::f16), kCanonicalNaN16);
  EXPECT_EQ(cast16(DType::f16, 0xFE01, DType::f16), 0xFE01);
  // Widening keeps sign and payload: bf16 -> fp32 is a shift.
  const std::uint16_t bf_nan = 0xFFC1;
  float wide = 0;
  convert(DType::bf16, &bf_nan, DType::f32, &wide);
  std::uint32_t wide_bits = 0;
  std::memcpy(&wide_bits, &wide, 4);
  EXPECT_EQ(wide_bits, 0xFFC10000u);
  // f16 -> fp32 does not: the device's cvt.f32.f16 returns the canonical NaN.
  const std::uint16_t h_nan = 0x7C01;
  convert(DType::f16, &h_nan, DType::f32, &wide);
  std::memcpy(&wide_bits, &wide, 4);
  EXPECT_EQ(wide_bits, 0x7FFFFFFFu);
}

TEST(ReferenceConvert, BulkConvertMatchesScalar) {
  std::vector<std::uint32_t> in(4096);
  std::mt19937 rng(5);
  for (auto& v : in) v = static_cast<std::uint32_t>(rng());
  for (DType to : {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2}) {
    std::vector<std::uint16_t> bulk(in.size()), one(in.size());
    convert_n(DType::f32, in.data(), to, bulk.data(), static_cast<std::int64_t>(in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::uint16_t out = 0;
      convert(DType::f32, &in[i], to, &out);
      if (size_of(to) == 1) {
        ASSERT_EQ(reinterpret_cast<std::uint8_t*>(bulk.data())[i], out) << i;
      } else {
        ASSERT_EQ(bulk[i], out) << i;
      }
    }
  }
}

// T=2, H=3, NOPE=2, ROPE=1; every stride padded beyond the dense extent.
TEST(ReferenceConcat, StridedRopeBroadcastLeavesPaddingUntouched) {
  const std::int64_t T = 2, H = 3, NOPE = 2, ROPE = 1;
  const std::int64_t nope_s1 = 5, nope_s0 = 16, rope_s0 = 4, k_s1 = 4, k_s0 = 13;
  std::vector<float> k_nope(T * nope_s0, -1.0f), k_rope(T * rope_s0, -1.0f);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < NOPE; ++d)
        k_nope[t * nope_s0 + h * nope_s1 + d] = static_cast<float>(100 * t + 10 * h + d);
    k_rope[t * rope_s0] = static_cast<float>(1000 + t);
  }
  std::vector<float> k(T * k_s0, kCanary);
  ConcatProblem p{DType::f32,    DType::f32, T,       H,       NOPE,    ROPE, k_nope.data(),
                  k_rope.data(), k.data(),   nope_s0, nope_s1, rope_s0, k_s0, k_s1};
  concat_and_cast_mha_k(p);

  const std::vector<float> expected = {
      0,   1,   1000, kCanary, 10,  11,  1000, kCanary, 20,  21,  1000, kCanary, kCanary,
      100, 101, 1001, kCanary, 110, 111, 1001, kCanary, 120, 121, 1001, kCanary, kCanary};
  EXPECT_EQ(k, expected);

  // The same geometry into e4m3: rope 1000 saturates to 448 in every head.
  std::vector<std::uint8_t> k8(T * k_s0, 0xAA);
  p.out_dtype = DType::fp8_e4m3;
  p.k = k8.data();
  concat_and_cast_mha_k(p);
  for (std::int64_t i = 0; i < T * k_s0; ++i) {
    const std::uint8_t want = expected[i] == kCanary ? 0xAA : to_fp8(DType::fp8_e4m3, expected[i]);
    EXPECT_EQ(k8[i], want) << "offset " << i;
  }
  EXPECT_EQ(k8[2], 0x7E);
}

TEST(ReferenceConcat, LargeMatchesScalarConvert) {
  // 3M output elements: large enough to take the threaded path.
  const std::int64_t T = 1024, H = 16, NOPE = 128, ROPE = 64;
  const std::int64_t nope_s1 = NOPE + 128, nope_s0 = H * nope_s1, rope_s0 = 576;
  const std::int64_t k_s1 = NOPE + ROPE, k_s0 = H * k_s1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  std::vector<std::uint16_t> k_nope(T * nope_s0), k_rope(T * rope_s0);
  for (auto& v : k_nope) v = to_16(DType::f16, dist(rng) * (rng() % 2 ? 1.0f : 1e-4f));
  for (auto& v : k_rope) v = to_16(DType::f16, dist(rng));
  std::vector<std::uint16_t> k(T * k_s0);
  const ConcatProblem p{DType::f16,    DType::bf16, T,       H,       NOPE,    ROPE, k_nope.data(),
                        k_rope.data(), k.data(),    nope_s0, nope_s1, rope_s0, k_s0, k_s1};
  concat_and_cast_mha_k(p);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < NOPE + ROPE; ++d) {
        const std::uint16_t src =
            d < NOPE ? k_nope[t * nope_s0 + h * nope_s1 + d] : k_rope[t * rope_s0 + d - NOPE];
        std::uint16_t want = 0;
        convert(DType::f16, &src, DType::bf16, &want);
        ASSERT_EQ(k[t * k_s0 + h * k_s1 + d], want) << t << "," << h << "," << d;
      }
}

// K and V interleaved per block, as FlashInfer-style caches are: block b holds K then V.
struct InterleavedCache {
  std::int64_t H, D, BS, NB;
  std::vector<float> data;
  InterleavedCache(std::int64_t h, std::int64_t d, std::int64_t bs, std::int64_t nb)
      : H(h), D(d), BS(bs), NB(nb), data(2 * bs * h * d * nb, kCanary) {}
  std::int64_t block_stride() const { return 2 * BS * H * D; }
  float* key() { return data.data(); }
  float* value() { return data.data() + BS * H * D; }
};

TEST(ReferenceCacheWrite, NhdInterleavedPerTensorScaleAndSkipSlot) {
  const std::int64_t T = 5, H = 2, D = 3, BS = 2, NB = 3;
  const std::int64_t key_s1 = 4, key_s0 = 9, value_s1 = 3, value_s0 = 7;
  std::vector<float> key(T * key_s0, -1.0f), value(T * value_s0, -1.0f);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < D; ++d) {
        key[t * key_s0 + h * key_s1 + d] = static_cast<float>(1 + 8 * t + 4 * h + d);
        value[t * value_s0 + h * value_s1 + d] = -static_cast<float>(1 + 8 * t + 4 * h + d);
      }
  // Token 1 is padding, token 3 lands on the skip slot.
  const std::vector<std::int64_t> slots = {3, -1, 0, 4, 5};
  const float k_scale = 2.0f, v_scale = 4.0f;
  InterleavedCache cache(H, D, BS, NB);
  const CacheWriteProblem p{DType::f32,
                            DType::f32,
                            T,
                            H,
                            D,
                            BS,
                            NB,
                            key.data(),
                            value.data(),
                            key_s0,
                            key_s1,
                            value_s0,
                            value_s1,
                            slots.data(),
                            nullptr,
                            0,
                            /*skip_slot=*/4,
                            Layout::nhd,
                            cache.key(),
                            cache.value(),
                            cache.block_stride(),
                            ScaleMode::per_tensor,
                            &k_scale,
                            &v_scale};
  reshape_and_cache_flash(p);

  std::vector<float> expected(cache.data.size(), kCanary);
  const std::int64_t kv = BS * H * D;
  for (std::int64_t t : {0, 2, 4}) {
    const std::int64_t b = slots[t] / BS, o = slots[t] % BS;
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t at = b * 2 * kv + (o * H + h) * D + d;
        expected[at] = key[t * key_s0 + h * key_s1 + d] / k_scale;
        expected[kv + at] = value[t * value_s0 + h * value_s1 + d] / v_scale;
      }
  }
  EXPECT_EQ(cache.data, expected);
  // Spot checks by hand: token 0 -> slot 3 = block 1, offset 1; token 4 -> block 2, offset 1.
  EXPECT_EQ(cache.data[24 + 6], 0.5f);          // key[0, 0, 0] = 1, / 2
  EXPECT_EQ(cache.data[24 + 12 + 11], -1.75f);  // value[0, 1, 2] = -7, / 4
  EXPECT_EQ(cache.data[48 + 6], 16.5f);         // key[4, 0, 0] = 33, / 2
  EXPECT_EQ(cache.data[48 + 0], kCanary);       // slot 4 (block 2, offset 0) is the skip slot
}

TEST(ReferenceCacheWrite, HndSwaPerHeadScale) {
  const std::int64_t T = 5, H = 2, D = 3, BS = 2, NB = 3;
  std::vector<float> key(T * H * D), value(T * H * D);
  std::iota(key.begin(), key.end(), 1.0f);
  std::iota(value.begin(), value.end(), 101.0f);
  // A valid slot sits just before the table: reading swa[-1] for the padding token would write it.
  const std::vector<std::int64_t> swa_storage = {1, 5, -1, 2, 0, 4, 3};
  const std::int64_t* swa = swa_storage.data() + 1;
  const std::vector<std::int64_t> slots = {-1, 0, 1, 2, 3};  // -> skip, 5, skip, 2, 0 (skip slot)
  const std::vector<float> k_scale = {2.0f, 4.0f}, v_scale = {8.0f, 0.5f};
  InterleavedCache cache(H, D, BS, NB);
  const CacheWriteProblem p{DType::f32,
                            DType::f32,
                            T,
                            H,
                            D,
                            BS,
                            NB,
                            key.data(),
                            value.data(),
                            H * D,
                            D,
                            H * D,
                            D,
                            slots.data(),
                            swa,
                            6,
                            /*skip_slot=*/0,
                            Layout::hnd,
                            cache.key(),
                            cache.value(),
                            cache.block_stride(),
                            ScaleMode::per_head,
                            k_scale.data(),
                            v_scale.data()};
  reshape_and_cache_flash(p);

  std::vector<float> expected(cache.data.size(), kCanary);
  const std::int64_t kv = BS * H * D;
  const std::vector<std::pair<std::int64_t, std::int64_t>> written = {{1, 5}, {3, 2}};
  for (const auto& [t, s] : written) {
    const std::int64_t b = s / BS, o = s % BS;
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t at = b * 2 * kv + (h * BS + o) * D + d;
        expected[at] = key[(t * H + h) * D + d] / k_scale[h];
        expected[kv + at] = value[(t * H + h) * D + d] / v_scale[h];
      }
  }
  EXPECT_EQ(cache.data, expected);
  // Token 1 -> slot 5 = block 2, offset 1; HND puts head 1 at (1 * BS + 1) * D.
  EXPECT_EQ(cache.data[48 + 9 + 2], 12.0f / 4.0f);    // key[1, 1, 2] = 12
  EXPECT_EQ(cache.data[48 + 12 + 3], 107.0f / 8.0f);  // value[1, 0, 0] = 107
  EXPECT_EQ(cache.data[1 * D], kCanary);              // slot 1 (what swa[-1] would name) untouched
}

TEST(ReferenceCacheWrite, LargeFp8MatchesScalarConvert) {
  // 2M elements per tensor: the threaded path, HND, bf16 -> e5m2 with a per-tensor scale.
  const std::int64_t T = 4096, H = 8, D = 64, BS = 16, NB = T / BS + 4;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-200000.0f, 200000.0f);
  std::vector<std::uint16_t> key(T * H * D), value(T * H * D);
  for (auto& v : key) v = to_16(DType::bf16, dist(rng) * (rng() % 2 ? 1.0f : 1e-6f));
  for (auto& v : value) v = to_16(DType::bf16, dist(rng));
  std::vector<std::int64_t> slots(NB * BS);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(T);
  for (std::int64_t t = 0; t < T; t += 7) slots[t] = -1;
  const std::int64_t block_stride = BS * H * D;
  std::vector<std::uint8_t> key_cache(NB * block_stride, 0xAA), value_cache = key_cache;
  const float k_scale = 3.0f, v_scale = 0.7f;
  const CacheWriteProblem p{DType::bf16,
                            DType::fp8_e5m2,
                            T,
                            H,
                            D,
                            BS,
                            NB,
                            key.data(),
                            value.data(),
                            H * D,
                            D,
                            H * D,
                            D,
                            slots.data(),
                            nullptr,
                            0,
                            -1,
                            Layout::hnd,
                            key_cache.data(),
                            value_cache.data(),
                            block_stride,
                            ScaleMode::per_tensor,
                            &k_scale,
                            &v_scale};
  reshape_and_cache_flash(p);

  std::vector<std::uint8_t> want_k(key_cache.size(), 0xAA), want_v = want_k;
  for (std::int64_t t = 0; t < T; ++t) {
    if (slots[t] < 0) continue;
    const std::int64_t b = slots[t] / BS, o = slots[t] % BS;
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t at = b * block_stride + (h * BS + o) * D + d;
        const std::int64_t i = (t * H + h) * D + d;
        convert(DType::bf16, &key[i], DType::fp8_e5m2, &want_k[at], &k_scale);
        convert(DType::bf16, &value[i], DType::fp8_e5m2, &want_v[at], &v_scale);
      }
  }
  EXPECT_EQ(key_cache, want_k);
  EXPECT_EQ(value_cache, want_v);
}

TEST(ReferenceErrors, RejectsFp8InputAndOutOfRangeSlots) {
  std::uint8_t in[4] = {}, out[8] = {};
  ConcatProblem c{DType::fp8_e4m3, DType::f16, 1, 1, 1, 1, in, in, out, 1, 1, 1, 2, 2};
  try {
    concat_and_cast_mha_k(c);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_e4m3 -> f16"), std::string::npos) << e.what();
  }

  float kv[2] = {1, 2}, cache[8] = {};
  const std::int64_t slot = 4;  // NB * BS = 4
  CacheWriteProblem w{DType::f32, DType::f32,
                      1,          1,
                      1,          2,
                      2,          kv,
                      kv,         1,
                      1,          1,
                      1,          &slot,
                      nullptr,    0,
                      -1,         Layout::nhd,
                      cache,      cache + 4,
                      2,          ScaleMode::none,
                      nullptr,    nullptr};
  EXPECT_THROW(reshape_and_cache_flash(w), std::out_of_range);
  const std::int64_t swa[1] = {0};
  const std::int64_t logical = 1;
  w.slot_mapping = &logical;
  w.swa_slot_mapping = swa;
  w.swa_size = 1;
  EXPECT_THROW(reshape_and_cache_flash(w), std::out_of_range);
  w.in_dtype = DType::fp8_e5m2;
  EXPECT_THROW(reshape_and_cache_flash(w), std::invalid_argument);
}

}  // namespace
}  // namespace kvbench::ref
