// The quantized cache writes' reference (reference/quantize.*, SPEC.md §5-§7) against an
// independent formulation: exact integer arithmetic on the inputs' bit fields, a search over the
// e4m3 code table instead of bit rounding, and the amax as an integer maximum of magnitude bits.
// Every bf16 and fp16 bit pattern goes through each quantizer, in tiles of consecutive patterns
// and as the one dominant element of a tile; the special tiles and one 656-byte entry are also
// checked against constants worked out by hand. The planted-bug tests show the checker reports
// each way a writer can go wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/quantize.hpp"
#include "reference/reference.hpp"

namespace kvbench::ref {
namespace {

__extension__ typedef unsigned __int128 u128;
using Bits = std::vector<std::uint16_t>;

// ---------------------------------------------------------------------------------------------
// The independent formulation. Nothing here calls the reference.

// (-1)^neg * mant * 2^exp, or an infinity or NaN.
struct Exact {
  enum Kind { finite, inf, nan } kind;
  bool neg;
  std::uint64_t mant;
  int exp;
};

Exact decode_fields(std::uint32_t bits, int exp_bits, int man_bits) {
  const bool neg = (bits >> (exp_bits + man_bits)) & 1u;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = static_cast<int>((bits >> man_bits) & ((1u << exp_bits) - 1u));
  const std::uint64_t m = bits & ((1u << man_bits) - 1u);
  if (e == (1 << exp_bits) - 1) return {m != 0 ? Exact::nan : Exact::inf, neg, 0, 0};
  if (e == 0) return {Exact::finite, neg, m, 1 - bias - man_bits};
  return {Exact::finite, neg, m | (std::uint64_t{1} << man_bits), e - bias - man_bits};
}

Exact decode16(DType t, std::uint16_t bits) {
  return t == DType::f16 ? decode_fields(bits, 5, 10) : decode_fields(bits, 8, 7);
}

Exact decode32(double value_of_a_float) {
  const float f = static_cast<float>(value_of_a_float);
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return decode_fields(bits, 8, 23);
}

int bit_length(u128 v) {
  int n = 0;
  while (v != 0) {
    v >>= 1;
    ++n;
  }
  return n;
}

// num / den * 2^exp rounded once to fp32 (nearest, ties to even, subnormals kept, overflow to
// inf), returned as the double holding that fp32 value. Long division on integers.
double round_quotient_f32(std::uint64_t num, std::uint64_t den, int exp) {
  if (num == 0) return 0.0;
  u128 n = num, d = den;
  // Scale so that 2^23 <= n / d < 2^24; the result's last bit is then worth 2^lsb.
  int k = 24 + bit_length(d) - bit_length(n);
  if (k >= 0)
    n <<= k;
  else
    d <<= -k;
  if (n / d >= (u128{1} << 24)) {
    d <<= 1;
    --k;
  }
  int lsb = exp - k;
  if (lsb < -149) {  // below fp32's normal range: fewer bits, the last one worth 2^-149
    const int extra = -149 - lsb;
    if (extra >= 25) return 0.0;  // below half the smallest subnormal
    d <<= extra;
    lsb = -149;
  }
  u128 q = n / d;
  const u128 r = n % d;
  if (2 * r > d || (2 * r == d && (q & 1) != 0)) ++q;
  const double result = std::ldexp(static_cast<double>(q), lsb);
  return result > std::numeric_limits<float>::max() ? std::numeric_limits<double>::infinity()
                                                    : result;
}

// The finite non-negative values of an fp8 format, code c at index c (codes 0 to max_code), and
// the midpoints between neighbours.
struct Fp8Table {
  std::vector<double> value, mid;
  Fp8Table(int man_bits, int bias, int max_code) {
    for (int c = 0; c <= max_code; ++c) {
      const int e = c >> man_bits, m = c & ((1 << man_bits) - 1);
      value.push_back(e == 0 ? std::ldexp(m, 1 - bias - man_bits)
                             : std::ldexp((1 << man_bits) + m, e - bias - man_bits));
    }
    for (int c = 0; c < max_code; ++c) mid.push_back((value[c] + value[c + 1]) / 2);  // exact
  }
  // The code nearest to v >= 0 (a tie goes to the even code; beyond the maximum, the maximum).
  std::uint8_t search(double v) const {
    const auto it = std::lower_bound(mid.begin(), mid.end(), v);
    const auto c = static_cast<std::size_t>(it - mid.begin());  // first midpoint >= v
    if (c < mid.size() && v == mid[c]) return static_cast<std::uint8_t>(c % 2 == 0 ? c : c + 1);
    return static_cast<std::uint8_t>(c);
  }
};
const Fp8Table kE4m3(3, 7, 0x7E);   // max 448
const Fp8Table kE5m2(2, 15, 0x7B);  // max 57344

std::uint8_t e4m3_by_search(double v) { return kE4m3.search(v); }

const double kFltMin = std::ldexp(1.0, -126);
const double kInf = std::numeric_limits<double>::infinity();
const double kPow2Floor = round_quotient_f32(1, 10000, 0);         // the fp32 nearest 1e-4
const double kTokenHeadFloor = round_quotient_f32(1, 1000000, 0);  // the fp32 nearest 1e-6

enum class Rule { raw, pow2, token_head };

struct Quantized {
  double scale;
  std::vector<std::uint8_t> codes;
};

Quantized oracle_quantize(Rule rule, DType in, const Bits& x) {
  // amax: |x| orders as the magnitude bits do, NaNs left out.
  std::uint16_t amax_bits = 0;
  for (std::uint16_t b : x)
    if (decode16(in, b).kind != Exact::nan)
      amax_bits = std::max<std::uint16_t>(amax_bits, b & 0x7FFF);
  const Exact a = decode16(in, amax_bits);
  double scale;
  if (a.kind == Exact::inf) {
    scale = kInf;
  } else {
    const double quotient = round_quotient_f32(a.mant, 7, a.exp - 6);  // a / (7 * 2^6)
    switch (rule) {
      case Rule::raw:
        scale = std::max(quotient, kFltMin);
        break;
      case Rule::token_head:
        scale = std::max(quotient, kTokenHeadFloor);
        break;
      case Rule::pow2: {
        const double v = std::max(quotient, kPow2Floor);
        int e;
        const double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
        scale = m == 0.5 ? v : std::ldexp(1.0, e);
        break;
      }
    }
  }
  Quantized out{scale, {}};
  const Exact s = decode32(scale);
  for (std::uint16_t b : x) {
    const Exact v = decode16(in, b);
    const std::uint8_t sign = v.neg ? 0x80 : 0x00;
    std::uint8_t code;
    if (v.kind == Exact::nan || (v.kind == Exact::inf && scale == kInf)) {
      code = 0x7F;  // NaN, and inf / inf
    } else if (v.kind == Exact::inf) {
      code = sign | 0x7E;
    } else if (scale == kInf || v.mant == 0) {
      code = sign;  // x / inf and 0 / s are zeros of x's sign
    } else {
      code = sign | e4m3_by_search(round_quotient_f32(v.mant, s.mant, v.exp - s.exp));
    }
    out.codes.push_back(code);
  }
  return out;
}

std::uint16_t oracle_to_bf16(DType in, std::uint16_t bits) {
  if (in == DType::bf16) return bits;
  const Exact v = decode16(in, bits);
  const std::uint16_t sign = v.neg ? 0x8000 : 0;
  if (v.kind == Exact::nan) return 0x7FFF;
  if (v.kind == Exact::inf) return sign | 0x7F80;
  if (v.mant == 0) return sign;
  // Every fp16 value is normal in bf16: keep 8 significant bits, ties to even.
  std::uint64_t m = v.mant;
  int e = v.exp;
  const int drop = bit_length(m) - 8;
  if (drop > 0) {
    const std::uint64_t rest = m & ((std::uint64_t{1} << drop) - 1),
                        half = std::uint64_t{1} << (drop - 1);
    m >>= drop;
    e += drop;
    if (rest > half || (rest == half && (m & 1))) ++m;
    if (m == 256) {
      m = 128;
      ++e;
    }
  } else {
    m <<= -drop;
    e += drop;
  }
  const int biased = e + 7 + 127;  // value = 1.f * 2^(e + 7)
  return static_cast<std::uint16_t>(sign | (biased << 7) | (m & 0x7F));
}

void put_le32(std::vector<std::uint8_t>& out, std::size_t at, double value_of_a_float) {
  const float f = static_cast<float>(value_of_a_float);
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<std::uint8_t>(bits >> (8 * i));
}

std::vector<std::uint8_t> oracle_entry(TileScaleRule rule, DType in, const Bits& kv_c,
                                       const Bits& k_pe) {
  std::vector<std::uint8_t> entry(656);
  for (int tile = 0; tile < 4; ++tile) {
    const Bits x(kv_c.begin() + 128 * tile, kv_c.begin() + 128 * (tile + 1));
    const Quantized q = oracle_quantize(rule == TileScaleRule::raw ? Rule::raw : Rule::pow2, in, x);
    std::copy(q.codes.begin(), q.codes.end(), entry.begin() + 128 * tile);
    put_le32(entry, 512 + 4 * tile, q.scale);
  }
  for (int j = 0; j < 64; ++j) {
    const std::uint16_t b = oracle_to_bf16(in, k_pe[j]);
    entry[528 + 2 * j] = static_cast<std::uint8_t>(b);
    entry[529 + 2 * j] = static_cast<std::uint8_t>(b >> 8);
  }
  return entry;
}

std::vector<std::uint8_t> oracle_token_head_row(DType in, const Bits& x) {
  const Quantized q = oracle_quantize(Rule::token_head, in, x);
  std::vector<std::uint8_t> row(q.codes);
  row.resize(x.size() + 4);
  put_le32(row, x.size(), q.scale);
  return row;
}

// The checker: the byte offsets where a written region differs from the oracle's.
std::vector<std::size_t> mismatches(const std::uint8_t* got,
                                    const std::vector<std::uint8_t>& want) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) out.push_back(i);
  return out;
}

