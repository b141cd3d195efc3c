// Mismatch reports a person can act on: each differing element named by its coordinates in the
// case's tensors (token, head, dim; or cache, block, offset, head, dim), or as padding / guard
// bytes that no element owns, with expected and actual values in decimal and hex. Pure.
//
// Indices count elements from the start of the runner's output buffer, whose guard of canary
// elements comes first (ConcatGeometry::guard_elems, CacheGeometry::guard_elems).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/compare.hpp"
#include "core/inputs.hpp"

namespace kvbench {

// "k[t=3, h=5, d=130 (rope 2)]", "padding after k[t=3, h=5] (+2)", "guard after k (+7)".
std::string locate_concat(const Case& c, const ConcatGeometry& g, std::int64_t index);

struct CacheLocation {
  enum class Where { element, padding, guard_before, guard_after };
  Where where = Where::padding;
  bool value_cache = false;  // element: V (else K)
  std::int64_t block = 0, offset = 0, head = 0, dim = 0;
  std::int64_t slot = 0;  // element: block * BS + offset
  std::int64_t rel = 0;   // guard_*: elements from the guard's start
};
CacheLocation locate_cache(const Case& c, const CacheGeometry& g, std::int64_t index);
// "value_cache[block 7, offset 3, head 1, dim 64] (slot 115)", "padding (outside any K/V
// element)", "guard before the caches (+3)".
std::string to_string(const CacheLocation& l);

// The token that writes each physical slot, or -1: what a cache mismatch is attributed to.
std::vector<std::int64_t> slot_owners(const SlotData& s, const CacheGeometry& g);

// Raw bits of one element as "1.5 (0x3e00)"; NaN and infinities by name.
std::string format_value(DType t, std::uint64_t bits);

// "3 of 4096 elements differ; first: k[t=0, h=1, d=2]: expected 1.5 (0x3fc0), got 0 (0x0000);
// ...", one entry per element of r.first, located by `where`.
std::string report_mismatches(const CompareResult& r, std::int64_t elems, DType t,
                              const std::function<std::string(std::int64_t)>& where);

}  // namespace kvbench
