// Host fp8 scalars for the CPU reference (SPEC.md §3). Encoding from fp32 is round to nearest
// even with saturation to the largest finite value, as the hardware `cvt.rn.satfinite` does; the
// rounding is done on the fp32 bits so there is exactly one rounding, subnormals included.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kvbench::ref {
namespace fp8_detail {

// kExpBits / kManBits / kBias describe the format; kMaxCode is the largest finite magnitude.
template <int kExpBits, int kManBits, int kBias, std::uint8_t kMaxCode>
struct Format {
  // The hardware writes 0x7F for every NaN input, whatever its sign or payload.
  static constexpr std::uint8_t kNaN = 0x7F;

  static std::uint8_t encode(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
    const std::uint32_t mag = bits & 0x7FFFFFFFu;
    if (mag > 0x7F800000u) return kNaN;
    if (mag == 0x7F800000u) return sign | kMaxCode;

    const int exp = static_cast<int>(mag >> 23) - 127;
    std::uint32_t code;
    std::uint32_t rest;  // the bits shifted out
    int shift;
    if (exp >= 1 - kBias) {
      // Normal in the target: rebias the exponent and drop the low mantissa bits; a carry out of
      // the mantissa correctly bumps the exponent.
      shift = 23 - kManBits;
      const std::uint32_t kept = (mag & 0x7FFFFFu) >> shift;
      code = (static_cast<std::uint32_t>(exp + kBias) << kManBits) | kept;
      rest = mag & ((1u << shift) - 1u);
    } else {
      // Subnormal in the target: count units of 2^(1 - bias - man) in the full significand. fp32
      // subnormals are far below half a unit, so they only need the zero path below.
      if (exp == -127) return sign;
      shift = (1 - kBias - kManBits) + 23 - exp;
      if (shift > 25) return sign;  // below half the smallest subnormal
      const std::uint32_t sig = (mag & 0x7FFFFFu) | 0x800000u;
      code = sig >> shift;
      rest = sig & ((1u << shift) - 1u);
    }
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (code & 1u))) ++code;
    if (code > kMaxCode) code = kMaxCode;
    return sign | static_cast<std::uint8_t>(code);
  }

  static float decode(std::uint8_t byte) {
    const bool negative = byte & 0x80u;
    const int exp_field = (byte >> kManBits) & ((1 << kExpBits) - 1);
    const int man = byte & ((1 << kManBits) - 1);
    float mag;
    if (is_nan(byte)) {
      return std::numeric_limits<float>::quiet_NaN();
    } else if (kExpBits == 5 && exp_field == 31) {
      mag = std::numeric_limits<float>::infinity();  // e5m2 keeps IEEE infinities
    } else if (exp_field == 0) {
      mag = std::ldexp(static_cast<float>(man), 1 - kBias - kManBits);
    } else {
      mag = std::ldexp(static_cast<float>(man + (1 << kManBits)), exp_field - kBias - kManBits);
    }
    return negative ? -mag : mag;
  }

  static bool is_nan(std::uint8_t byte) {
    const std::uint8_t mag = byte & 0x7Fu;
    if (kExpBits == 4) return mag == 0x7F;  // e4m3fn: the only NaN pattern, no infinities
    return mag > 0x7C;
  }
};

}  // namespace fp8_detail

using E4M3Format = fp8_detail::Format<4, 3, 7, 0x7E>;   // max 448
using E5M2Format = fp8_detail::Format<5, 2, 15, 0x7B>;  // max 57344

// A trivially copyable one-byte scalar of `Format`, so arrays of them alias the raw cache bytes.
template <class Format>
struct fp8 {
  std::uint8_t bits;
  fp8() = default;
  explicit fp8(float x) : bits(Format::encode(x)) {}
  static fp8 from_bits(std::uint8_t b) {
    fp8 v;
    v.bits = b;
    return v;
  }
  explicit operator float() const { return Format::decode(bits); }
};

using fp8_e4m3 = fp8<E4M3Format>;
using fp8_e5m2 = fp8<E5M2Format>;

static_assert(sizeof(fp8_e4m3) == 1 && sizeof(fp8_e5m2) == 1, "fp8 scalars must be one byte");

}  // namespace kvbench::ref