std::string describe(const std::vector<std::size_t>& offsets) {
  std::string s = std::to_string(offsets.size()) + " bytes differ, first at";
  for (std::size_t i = 0; i < offsets.size() && i < 8; ++i) s += " " + std::to_string(offsets[i]);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Inputs.

std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The 65536 patterns in order, cut into tiles of n.
std::vector<Bits> consecutive_tiles(std::int64_t n) {
  std::vector<Bits> tiles;
  for (std::uint32_t start = 0; start < 65536; start += static_cast<std::uint32_t>(n)) {
    Bits t;
    for (std::uint32_t p = start; p < start + n; ++p) t.push_back(static_cast<std::uint16_t>(p));
    tiles.push_back(t);
  }
  return tiles;
}

// Pattern p at a position that moves with p, among n - 1 values whose magnitude bits spread
// evenly from 0 up to p's (so, NaN patterns aside, p is the amax), of both signs.
Bits dominant_tile(std::uint16_t p, std::int64_t n) {
  const std::uint32_t mag = p & 0x7FFFu;
  const std::int64_t pos = (p >> 1) % n;
  Bits t;
  for (std::int64_t j = 0, k = 0; j < n; ++j) {
    if (j == pos) {
      t.push_back(p);
      continue;
    }
    const auto m = static_cast<std::uint16_t>(mag * static_cast<std::uint32_t>(k) / (n - 1));
    t.push_back(static_cast<std::uint16_t>(m | (k % 2 ? 0x8000 : 0)));
    ++k;
  }
  return t;
}

const std::vector<DType> kInputs = {DType::bf16, DType::f16};

// quantize_tile against the oracle, scale bits and codes; returns the number of failures.
int check_tile(TileScaleRule rule, DType in, const Bits& x) {
  std::vector<std::uint8_t> codes(x.size());
  const float scale =
      quantize_tile(rule, in, x.data(), static_cast<std::int64_t>(x.size()), codes.data());
  const Quantized want =
      oracle_quantize(rule == TileScaleRule::raw ? Rule::raw : Rule::pow2, in, x);
  const float want_scale = static_cast<float>(want.scale);
  const bool ok = float_bits(scale) == float_bits(want_scale) && codes == want.codes;
  if (!ok) {
    ADD_FAILURE() << to_string(in) << " " << to_string(rule) << " tile starting 0x" << std::hex
                  << x[0] << ": scale 0x" << float_bits(scale) << " (want 0x"
                  << float_bits(want_scale) << "), " << std::dec
                  << describe(mismatches(codes.data(), want.codes));
  }
  return ok ? 0 : 1;
}

int check_row(DType in, const Bits& x) {
  std::vector<std::uint8_t> row(x.size() + 4);
  write_token_head_row(in, x.data(), static_cast<std::int64_t>(x.size()), row.data());
  const auto bad = mismatches(row.data(), oracle_token_head_row(in, x));
  if (!bad.empty())
    ADD_FAILURE() << to_string(in) << " row starting 0x" << std::hex << x[0] << std::dec << ": "
                  << describe(bad);
  return bad.empty() ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// The oracle itself, on values worked out by hand.

TEST(QuantizeOracle, AgreesWithHandValues) {
  EXPECT_EQ(float_bits(static_cast<float>(kPow2Floor)), 0x38D1B717u);
  EXPECT_EQ(float_bits(static_cast<float>(kTokenHeadFloor)), 0x358637BDu);
  EXPECT_EQ(float_bits(static_cast<float>(round_quotient_f32(300, 448, 0))), 0x3F2B6DB7u);
  EXPECT_EQ(round_quotient_f32(1, 3, 0), static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(round_quotient_f32(1, 1, -149), std::ldexp(1.0, -149));
  EXPECT_EQ(round_quotient_f32(1, 1, -150), 0.0);                    // tie to even (zero)
  EXPECT_EQ(round_quotient_f32(3, 1, -151), std::ldexp(1.0, -149));  // 0.75 units: up
  EXPECT_EQ(round_quotient_f32(3, 2, 128), kInf);
  EXPECT_EQ(e4m3_by_search(448), 0x7E);
  EXPECT_EQ(e4m3_by_search(463.9), 0x7E);
  EXPECT_EQ(e4m3_by_search(1e9), 0x7E);
  EXPECT_EQ(e4m3_by_search(1.0), 0x38);
  EXPECT_EQ(e4m3_by_search(1.0625), 0x38);  // tie to even
  EXPECT_EQ(e4m3_by_search(1.1875), 0x3A);  // tie to even
  EXPECT_EQ(e4m3_by_search(std::ldexp(1.0, -10)), 0x00);
  EXPECT_EQ(e4m3_by_search(std::ldexp(3.0, -10)), 0x02);
  EXPECT_EQ(kE5m2.search(57344), 0x7B);
  EXPECT_EQ(kE5m2.search(1e9), 0x7B);
  EXPECT_EQ(kE5m2.search(1.0), 0x3C);
  EXPECT_EQ(kE5m2.search(1.125), 0x3C);  // tie to even
  EXPECT_EQ(kE5m2.search(std::ldexp(1.0, -16)), 0x01);
  EXPECT_EQ(kE5m2.search(std::ldexp(1.0, -17)), 0x00);
  EXPECT_EQ(oracle_to_bf16(DType::f16, 0x3C04), 0x3F80);  // 1 + 2^-8: tie, down to even
  EXPECT_EQ(oracle_to_bf16(DType::f16, 0x3C0C), 0x3F82);  // 1 + 3 * 2^-8: tie, up to even
  EXPECT_EQ(oracle_to_bf16(DType::f16, 0x7BFF), 0x4780);  // 65504 -> 65536
  EXPECT_EQ(oracle_to_bf16(DType::f16, 0x0001), 0x3380);  // 2^-24
}

TEST(QuantizeConstants, LayoutAndFloors) {
  EXPECT_EQ(kDsMlaScalesOffset, 512);
  EXPECT_EQ(kDsMlaRopeOffset, 528);
  EXPECT_EQ(kDsMlaEntryBytes, 656);
  EXPECT_EQ(float_bits(kPow2ScaleFloor), 0x38D1B717u);
  EXPECT_EQ(float_bits(kTokenHeadScaleFloor), 0x358637BDu);
  EXPECT_EQ(to_string(TileScaleRule::raw), "raw");
  EXPECT_EQ(to_string(TileScaleRule::pow2), "pow2");
}

// ---------------------------------------------------------------------------------------------
// Every bit pattern through each quantizer.

class EveryPattern : public ::testing::TestWithParam<std::tuple<DType, TileScaleRule>> {};

TEST_P(EveryPattern, ConsecutiveTiles) {
  const auto [in, rule] = GetParam();
  int failures = 0;
  for (const Bits& t : consecutive_tiles(128)) failures += check_tile(rule, in, t);
  EXPECT_EQ(failures, 0);
}

TEST_P(EveryPattern, EachPatternDominatesATile) {
  const auto [in, rule] = GetParam();
  int failures = 0;
  for (std::uint32_t p = 0; p < 65536 && failures < 10; ++p)
    failures += check_tile(rule, in, dominant_tile(static_cast<std::uint16_t>(p), 128));
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Tiles, EveryPattern,
                         ::testing::Combine(::testing::Values(DType::bf16, DType::f16),
                                            ::testing::Values(TileScaleRule::raw,
                                                              TileScaleRule::pow2)),
                         [](const auto& param_info) {
                           return std::string(to_string(std::get<0>(param_info.param))) + "_" +
                                  std::string(to_string(std::get<1>(param_info.param)));
                         });

class EveryPatternTokenHead : public ::testing::TestWithParam<DType> {};

TEST_P(EveryPatternTokenHead, Rows) {
  const DType in = GetParam();
  int failures = 0;
  for (std::int64_t d : {128, 576})
    for (const Bits& t : consecutive_tiles(d == 576 ? 512 : d)) {
      Bits row = t;
      row.resize(static_cast<std::size_t>(d), t[0]);
      failures += check_row(in, row);
    }
  for (std::uint32_t p = 0; p < 65536 && failures < 10; ++p)
    failures += check_row(in, dominant_tile(static_cast<std::uint16_t>(p), 128));
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Rows, EveryPatternTokenHead, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

// Under raw, a tile's amax lands on 448 exactly (no saturation needed), unless the FLT_MIN floor
// holds; under pow2 every scale is a power of two no smaller than 2^-13 and the quotients stay
// within 448.
TEST(QuantizeProperties, RawAmaxMapsTo448AndPow2IsAPowerOfTwo) {
  for (DType in : kInputs)
    for (std::uint32_t p = 1; p < 0x8000; ++p) {
      const Exact v = decode16(in, static_cast<std::uint16_t>(p));
      if (v.kind != Exact::finite) continue;
      const auto bits = static_cast<std::uint16_t>(p);
      std::uint8_t code = 0;
      const float raw = quantize_tile(TileScaleRule::raw, in, &bits, 1, &code);
      if (raw > std::numeric_limits<float>::min()) {
        ASSERT_EQ(code, 0x7E) << to_string(in) << " 0x" << std::hex << p;
      }
      // The largest quotient in any tile is its amax's: at most one ulp above 448 (SPEC §6).
      const float amax = abs_max(in, &bits, 1);
      ASSERT_LE(amax / raw, std::nextafter(448.0f, 1e9f))
          << to_string(in) << " 0x" << std::hex << p;
      const float pow2 = quantize_tile(TileScaleRule::pow2, in, &bits, 1, &code);
      ASSERT_LE(amax / pow2, 448.0f) << to_string(in) << " 0x" << std::hex << p;
      int e;
      ASSERT_EQ(std::frexp(pow2, &e), 0.5f) << to_string(in) << " 0x" << std::hex << p;
      ASSERT_GE(e - 1, -13);
      ASSERT_LE(e - 1, 127);  // a UE8M0 exponent
      ASSERT_LE(code, 0x7E);
    }
}

// FlashMLA's reference takes 2^ceil(log2(v)) in fp32. For 16-bit inputs that is the exact rule:
// amax / 448 is never a few ulps above a power of two, so an fp32 log2 cannot round onto the
// integer below.
TEST(QuantizeProperties, Pow2EqualsCeilLog2ForSixteenBitInputs) {
  for (DType in : kInputs)
    for (std::uint32_t p = 0; p < 0x8000; ++p) {
      const auto bits = static_cast<std::uint16_t>(p);
      const Exact v = decode16(in, bits);
      if (v.kind != Exact::finite) continue;
      std::uint8_t code;
      const float scale = quantize_tile(TileScaleRule::pow2, in, &bits, 1, &code);
      const float amax = abs_max(in, &bits, 1);
      const float q = std::max(amax / 448.0f, kPow2ScaleFloor);
      const float via_log2 = std::exp2(std::ceil(std::log2(q)));
      ASSERT_EQ(float_bits(scale), float_bits(via_log2)) << to_string(in) << " 0x" << std::hex << p;
    }
}

// ---------------------------------------------------------------------------------------------
// Special tiles: the outcomes SPEC.md §6 and §7 decide, as constants.

struct TileOutcome {
  std::uint32_t scale_bits;
  std::vector<std::uint8_t> codes;
};

TileOutcome run_tile(TileScaleRule rule, DType in, const Bits& x) {
  std::vector<std::uint8_t> codes(x.size());
  const float s =
      quantize_tile(rule, in, x.data(), static_cast<std::int64_t>(x.size()), codes.data());
  EXPECT_EQ(check_tile(rule, in, x), 0);  // and the oracle agrees
  return {float_bits(s), codes};
}

TileOutcome run_row(DType in, const Bits& x) {
  std::vector<std::uint8_t> row(x.size() + 4);
  write_token_head_row(in, x.data(), static_cast<std::int64_t>(x.size()), row.data());
  EXPECT_EQ(check_row(in, x), 0);
  std::uint32_t s = 0;
  for (int i = 0; i < 4; ++i) s |= std::uint32_t{row[x.size() + i]} << (8 * i);
  row.resize(x.size());
  return {s, row};
}

std::vector<std::uint8_t> filled(std::size_t n, std::uint8_t b) {
  return std::vector<std::uint8_t>(n, b);
}

TEST(QuantizeSpecialTiles, Zero) {
  Bits zeros(128, 0x0000);
  zeros[7] = 0x8000;  // -0 keeps its sign
  auto want = filled(128, 0x00);
  want[7] = 0x80;
  for (DType in : kInputs) {
    const auto raw = run_tile(TileScaleRule::raw, in, zeros);
    EXPECT_EQ(raw.scale_bits, 0x00800000u);  // FLT_MIN
    EXPECT_EQ(raw.codes, want);
    const auto pow2 = run_tile(TileScaleRule::pow2, in, zeros);
    EXPECT_EQ(pow2.scale_bits, 0x39000000u);  // 2^-13
    EXPECT_EQ(pow2.codes, want);
    const auto row = run_row(in, zeros);
    EXPECT_EQ(row.scale_bits, 0x358637BDu);  // 1e-6f
    EXPECT_EQ(row.codes, want);
  }
}

TEST(QuantizeSpecialTiles, Subnormal) {
  // bf16: every subnormal and the smallest normals sit below 448 * 2^-126, so raw's floor holds
  // and x / 2^-126 = x * 2^126 exactly: 0x0040 (2^-127) -> 0.5 -> 0x30; 0x0001 (2^-133) ->
  // 2^-7 -> 0x08 (subnormal e4m3, unit 2^-9: 4 units -> 0x04); 0x807F -> -(127/128) -> 0xB8.
  Bits bf(128, 0x0000);
  bf[0] = 0x0040;
  bf[1] = 0x0001;
  bf[2] = 0x807F;
  const auto raw = run_tile(TileScaleRule::raw, DType::bf16, bf);
  EXPECT_EQ(raw.scale_bits, 0x00800000u);
  EXPECT_EQ(raw.codes[0], 0x30);
  EXPECT_EQ(raw.codes[1], 0x04);
  EXPECT_EQ(raw.codes[2], 0xB8);
  // pow2's floor 2^-13 leaves them all zeros of their sign.
  const auto pow2 = run_tile(TileScaleRule::pow2, DType::bf16, bf);
  EXPECT_EQ(pow2.scale_bits, 0x39000000u);
  EXPECT_EQ(pow2.codes[0], 0x00);
  EXPECT_EQ(pow2.codes[2], 0x80);
  // fp16 subnormals are normal fp32 values: raw scales the amax to 448 as usual.
  Bits h(128, 0x0000);
  h[0] = 0x03FF;  // the largest fp16 subnormal
  h[1] = 0x0001;
  const auto hraw = run_tile(TileScaleRule::raw, DType::f16, h);
  EXPECT_EQ(hraw.codes[0], 0x7E);
  EXPECT_NE(hraw.scale_bits, 0x00800000u);
  run_row(DType::bf16, bf);
  run_row(DType::f16, h);
}

TEST(QuantizeSpecialTiles, NanAndInf) {
  for (DType in : kInputs) {
    const std::uint16_t nan = in == DType::f16 ? 0x7E00 : 0x7FC0;
    const std::uint16_t neg_nan = nan | 0x8000;
    const std::uint16_t inf = in == DType::f16 ? 0x7C00 : 0x7F80;
    const std::uint16_t two = in == DType::f16 ? 0x4000 : 0x4000;  // 2.0 in both
    // All NaN: the floor scale, every byte 0x7F (the sign of a NaN is dropped).
    Bits all_nan(128, nan);
    all_nan[3] = neg_nan;
    EXPECT_EQ(run_tile(TileScaleRule::raw, in, all_nan).scale_bits, 0x00800000u);
    EXPECT_EQ(run_tile(TileScaleRule::raw, in, all_nan).codes, filled(128, 0x7F));
    EXPECT_EQ(run_tile(TileScaleRule::pow2, in, all_nan).scale_bits, 0x39000000u);
    EXPECT_EQ(run_row(in, all_nan).codes, filled(128, 0x7F));
    // One NaN spoils only its own byte: the scale comes from the rest.
    Bits one_nan(128, two);
    one_nan[5] = neg_nan;
    const auto r = run_tile(TileScaleRule::raw, in, one_nan);
    auto want = filled(128, 0x7E);
    want[5] = 0x7F;
    EXPECT_EQ(r.scale_bits, float_bits(2.0f / 448.0f));
    EXPECT_EQ(r.codes, want);
    // An infinity: scale +inf, finite values zeros of their sign, the infinities NaN.
    Bits with_inf(128, two);
    with_inf[0] = inf;
    with_inf[1] = inf | 0x8000;
    with_inf[2] = two | 0x8000;
    with_inf[4] = nan;
    auto want_inf = filled(128, 0x00);
    want_inf[0] = want_inf[1] = want_inf[4] = 0x7F;
    want_inf[2] = 0x80;
    for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2}) {
      const auto t = run_tile(rule, in, with_inf);
      EXPECT_EQ(t.scale_bits, 0x7F800000u) << to_string(rule);
      EXPECT_EQ(t.codes, want_inf) << to_string(rule);
    }
    const auto row = run_row(in, with_inf);
    EXPECT_EQ(row.scale_bits, 0x7F800000u);
    EXPECT_EQ(row.codes, want_inf);
  }
}

TEST(QuantizeSpecialTiles, MaximumMagnitude) {
  // bf16 max 0x7F7F = (2 - 2^-7) * 2^127: pow2 scale 2^120, |x| / 2^120 = 255 * 2^0 ... -> the
  // amax maps to 448 under raw and to code 0x7E/0xFE-adjacent under pow2; fp16 max 65504.
  for (DType in : kInputs) {
    const std::uint16_t max = in == DType::f16 ? 0x7BFF : 0x7F7F;
    Bits x(128, max);
    for (std::size_t i = 1; i < x.size(); i += 2) x[i] |= 0x8000;
    auto want = filled(128, 0x7E);
    for (std::size_t i = 1; i < want.size(); i += 2) want[i] = 0xFE;
    EXPECT_EQ(run_tile(TileScaleRule::raw, in, x).codes, want);
    EXPECT_EQ(run_row(in, x).codes, want);
    const auto pow2 = run_tile(TileScaleRule::pow2, in, x);
    // bf16: 3.39e38 / 448 = 7.6e35 -> 2^120; fp16: 65504 / 448 = 146.2 -> 2^8.
    EXPECT_EQ(pow2.scale_bits, in == DType::f16 ? 0x43800000u : 0x7B800000u);
    // bf16: 3.39e38 / 2^120 = 255 -> e4m3 256 (0x78); fp16: 65504 / 256 = 255.875 -> 256.
    EXPECT_EQ(pow2.codes[0], 0x78);
    EXPECT_EQ(pow2.codes[1], 0xF8);
  }
}

// ---------------------------------------------------------------------------------------------
// The 656-byte entry, byte for byte, on a token worked out by hand.

struct HandToken {
  Bits kv_c = Bits(512, 0x0000);
  Bits k_pe = Bits(64, 0x0000);
  HandToken() {
    // Tile 0: amax 448 -> scale 1 under both rules.
    kv_c[0] = 0x43E0;  // 448 -> 0x7E
    kv_c[1] = 0xC000;  // -2 -> 0xC0
    kv_c[2] = 0x3F80;  // 1 -> 0x38
    kv_c[3] = 0x3F00;  // 0.5 -> 0x30
    kv_c[4] = 0x4396;  // 300 -> 0x79
    // Tile 1: all zero but a -0 at 128.
    kv_c[128] = 0x8000;
    // Tile 2: amax 896 -> scale 2 under both rules.
    kv_c[256] = 0x4460;  // 896 -> 448 -> 0x7E
    kv_c[257] = 0x4040;  // 3 -> 1.5 -> 0x3C
    kv_c[258] = 0xC0E0;  // -7 -> -3.5 -> 0xC6
    // Tile 3: amax 300 (the NaN skipped) -> raw 300/448 = 0x3F2B6DB7, pow2 1.
    kv_c[384] = 0x4396;  // 300 -> raw 0x7E, pow2 0x79
    kv_c[385] = 0x7FC0;  // NaN -> 0x7F
    kv_c[386] = 0x3FC0;  // 1.5 -> raw 2.24 -> 2.25 = 0x41, pow2 0x3C
    for (int j = 0; j < 64; ++j) k_pe[j] = static_cast<std::uint16_t>(0x3F80 + j);
    k_pe[5] = 0x7FC1;  // a NaN payload survives the copy
  }
};

std::vector<std::uint8_t> hand_entry(TileScaleRule rule) {
  std::vector<std::uint8_t> e(656, 0x00);
  const bool raw = rule == TileScaleRule::raw;
  e[0] = 0x7E, e[1] = 0xC0, e[2] = 0x38, e[3] = 0x30, e[4] = 0x79;
  e[128] = 0x80;
  e[256] = 0x7E, e[257] = 0x3C, e[258] = 0xC6;
  e[384] = raw ? 0x7E : 0x79, e[385] = 0x7F, e[386] = raw ? 0x41 : 0x3C;
  const std::array<std::uint8_t, 16> scales_raw = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x80, 0x00,
                                                   0x00, 0x00, 0x00, 0x40, 0xB7, 0x6D, 0x2B, 0x3F};
  const std::array<std::uint8_t, 16> scales_pow2 = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x39,
                                                    0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x80, 0x3F};
  std::copy_n((raw ? scales_raw : scales_pow2).begin(), 16, e.begin() + 512);
  for (int j = 0; j < 64; ++j) {
    e[528 + 2 * j] = static_cast<std::uint8_t>(0x80 + j);
    e[529 + 2 * j] = 0x3F;
  }
  e[538] = 0xC1, e[539] = 0x7F;
  return e;
}

