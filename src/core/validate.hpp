// SPEC.md §2's bad-input rule for scales, shared by every operation that takes them. Pure. The
// rest of the checks, and the `inject` axis that corrupts generated inputs on purpose so
// rejection can be shown end to end, belong to each operation (src/ops/<op>/operation.hpp).
// Every check returns "" when the input is valid, else one line naming the problem; the runner
// turns it into a `rejected` row before any launch.
#pragma once

#include <string>
#include <vector>

namespace kvbench {

// Every scale positive and finite (zero, negative, NaN and infinite scales are rejected).
std::string check_scales(const std::vector<float>& k_scale, const std::vector<float>& v_scale);

}  // namespace kvbench
