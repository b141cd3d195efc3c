#include "core/mismatch_report.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace kvbench {
namespace {

// A minifloat (fp16, fp8) with `man` mantissa bits and exponent `bias`; e4m3 has no
// infinities and a single NaN magnitude (0x7F).
double decode_minifloat(std::uint64_t bits, int exp_bits, int man, int bias, bool ieee_special) {
  const int total = 1 + exp_bits + man;
  const bool neg = (bits >> (total - 1)) & 1u;
  const int e = static_cast<int>((bits >> man) & ((1u << exp_bits) - 1u));
  const auto m = static_cast<double>(bits & ((1u << man) - 1u));
  const int e_max = (1 << exp_bits) - 1;
  double v;
  if (ieee_special && e == e_max) {
    v = m == 0 ? INFINITY : NAN;
  } else if (!ieee_special && e == e_max && m == (1u << man) - 1u) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - bias - man);
  } else {
    v = std::ldexp(m + (1u << man), e - bias - man);
  }
  return neg ? -v : v;
}

}  // namespace

std::string format_value(DType t, std::uint64_t bits) {
  double v = 0;
  switch (t) {
    case DType::f32: {
      const auto b = static_cast<std::uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, sizeof f);
      v = f;
      break;
    }
    case DType::bf16: {
      const auto b = static_cast<std::uint32_t>(bits << 16);
      float f;
      std::memcpy(&f, &b, sizeof f);
      v = f;
      break;
    }
    case DType::f16:
      v = decode_minifloat(bits, 5, 10, 15, true);
      break;
    case DType::fp8_e4m3:
      v = decode_minifloat(bits, 4, 3, 7, false);
      break;
    case DType::fp8_e5m2:
      v = decode_minifloat(bits, 5, 2, 15, true);
      break;
  }
  char buf[64];
  const int width = static_cast<int>(2 * size_of(t));
  if (std::isnan(v))
    std::snprintf(buf, sizeof buf, "nan (0x%0*llx)", width, static_cast<unsigned long long>(bits));
  else
    std::snprintf(buf, sizeof buf, "%.9g (0x%0*llx)", v, width,
                  static_cast<unsigned long long>(bits));
  return buf;
}

std::string report_mismatches(const CompareResult& r, std::int64_t elems, DType t,
                              const std::function<std::string(std::int64_t)>& where) {
  std::string out = std::to_string(r.count) + " of " + std::to_string(elems) + " elements differ";
  for (std::size_t i = 0; i < r.first.size(); ++i) {
    const Mismatch& m = r.first[i];
    out += (i ? "; " : "; first: ") + where(m.index) + ": expected " + format_value(t, m.expected) +
           ", got " + format_value(t, m.actual);
  }
  return out;
}

}  // namespace kvbench