TEST(DsMlaEntry, HandComputedToken) {
  const HandToken tok;
  for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2}) {
    std::vector<std::uint8_t> entry(656, 0xAA);
    write_ds_mla_entry(rule, DType::bf16, tok.kv_c.data(), tok.k_pe.data(), entry.data());
    EXPECT_EQ(entry, hand_entry(rule)) << to_string(rule);
    EXPECT_EQ(entry, oracle_entry(rule, DType::bf16, tok.kv_c, tok.k_pe)) << to_string(rule);
  }
}

TEST(DsMlaEntry, Fp16InputRopeIsCastToBf16) {
  Bits kv_c(512), k_pe(64);
  for (int i = 0; i < 512; ++i) kv_c[i] = static_cast<std::uint16_t>(i * 127);
  for (int j = 0; j < 64; ++j) k_pe[j] = static_cast<std::uint16_t>(0x3C00 + j * 3);
  k_pe[0] = 0x3C04;  // 1 + 2^-8: a bf16 tie, to even
  k_pe[1] = 0xFE01;  // NaN: the canonical 0x7FFF
  std::vector<std::uint8_t> entry(656);
  write_ds_mla_entry(TileScaleRule::raw, DType::f16, kv_c.data(), k_pe.data(), entry.data());
  EXPECT_EQ(entry, oracle_entry(TileScaleRule::raw, DType::f16, kv_c, k_pe));
  EXPECT_EQ(entry[528], 0x80);
  EXPECT_EQ(entry[529], 0x3F);
  EXPECT_EQ(entry[530], 0xFF);
  EXPECT_EQ(entry[531], 0x7F);
}

