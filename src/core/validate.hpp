// SPEC.md §2's bad-input rules that check_slots (inputs.hpp) does not cover, and the `inject`
// axis that corrupts generated inputs on purpose so rejection can be shown end to end. Pure.
// Every check returns "" when the input is valid, else one line naming the problem; the runner
// turns it into a `rejected` row before any launch.
#pragma once

#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/inputs.hpp"

namespace kvbench {

// Every stride at least the dense extent of what it spans: a head stride >= the head's width,
// a token stride >= (H - 1) * head stride + width, a block stride >= the dense block, and the
// K and V caches disjoint.
std::string check_concat_strides(const Case& c, const ConcatGeometry& g);
std::string check_cache_strides(const Case& c, const CacheGeometry& g);

// Every scale positive and finite (zero, negative, NaN and infinite scales are rejected).
std::string check_scales(const std::vector<float>& k_scale, const std::vector<float>& v_scale);

// Apply c.inject to freshly generated inputs. Return "" when applied (or Inject::none), else
// why this injection does not apply to the case (the runner reports it as not_supported).
std::string inject_concat(const Case& c, ConcatGeometry& g);
std::string inject_cache(const Case& c, CacheGeometry& g, SlotData& s, std::vector<float>& k_scale);

}  // namespace kvbench
