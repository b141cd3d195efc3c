#include "core/mismatch_report.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace kvbench {
namespace {

std::string rel(const char* what, std::int64_t n) {
  return std::string(what) + " (+" + std::to_string(n) + ")";
}

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

std::string locate_concat(const Case& c, const ConcatGeometry& g, std::int64_t index) {
  const std::int64_t j = index - g.guard_elems;
  if (j < 0) return rel("guard before k", index);
  if (j >= g.k_elems) return rel("guard after k", j - g.k_elems);
  const std::int64_t t = j / g.k_s0, r = j % g.k_s0;
  const std::int64_t h = r / g.k_s1, d = r % g.k_s1;
  const std::string tok = "t=" + std::to_string(t);
  if (h >= c.num_heads)
    return rel(("padding after k[" + tok + "]").c_str(), r - c.num_heads * g.k_s1);
  const std::string th = tok + ", h=" + std::to_string(h);
  const std::int64_t width = c.head_dim + c.rope_dim;
  if (d >= width) return rel(("padding after k[" + th + "]").c_str(), d - width);
  const std::string part =
      d < c.head_dim ? " (nope)" : " (rope " + std::to_string(d - c.head_dim) + ")";
  return "k[" + th + ", d=" + std::to_string(d) + part + "]";
}

CacheLocation locate_cache(const Case& c, const CacheGeometry& g, std::int64_t index) {
  CacheLocation l;
  const std::int64_t j = index - g.guard_elems;
  if (j < 0) {
    l.where = CacheLocation::Where::guard_before;
    l.rel = index;
    return l;
  }
  if (j >= g.cache_elems) {
    l.where = CacheLocation::Where::guard_after;
    l.rel = j - g.cache_elems;
    return l;
  }
  const std::int64_t H = c.num_heads, D = c.head_dim, BS = c.block_size;
  const std::int64_t dense_block = BS * H * D;
  for (const bool value : {false, true}) {
    const std::int64_t jj = j - (value ? g.value_cache_offset : 0);
    if (jj < 0) continue;
    const std::int64_t b = jj / g.block_stride, r = jj % g.block_stride;
    if (b >= g.num_blocks || r >= dense_block) continue;
    l.where = CacheLocation::Where::element;
    l.value_cache = value;
    l.block = b;
    l.dim = r % D;
    if (c.layout == Layout::nhd) {
      l.offset = r / (H * D);
      l.head = (r / D) % H;
    } else {
      l.head = r / (BS * D);
      l.offset = (r / D) % BS;
    }
    l.slot = b * BS + l.offset;
    return l;
  }
  l.where = CacheLocation::Where::padding;
  return l;
}

std::string to_string(const CacheLocation& l) {
  switch (l.where) {
    case CacheLocation::Where::guard_before:
      return rel("guard before the caches", l.rel);
    case CacheLocation::Where::guard_after:
      return rel("guard after the caches", l.rel);
    case CacheLocation::Where::padding:
      return "padding (outside any K/V element)";
    case CacheLocation::Where::element:
      break;
  }
  return std::string(l.value_cache ? "value_cache" : "key_cache") + "[block " +
         std::to_string(l.block) + ", offset " + std::to_string(l.offset) + ", head " +
         std::to_string(l.head) + ", dim " + std::to_string(l.dim) + "] (slot " +
         std::to_string(l.slot) + ")";
}

std::vector<std::int64_t> slot_owners(const SlotData& s, const CacheGeometry& g) {
  std::vector<std::int64_t> owner(static_cast<std::size_t>(g.num_slots), -1);
  const bool swa = !s.swa_table.empty();
  for (std::size_t t = 0; t < s.slot_mapping.size(); ++t) {
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (swa) {
      if (slot >= static_cast<std::int64_t>(s.swa_table.size())) continue;
      slot = s.swa_table[static_cast<std::size_t>(slot)];
      if (slot < 0) continue;
    }
    if (slot == g.skip_slot || slot >= g.num_slots) continue;
    owner[static_cast<std::size_t>(slot)] = static_cast<std::int64_t>(t);
  }
  return owner;
}

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