// ---------------------------------------------------------------------------------------------
// Planted bugs: each wrong entry must be reported, at the bytes it got wrong.

// A token where both rules give different scales in every tile, and element 128 is tile 1's amax
// and larger than tile 0's.
HandToken planted_token() {
  HandToken t;
  for (int i = 0; i < 512; ++i) t.kv_c[i] = static_cast<std::uint16_t>(0x3F00 + (i * 37) % 200);
  t.kv_c[128] = 0x4396;  // 300
  return t;
}

std::vector<std::size_t> check(TileScaleRule rule, const HandToken& t,
                               const std::vector<std::uint8_t>& entry) {
  return mismatches(entry.data(), oracle_entry(rule, DType::bf16, t.kv_c, t.k_pe));
}

std::vector<std::uint8_t> good_entry(TileScaleRule rule, const HandToken& t) {
  std::vector<std::uint8_t> e(656);
  write_ds_mla_entry(rule, DType::bf16, t.kv_c.data(), t.k_pe.data(), e.data());
  return e;
}

bool all_within(const std::vector<std::size_t>& offsets, std::size_t begin, std::size_t end) {
  return std::all_of(offsets.begin(), offsets.end(),
                     [&](std::size_t o) { return o >= begin && o < end; });
}

TEST(DsMlaPlanted, GoodEntryPasses) {
  const HandToken t = planted_token();
  for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2})
    EXPECT_TRUE(check(rule, t, good_entry(rule, t)).empty());
}

