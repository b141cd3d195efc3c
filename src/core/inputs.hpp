// Seeded host-side inputs for a case: tensor values and slot mappings. Pure and deterministic:
// the same (case, seed) always gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace kvbench {

// Fills `count` elements of `type` at `dst` with random finite non-zero values: random sign and
// mantissa, exponent uniform in [-12, 10] (so fp8 outputs see subnormals, rounding and
// saturation). Bits are drawn directly in the target format: no conversion is involved.
void fill_random(DType type, void* dst, std::int64_t count, std::uint64_t seed);

struct SlotData {
  std::vector<std::int64_t> slot_mapping;  // [T]
  std::vector<std::int64_t> swa_table;     // [logical_slots] when SWA is on, else empty
  std::int64_t swa_lookups = 0;            // tokens that read swa_table
  std::int64_t written_tokens = 0;         // tokens that write K and V
};

// Slots following c.slots (see SlotPattern). With SWA, slot_mapping holds logical slots and the
// table maps each used one to a distinct physical slot (every 16th used entry is -1: skipped).
SlotData make_slots(const Case& c, const CacheGeometry& g, std::uint64_t seed);

// SPEC.md §2's bad-input rules for slots. Returns "" when valid, else a one-line reason naming
// the first offending token (slot out of range, SWA index out of range, duplicate physical slot).
std::string check_slots(const SlotData& s, const CacheGeometry& g);

// SplitMix64: small, fast, and good enough for test data.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace kvbench
