// concat_and_cast_mha_k on the host, the parts that need no GPU and no kernel: its YAML axes
// and defaults, variants, geometry and bytes, input checks and injections, and where a
// mismatching output element is (mismatch reports). Its launch arguments and plan: launch.hpp;
// its run stages: stages.cpp; its kernels: kernels/concat_mha_k/.
//
// k_nope [T, H, NOPE] and k_rope [T, 1, ROPE] -> k [T, H, NOPE+ROPE] (SPEC.md §1).
#pragma once

#include <cstdint>
#include <string>

#include "core/operation.hpp"
#include "ops/concat_mha_k/params.hpp"

namespace kvbench {

const Operation& concat_operation();

// Geometry, in elements. k_nope [T, H, NOPE], k_rope [T, 1, ROPE], k [T, H, NOPE+ROPE].
struct ConcatGeometry {
  std::int64_t nope_s0, nope_s1;
  std::int64_t rope_s0;
  std::int64_t k_s0, k_s1;
  std::int64_t nope_elems, rope_elems, k_elems;  // allocation sizes
  // Canary elements before and after k in the runner's output buffer: a write one token out of
  // range lands there and is reported, instead of corrupting other memory.
  std::int64_t guard_elems;
};
ConcatGeometry concat_geometry(const Case& c);

// Logical bytes moved (SPEC.md §4): k_nope and k_rope read, k written. Throws SizeOverflow
// (core/checked.hpp) when a size does not fit 64 bits.
std::int64_t concat_bytes(const Case& c);

// Every stride at least the dense extent of what it spans: a head stride >= the head's width,
// a token stride >= (H - 1) * head stride + width. "" when valid.
std::string check_concat_strides(const Case& c, const ConcatGeometry& g);

// Applies c.inject to the geometry. "" when applied (or Inject::none), else why this injection
// does not apply (the runner reports it as not_supported).
std::string inject_concat(const Case& c, ConcatGeometry& g);

// Output element `index` of the runner's buffer (its guard first) by its coordinates:
// "k[t=3, h=5, d=130 (rope 2)]", "padding after k[t=3, h=5] (+2)", "guard after k (+7)".
std::string locate_concat(const Case& c, const ConcatGeometry& g, std::int64_t index);

}  // namespace kvbench
