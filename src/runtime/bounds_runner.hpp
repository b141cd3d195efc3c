// `kvbench bounds`: for each small case of a result CSV, the fastest of several plain ways to
// write its output bytes, and to read its input bytes and write its output bytes, timed with the
// same engine and settings as `kvbench run`. A kernel that must write W bytes cannot beat the
// best way found to write W bytes by much; how far each case is from both is the question.
#pragma once

#include <cstdint>
#include <vector>

#include "core/bounds.hpp"
#include "core/sweep.hpp"

namespace kvbench {

// One row per bound_cases() entry; equal (read, write) splits are timed once. `progress` is
// called after each distinct split with (done, total). Throws CudaError.
std::vector<BoundRow> measure_bounds(const ResultTable& results, std::int64_t max_tokens,
                                     const RunSettings& settings,
                                     void (*progress)(std::size_t, std::size_t) = nullptr);

}  // namespace kvbench
