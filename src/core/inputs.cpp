#include "core/inputs.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

namespace kvbench {
namespace {

constexpr int kMinExp = -12, kMaxExp = 10;

// Random finite non-zero value as raw bits of a float format with `mant` mantissa bits and
// exponent bias `bias`, stored in `bits` total bits.
std::uint32_t random_bits(std::uint64_t r, int mant, int bias, int bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(r >> 63) & 1u;
  const int e = kMinExp + static_cast<int>((r >> 40) % (kMaxExp - kMinExp + 1));
  const std::uint32_t m = static_cast<std::uint32_t>(r) & ((1u << mant) - 1u);
  return (sign << (bits - 1)) | (static_cast<std::uint32_t>(e + bias) << mant) | m;
}

void fill_range(DType type, void* dst, std::int64_t begin, std::int64_t end, std::uint64_t seed) {
  // One independent stream per 64K-element chunk, so threads can fill chunks in any order.
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(begin) * 0xD1B54A32D192ED03ull);
  for (std::int64_t i = begin; i < end; ++i) {
    const std::uint64_t r = splitmix64(state);
    switch (type) {
      case DType::f32: {
        const std::uint32_t b = random_bits(r, 23, 127, 32);
        std::memcpy(static_cast<char*>(dst) + 4 * i, &b, 4);
        break;
      }
      case DType::bf16: {
        const auto b = static_cast<std::uint16_t>(random_bits(r, 7, 127, 16));
        std::memcpy(static_cast<char*>(dst) + 2 * i, &b, 2);
        break;
      }
      case DType::f16: {
        const auto b = static_cast<std::uint16_t>(random_bits(r, 10, 15, 16));
        std::memcpy(static_cast<char*>(dst) + 2 * i, &b, 2);
        break;
      }
      case DType::fp8_e4m3:
      case DType::fp8_e5m2: {
        // Inputs are never fp8 (SPEC.md); random non-NaN, non-zero bytes suffice for canaries.
        auto b = static_cast<std::uint8_t>(r);
        if ((b & 0x7F) == 0 || (b & 0x7F) == 0x7F) b = 0x3C;
        static_cast<std::uint8_t*>(dst)[i] = b;
        break;
      }
    }
  }
}

}  // namespace

void fill_random(DType type, void* dst, std::int64_t count, std::uint64_t seed) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
  const auto workers = static_cast<std::int64_t>(
      std::min<std::int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency())));
  auto work = [&](std::int64_t w) {
    for (std::int64_t ch = w; ch < chunks; ch += workers)
      fill_range(type, dst, ch * kChunk, std::min(count, (ch + 1) * kChunk), seed);
  };
  if (workers <= 1) {
    if (chunks > 0) work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t w = 0; w < workers; ++w) pool.emplace_back(work, w);
  for (auto& t : pool) t.join();
}

SlotData make_slots(const Case& c, const CacheGeometry& g, std::uint64_t seed) {
  std::uint64_t state = seed ^ 0x5107'5107'5107'5107ull;
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(n));
  };
  const std::int64_t T = c.num_tokens;
  const bool skip = c.slots == SlotPattern::skip;
  const std::int64_t first = skip ? 1 : 0;  // slot 0 is the skip slot: never drawn as a target

  // Distinct draws from [first, range): a partial Fisher-Yates shuffle.
  auto distinct = [&](std::int64_t range, std::int64_t n) {
    std::vector<std::int64_t> pool(static_cast<std::size_t>(range - first));
    std::iota(pool.begin(), pool.end(), first);
    for (std::int64_t i = 0; i < n; ++i) std::swap(pool[i], pool[i + below(range - first - i)]);
    pool.resize(static_cast<std::size_t>(n));
    return pool;
  };

  SlotData s;
  const std::int64_t range = c.swa ? g.logical_slots : g.num_slots;
  if (c.slots == SlotPattern::contiguous) {
    s.slot_mapping.resize(static_cast<std::size_t>(T));
    const std::int64_t start = std::min<std::int64_t>(3, range - T);  // starts mid-block
    std::iota(s.slot_mapping.begin(), s.slot_mapping.end(), start);
  } else {
    s.slot_mapping = distinct(range, T);
  }
  for (std::int64_t t = 7; t < T; t += 8) {
    if (c.slots == SlotPattern::padded) s.slot_mapping[t] = -1;
    if (skip && !c.swa) s.slot_mapping[t] = g.skip_slot;
  }

  if (c.swa) {
    s.swa_table.assign(static_cast<std::size_t>(g.logical_slots), -1);
    std::int64_t used = 0;
    for (auto v : s.slot_mapping) used += v >= 0;
    const std::vector<std::int64_t> phys = distinct(g.num_slots, used);
    std::int64_t k = 0;
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t logical = s.slot_mapping[t];
      if (logical < 0) continue;
      const std::int64_t p = phys[k];
      if (skip && t % 8 == 7) {
        s.swa_table[logical] = g.skip_slot;  // SGLang maps unused SWA slots to its reserved 0
      } else if (k % 16 != 15) {
        s.swa_table[logical] = p;
      }  // else stays -1: evicted from the window, skipped
      ++k;
    }
  }

  for (std::int64_t t = 0; t < T; ++t) {
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (c.swa) {
      ++s.swa_lookups;
      slot = s.swa_table[slot];
      if (slot < 0) continue;
    }
    if (slot != g.skip_slot) ++s.written_tokens;
  }
  return s;
}

std::string check_slots(const SlotData& s, const CacheGeometry& g) {
  const bool swa = !s.swa_table.empty();
  const auto S = static_cast<std::int64_t>(s.swa_table.size());
  std::vector<std::int64_t> owner(static_cast<std::size_t>(g.num_slots), -1);
  for (std::size_t t = 0; t < s.slot_mapping.size(); ++t) {
    const std::string tok = "token " + std::to_string(t) + ": ";
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (swa) {
      if (slot >= S)
        return tok + "SWA index " + std::to_string(slot) + " >= table size " + std::to_string(S);
      slot = s.swa_table[static_cast<std::size_t>(slot)];
      if (slot < 0) continue;
    }
    if (slot >= g.num_slots)
      return tok + "slot " + std::to_string(slot) + " >= NB*BS = " + std::to_string(g.num_slots);
    if (slot == g.skip_slot) continue;
    auto& o = owner[static_cast<std::size_t>(slot)];
    if (o >= 0)
      return tok + "physical slot " + std::to_string(slot) + " already written by token " +
             std::to_string(o);
    o = static_cast<std::int64_t>(t);
  }
  return "";
}

}  // namespace kvbench