TEST(DsMlaPlanted, WrongTileScale) {
  const HandToken t = planted_token();
  for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2}) {
    auto e = good_entry(rule, t);
    e[512 + 4 * 2] ^= 0x01;  // tile 2's scale, one ulp off
    const auto bad = check(rule, t, e);
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0], 520u);
  }
}

TEST(DsMlaPlanted, ScaleOneUlpOffAndCodesFromIt) {
  // A writer whose scale is one ulp high (x * (1 / s) style drift) changes the scale and
  // some codes; the checker names both.
  const HandToken t = planted_token();
  auto e = good_entry(TileScaleRule::raw, t);
  float s;
  std::memcpy(&s, &e[512], 4);
  s = std::nextafter(s, 1e30f);
  std::memcpy(&e[512], &s, 4);
  quantize_e4m3(DType::bf16, t.kv_c.data(), 128, s, e.data());
  const auto bad = check(TileScaleRule::raw, t, e);
  EXPECT_FALSE(bad.empty());
  EXPECT_TRUE(std::find(bad.begin(), bad.end(), 512u) != bad.end() ||
              std::find(bad.begin(), bad.end(), 513u) != bad.end());
}

TEST(DsMlaPlanted, RopeQuantized) {
  const HandToken t = planted_token();
  auto e = good_entry(TileScaleRule::raw, t);
  // The rope through the tile quantizer as a fifth tile (64 codes), then zero padding.
  std::vector<std::uint8_t> codes(64);
  quantize_tile(TileScaleRule::raw, DType::bf16, t.k_pe.data(), 64, codes.data());
  std::fill(e.begin() + 528, e.end(), 0);
  std::copy(codes.begin(), codes.end(), e.begin() + 528);
  const auto bad = check(TileScaleRule::raw, t, e);
  EXPECT_FALSE(bad.empty());
  EXPECT_TRUE(all_within(bad, 528, 656)) << describe(bad);
}

