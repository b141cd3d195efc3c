// `kvbench bounds`: for each case of a result CSV, the fastest of several plain kernels that move
// its bytes, timed with the same engine and settings as `kvbench run` and over as many buffer
// sets as the case had (its row's buffer_sets): a contiguous move of its input bytes to its
// output bytes; for an operation with a ScatterShape (core/operation.hpp; the cache write) a
// scatter of the same rows to the same places (its bound); for T <= 128 the write of its output
// bytes alone. A kernel cannot beat the best plain way found to
// move its bytes to its places by much; how far each case is from it is the question.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/bounds.hpp"
#include "core/sweep.hpp"

namespace kvbench {

// One row per bound_cases() entry, in file order, handed to `emit` as soon as its floors are
// timed; returns how many. Equal (read, write, sets) splits are timed once, and a case's variants
// share its scatter. settings.seed must be the run's: it gives the case's slots. `progress` is
// called after each distinct measurement with (done, total). Throws CudaError.
std::size_t measure_bounds(const ResultTable& results, std::int64_t max_tokens,
                           const RunSettings& settings, const std::string& variant,
                           const std::function<void(BoundRow)>& emit,
                           void (*progress)(std::size_t, std::size_t) = nullptr);

}  // namespace kvbench
