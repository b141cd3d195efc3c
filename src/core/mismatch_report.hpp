// Mismatch reports a person can act on: each differing element named by where it is, with
// expected and actual values in decimal and hex. Pure. Where an element is (its coordinates in
// the case's tensors, or padding / guard bytes that no element owns) is the operation's to say
// (locate_concat, locate_cache in src/ops/<op>/operation.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/types.hpp"

namespace kvbench {

// Raw bits of one element as "1.5 (0x3e00)"; NaN and infinities by name.
std::string format_value(DType t, std::uint64_t bits);

// "3 of 4096 elements differ; first: k[t=0, h=1, d=2]: expected 1.5 (0x3fc0), got 0 (0x0000);
// ...", one entry per element of r.first, located by `where`.
std::string report_mismatches(const CompareResult& r, std::int64_t elems, DType t,
                              const std::function<std::string(std::int64_t)>& where);

}  // namespace kvbench