TEST(DsMlaPlanted, ScaleRuleSwapped) {
  const HandToken t = planted_token();
  for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2}) {
    const TileScaleRule other =
        rule == TileScaleRule::raw ? TileScaleRule::pow2 : TileScaleRule::raw;
    const auto bad = check(rule, t, good_entry(other, t));
    EXPECT_FALSE(bad.empty());
    for (std::size_t tile = 0; tile < 4; ++tile)  // every tile's scale is reported
      EXPECT_TRUE(
          std::any_of(bad.begin(), bad.end(),
                      [&](std::size_t o) { return o >= 512 + 4 * tile && o < 516 + 4 * tile; }))
          << "tile " << tile;
    EXPECT_TRUE(all_within(bad, 0, 528));
  }
}

// A writer whose tile boundaries sit one element early or late: tile t's scale is taken over
// [128 t + shift, 128 t + 128 + shift) (clipped to the row) and its elements quantized with it.
std::vector<std::uint8_t> entry_with_tile_boundary(const HandToken& t, int shift) {
  auto e = good_entry(TileScaleRule::raw, t);
  for (int tile = 0; tile < 4; ++tile) {
    const int begin = tile == 0 ? 0 : 128 * tile + shift;
    const int end = tile == 3 ? 512 : 128 * tile + 128 + shift;
    const float s = quantize_tile(TileScaleRule::raw, DType::bf16, t.kv_c.data() + begin,
                                  end - begin, e.data() + begin);
    std::memcpy(&e[512 + 4 * tile], &s, 4);
  }
  return e;
}

TEST(DsMlaPlanted, TileBoundaryOffByOne) {
  const HandToken t = planted_token();
  EXPECT_TRUE(check(TileScaleRule::raw, t, entry_with_tile_boundary(t, 0)).empty());
  // One early: element 127 is quantized with tile 1's scale (300 / 448), so its code differs.
  const auto early = check(TileScaleRule::raw, t, entry_with_tile_boundary(t, -1));
  EXPECT_TRUE(std::find(early.begin(), early.end(), 127u) != early.end()) << describe(early);
  // One late: tile 0's amax takes in element 128 (300), so its scale and its codes differ.
  const auto late = check(TileScaleRule::raw, t, entry_with_tile_boundary(t, 1));
  EXPECT_TRUE(std::any_of(late.begin(), late.end(), [](std::size_t o) {
    return o >= 512 && o < 516;
  })) << describe(late);
  EXPECT_TRUE(std::find(late.begin(), late.end(), 0u) != late.end()) << describe(late);
}

TEST(DsMlaPlanted, ScaleStoredBigEndian) {
  const HandToken t = planted_token();
  auto e = good_entry(TileScaleRule::raw, t);
  std::reverse(e.begin() + 512, e.begin() + 516);
  const auto bad = check(TileScaleRule::raw, t, e);
  EXPECT_FALSE(bad.empty());
  EXPECT_TRUE(all_within(bad, 512, 516));
}

TEST(TokenHeadPlanted, ScaleBeforeTheRowAndNoFloor) {
  Bits x(128);
  for (int i = 0; i < 128; ++i) x[i] = static_cast<std::uint16_t>(0x3E00 + i * 5);
  const auto want = oracle_token_head_row(DType::bf16, x);
  std::vector<std::uint8_t> row(132);
  write_token_head_row(DType::bf16, x.data(), 128, row.data());
  EXPECT_TRUE(mismatches(row.data(), want).empty());
  // The scale written first and the codes after it.
  std::vector<std::uint8_t> moved(132);
  std::copy(row.begin() + 128, row.end(), moved.begin());
  std::copy(row.begin(), row.begin() + 128, moved.begin() + 4);
  EXPECT_FALSE(mismatches(moved.data(), want).empty());
  // A zero row quantized without the 1e-6 floor (FLT_MIN instead, as the tile rule has).
  const Bits zeros(128, 0);
  auto zero_row = oracle_token_head_row(DType::bf16, zeros);
  std::vector<std::uint8_t> no_floor(132, 0);
  const float flt_min = std::numeric_limits<float>::min();
  std::memcpy(&no_floor[128], &flt_min, 4);
  const auto bad = mismatches(no_floor.data(), zero_row);
  EXPECT_TRUE(!bad.empty() && all_within(bad, 128, 132));
}

// ---------------------------------------------------------------------------------------------
// The operations: slots, strides, untouched bytes.

constexpr std::uint8_t kCanaryByte = 0xA5;

TEST(ConcatAndCacheMla, Fp8DsMlaWritesEntriesAtTheirSlots) {
  const std::int64_t T = 4, BS = 3, NB = 3, entry_stride = 672, block_stride = BS * 672 + 32;
  const HandToken base = planted_token();
  std::vector<std::uint16_t> kv_c(T * 520), k_pe(T * 70);  // padded rows: strides 520 and 70
  for (std::int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < 512; ++i) kv_c[t * 520 + i] = static_cast<std::uint16_t>(base.kv_c[i] + t);
    for (int j = 0; j < 64; ++j) k_pe[t * 70 + j] = static_cast<std::uint16_t>(base.k_pe[j] ^ t);
  }
  const std::vector<std::int64_t> slots = {7, -1, 0, 5};
  std::vector<std::uint8_t> cache(static_cast<std::size_t>(NB * block_stride), kCanaryByte);
  for (TileScaleRule rule : {TileScaleRule::raw, TileScaleRule::pow2}) {
    std::fill(cache.begin(), cache.end(), kCanaryByte);
    MlaCacheProblem p{DType::bf16,
                      MlaCacheLayout::fp8_ds_mla,
                      DType::fp8_e4m3,
                      rule,
                      T,
                      512,
                      64,
                      BS,
                      NB,
                      kv_c.data(),
                      k_pe.data(),
                      520,
                      70,
                      slots.data(),
                      cache.data(),
                      block_stride,
                      entry_stride,
                      nullptr};
    concat_and_cache_mla(p);
    std::vector<std::uint8_t> want(cache.size(), kCanaryByte);
    for (std::int64_t t = 0; t < T; ++t) {
      if (slots[t] < 0) continue;
      const Bits kv(kv_c.begin() + t * 520, kv_c.begin() + t * 520 + 512);
      const Bits pe(k_pe.begin() + t * 70, k_pe.begin() + t * 70 + 64);
      const auto e = oracle_entry(rule, DType::bf16, kv, pe);
      const std::int64_t at = (slots[t] / BS) * block_stride + (slots[t] % BS) * entry_stride;
      std::copy(e.begin(), e.end(), want.begin() + at);
    }
    const auto bad = mismatches(cache.data(), want);
    EXPECT_TRUE(bad.empty()) << to_string(rule) << ": " << describe(bad);
  }
}

