// Seeded host-side tensor values. Pure and deterministic: the same seed always gives the same
// bytes. (Each operation's other inputs, such as the cache write's slots, sit in its folder.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace kvbench {

// Fills `count` elements of `type` at `dst` with random finite non-zero values: random sign and
// mantissa, exponent uniform in [-12, 10] (so fp8 outputs see subnormals, rounding and
// saturation). Bits are drawn directly in the target format: no conversion is involved.
void fill_random(DType type, void* dst, std::int64_t count, std::uint64_t seed);

// `scale` as a scale injection leaves it (Inject::zero_scale, negative_scale, nan_scale,
// inf_scale); any other injection leaves it unchanged.
float injected_scale(Inject inject, float scale);

// SplitMix64: small, fast, and good enough for test data.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace kvbench