// The plain layout's per-tensor fp8 quantizer: every pattern, in kv_c and in k_pe, through
// concat_and_cache_mla into e4m3 and e5m2 caches, against the oracle's x / s.
TEST(ConcatAndCacheMla, EveryPatternThroughAPerTensorFp8Cache) {
  const std::int64_t L = 512, R = 64, T = (65536 + L + R - 1) / (L + R);
  std::vector<std::uint16_t> kv_c(T * L), k_pe(T * R);
  std::vector<std::int64_t> slots(T);
  for (std::int64_t t = 0; t < T; ++t) {
    slots[t] = T - 1 - t;
    for (std::int64_t j = 0; j < L + R; ++j) {
      const auto p = static_cast<std::uint16_t>((t * (L + R) + j) % 65536);
      (j < L ? kv_c[t * L + j] : k_pe[t * R + j - L]) = p;
    }
  }
  for (DType in : kInputs)
    for (DType cache_dtype : {DType::fp8_e4m3, DType::fp8_e5m2})
      for (float scale : {1.0f, 0.75f, 1.0f / 3.0f, std::ldexp(1.0f, -10), 300.0f}) {
        std::vector<std::uint8_t> cache(static_cast<std::size_t>(T * (L + R)));
        MlaCacheProblem p{in,
                          MlaCacheLayout::plain,
                          cache_dtype,
                          TileScaleRule::raw,
                          T,
                          L,
                          R,
                          1,
                          T,
                          kv_c.data(),
                          k_pe.data(),
                          L,
                          R,
                          slots.data(),
                          cache.data(),
                          L + R,
                          L + R,
                          &scale};
        concat_and_cache_mla(p);
        const Fp8Table& table = cache_dtype == DType::fp8_e4m3 ? kE4m3 : kE5m2;
        const std::uint8_t max_code = cache_dtype == DType::fp8_e4m3 ? 0x7E : 0x7B;
        const Exact s = decode32(scale);
        int failures = 0;
        for (std::int64_t t = 0; t < T && failures < 10; ++t)
          for (std::int64_t j = 0; j < L + R; ++j) {
            const std::uint16_t b = j < L ? kv_c[t * L + j] : k_pe[t * R + j - L];
            const Exact v = decode16(in, b);
            const std::uint8_t sign = v.neg ? 0x80 : 0x00;
            std::uint8_t want;
            if (v.kind == Exact::nan) {
              want = 0x7F;
            } else if (v.kind == Exact::inf) {
              want = sign | max_code;  // saturating
            } else if (v.mant == 0) {
              want = sign;
            } else {
              want = sign | table.search(round_quotient_f32(v.mant, s.mant, v.exp - s.exp));
            }
            const std::uint8_t got = cache[static_cast<std::size_t>(slots[t] * (L + R) + j)];
            if (got != want && ++failures <= 10)
              ADD_FAILURE() << to_string(in) << " -> " << to_string(cache_dtype) << " / " << scale
                            << ": pattern 0x" << std::hex << b << " gave 0x" << int{got}
                            << ", want 0x" << int{want};
          }
      }
}

// SPEC.md §6: under pow2 a kernel may multiply by 1 / s, since s is a power of two.
TEST(QuantizeProperties, Pow2DivisionEqualsReciprocalMultiplication) {
  for (DType in : kInputs)
    for (int k : {-13, -7, 0, 5, 8, 64, 120}) {
      const float s = std::ldexp(1.0f, k), inv = std::ldexp(1.0f, -k);
      for (std::uint32_t p = 0; p < 65536; ++p) {
        const auto bits = static_cast<std::uint16_t>(p);
        std::uint8_t divided = 0, multiplied = 0;
        quantize_e4m3(in, &bits, 1, s, &divided);
        float x = 0;
        convert(in, &bits, DType::f32, &x);
        const float product = x * inv;
        convert(DType::f32, &product, DType::fp8_e4m3, &multiplied);
        ASSERT_EQ(divided, multiplied)
            << to_string(in) << " 0x" << std::hex << p << " 2^" << std::dec << k;
      }
    }
}

TEST(ConcatAndCacheMla, PlainCachesCastAndScaleBothParts) {
  const std::int64_t T = 3, L = 8, R = 4, BS = 2, NB = 2, entry_stride = 14;
  std::vector<std::uint16_t> kv_c(T * L), k_pe(T * R);
  for (std::size_t i = 0; i < kv_c.size(); ++i)
    kv_c[i] = static_cast<std::uint16_t>(0x4000 + 9 * i);
  for (std::size_t i = 0; i < k_pe.size(); ++i)
    k_pe[i] = static_cast<std::uint16_t>(0xC100 + 5 * i);
  const std::vector<std::int64_t> slots = {3, 0, -5};
  const float scale = 0.75f;
  for (DType cache_dtype : {DType::bf16, DType::f16, DType::fp8_e4m3, DType::fp8_e5m2}) {
    for (const float* sc : {static_cast<const float*>(nullptr), &scale}) {
      const std::size_t es = size_of(cache_dtype);
      std::vector<std::uint8_t> cache(static_cast<std::size_t>(NB * BS * entry_stride) * es,
                                      kCanaryByte);
      MlaCacheProblem p{DType::bf16,
                        MlaCacheLayout::plain,
                        cache_dtype,
                        TileScaleRule::raw,
                        T,
                        L,
                        R,
                        BS,
                        NB,
                        kv_c.data(),
                        k_pe.data(),
                        L,
                        R,
                        slots.data(),
                        cache.data(),
                        BS * entry_stride,
                        entry_stride,
                        sc};
      concat_and_cache_mla(p);
      std::vector<std::uint8_t> want(cache.size(), kCanaryByte);
      for (std::int64_t t = 0; t < T; ++t) {
        if (slots[t] < 0) continue;
        for (std::int64_t j = 0; j < L + R; ++j) {
          const std::uint16_t x = j < L ? kv_c[t * L + j] : k_pe[t * R + j - L];
          convert(DType::bf16, &x, cache_dtype, &want[((slots[t]) * entry_stride + j) * es], sc);
        }
      }
      const auto bad = mismatches(cache.data(), want);
      EXPECT_TRUE(bad.empty()) << to_string(cache_dtype) << (sc ? " scaled" : "") << ": "
                               << describe(bad);
    }
  }
  // bf16 -> bf16 unscaled keeps the bits.
  std::vector<std::uint16_t> cache(NB * BS * entry_stride, 0xA5A5);
  MlaCacheProblem p{DType::bf16,
                    MlaCacheLayout::plain,
                    DType::bf16,
                    TileScaleRule::raw,
                    T,
                    L,
                    R,
                    BS,
                    NB,
                    kv_c.data(),
                    k_pe.data(),
                    L,
                    R,
                    slots.data(),
                    cache.data(),
                    BS * entry_stride,
                    entry_stride,
                    nullptr};
  concat_and_cache_mla(p);
  EXPECT_EQ(cache[3 * entry_stride + 1], kv_c[1]);
  EXPECT_EQ(cache[3 * entry_stride + L + 2], k_pe[2]);
  EXPECT_EQ(cache[3 * entry_stride + L + R], 0xA5A5);  // the entry's padding is untouched
}

TEST(ConcatAndCacheMla, BadInputThrows) {
  std::vector<std::uint16_t> kv_c(576), k_pe(64);
  std::vector<std::uint8_t> cache(4 * 656);
  std::vector<std::int64_t> slots = {4};
  MlaCacheProblem p{DType::bf16,
                    MlaCacheLayout::fp8_ds_mla,
                    DType::fp8_e4m3,
                    TileScaleRule::raw,
                    1,
                    512,
                    64,
                    2,
                    2,
                    kv_c.data(),
                    k_pe.data(),
                    512,
                    64,
                    slots.data(),
                    cache.data(),
                    2 * 656,
                    656,
                    nullptr};
  EXPECT_THROW(concat_and_cache_mla(p), std::out_of_range);  // slot 4 >= 2 * 2
  slots[0] = 3;
  EXPECT_NO_THROW(concat_and_cache_mla(p));
  auto q = p;
  q.lora_rank = 576;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
  q = p;
  q.entry_stride = 648;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
  q = p;
  q.entry_stride = 664;  // above 656 but not a multiple of 16
  q.block_stride = 2 * 664;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
  q = p;
  q.block_stride = 2 * 656 + 8;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
  q = p;
  q.in_dtype = DType::f32;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
  const float one = 1.0f;
  q = p;
  q.scale = &one;
  EXPECT_THROW(concat_and_cache_mla(q), std::invalid_argument);
}

TEST(ReshapeAndCacheFlashPerTokenHead, RowsAndScalesAtTheirOffsets) {
  const std::int64_t T = 5, H = 3, D = 8, BS = 2, NB = 3, row = D + 4;
  const std::int64_t block_stride = BS * H * row + 8;
  std::vector<std::uint16_t> key(T * H * 10), value(T * H * 10);  // head stride 10: padded
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint16_t>(0x3F00 + 13 * i);
    value[i] = static_cast<std::uint16_t>(0xBE00 + 7 * i);
  }
  const std::vector<std::int64_t> slots = {0, -1, 2, 3, 1};
  const std::vector<std::int64_t> swa = {4, 5, -1, 2};  // logical -> physical
  for (Layout layout : {Layout::nhd, Layout::hnd})
    for (bool with_swa : {false, true}) {
      std::vector<std::uint8_t> kc(NB * block_stride, kCanaryByte), vc(kc);
      TokenHeadCacheProblem p{DType::bf16,
                              T,
                              H,
                              D,
                              BS,
                              NB,
                              key.data(),
                              value.data(),
                              H * 10,
                              10,
                              H * 10,
                              10,
                              slots.data(),
                              with_swa ? swa.data() : nullptr,
                              4,
                              with_swa ? 5 : 1,
                              layout,
                              kc.data(),
                              vc.data(),
                              block_stride};
      reshape_and_cache_flash_per_token_head(p);
      std::vector<std::uint8_t> want_k(kc.size(), kCanaryByte), want_v(want_k);
      for (std::int64_t t = 0; t < T; ++t) {
        std::int64_t s = slots[t];
        if (s >= 0 && with_swa) s = swa[s];
        if (s < 0 || s == (with_swa ? 5 : 1)) continue;
        const std::int64_t b = s / BS, o = s % BS;
        for (std::int64_t h = 0; h < H; ++h) {
          const std::int64_t at =
              b * block_stride + (layout == Layout::nhd ? (o * H + h) : (h * BS + o)) * row;
          const Bits k(key.begin() + (t * H + h) * 10, key.begin() + (t * H + h) * 10 + D);
          const Bits v(value.begin() + (t * H + h) * 10, value.begin() + (t * H + h) * 10 + D);
          const auto rk = oracle_token_head_row(DType::bf16, k);
          const auto rv = oracle_token_head_row(DType::bf16, v);
          std::copy(rk.begin(), rk.end(), want_k.begin() + at);
          std::copy(rv.begin(), rv.end(), want_v.begin() + at);
        }
      }
      EXPECT_TRUE(mismatches(kc.data(), want_k).empty())
          << to_string(layout) << " swa " << with_swa << ": "
          << describe(mismatches(kc.data(), want_k));
      EXPECT_TRUE(mismatches(vc.data(), want_v).empty())
          << to_string(layout) << " swa " << with_swa << ": "
          << describe(mismatches(vc.data(), want_v));
    }
}

// vLLM's cache for this mode is one tensor [NB, 2, BS, H, D + 4]: K and V interleaved per
// block, which is two caches with a doubled block stride.
TEST(ReshapeAndCacheFlashPerTokenHead, VllmInterleavedKvBlocks) {
  const std::int64_t T = 3, H = 2, D = 16, BS = 4, NB = 2, row = D + 4, half = BS * H * row;
  std::vector<std::uint16_t> key(T * H * D), value(T * H * D);
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint16_t>(0x4100 + 3 * i);
    value[i] = static_cast<std::uint16_t>(0x3A00 + 11 * i);
  }
  const std::vector<std::int64_t> slots = {6, 1, -1};
  std::vector<std::uint8_t> cache(NB * 2 * half, kCanaryByte);
  TokenHeadCacheProblem p{DType::f16,
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
                          Layout::nhd,
                          cache.data(),
                          cache.data() + half,
                          2 * half};
  reshape_and_cache_flash_per_token_head(p);
  std::vector<std::uint8_t> want(cache.size(), kCanaryByte);
  for (std::int64_t t = 0; t < 2; ++t) {
    const std::int64_t b = slots[t] / BS, o = slots[t] % BS;
    for (std::int64_t kv = 0; kv < 2; ++kv)
      for (std::int64_t h = 0; h < H; ++h) {
        const auto& src = kv == 0 ? key : value;
        const Bits x(src.begin() + (t * H + h) * D, src.begin() + (t * H + h + 1) * D);
        const auto r = oracle_token_head_row(DType::f16, x);
        std::copy(r.begin(), r.end(), want.begin() + ((b * 2 + kv) * BS + o) * H * row + h * row);
      }
  }
  const auto bad = mismatches(cache.data(), want);
  EXPECT_TRUE(bad.empty()) << describe(bad);
}

TEST(ReshapeAndCacheFlashPerTokenHead, BadInputThrows) {
  std::vector<std::uint16_t> key(6), value(6);
  std::vector<std::uint8_t> kc(64), vc(64);
  std::vector<std::int64_t> slots = {2};
  TokenHeadCacheProblem p{DType::f16,
                          1,
                          1,
                          6,
                          1,
                          2,
                          key.data(),
                          value.data(),
                          6,
                          6,
                          6,
                          6,
                          slots.data(),
                          nullptr,
                          0,
                          -1,
                          Layout::nhd,
                          kc.data(),
                          vc.data(),
                          10};
  EXPECT_THROW(reshape_and_cache_flash_per_token_head(p), std::invalid_argument);  // D = 6
  p.head_size = 4;
  p.block_stride = 8;
  EXPECT_THROW(reshape_and_cache_flash_per_token_head(p), std::out_of_range);  // slot 2 >= 2
  slots[0] = 1;
  EXPECT_NO_THROW(reshape_and_cache_flash_per_token_head(p));
  p.block_stride = 7;
  EXPECT_THROW(reshape_and_cache_flash_per_token_head(p), std::invalid_argument);
}

}  // namespace
}  // namespace kvbench::ref
