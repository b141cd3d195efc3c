// `kvbench bounds`: the bytes of each case of a result CSV, split into what the kernel reads and
// what it writes (SPEC.md §4), so that the fastest plain kernels moving the same bytes can be
// timed beside it: a contiguous move, a write alone (T <= 128), and for the cache write a scatter
// of the same rows to the same slots. What they show: docs/performance.md, "Floors".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/result_csv.hpp"

namespace kvbench {

struct BoundCase {
  std::size_t row = 0;  // index into ResultTable::rows
  std::int64_t read_bytes = 0, write_bytes = 0;
  Case c;               // rebuilt from the row's axes (its inputs and slots follow from the seed)
  int buffer_sets = 1;  // the row's: the floors are timed over as many sets
  // The row's context and timer (back_to_back and events for rows that do not say): the floors
  // are timed in the same context by the same timer.
  Context context = Context::back_to_back;
  Timer timer = Timer::events;
};

// The case a result row names. Throws ResultCsvError naming FILE:LINE for a value no case has.
Case case_of(const ResultTable& t, const ResultRow& r);

// Timed rows (status passed, median set) with num_tokens <= max_tokens and, when `variant` is
// not empty, of that variant, in file order. The
// written bytes are the output elements (each operation's Operation::output_elems; concat:
// T*H*(NOPE+ROPE), cache write: written tokens * 2*H*D) times the output dtype's size; the rest of
// `bytes` is read. Throws ResultCsvError naming FILE:LINE for a selected row without bytes or
// written_tokens, or whose split is negative, and naming --variant when no row has that variant (a
// misspelt name goes no further).
std::vector<BoundCase> bound_cases(const ResultTable& t, std::int64_t max_tokens,
                                   const std::string& variant = "");

// The floors are timed on this process's GPU: each selected row must have run on the same GPU
// model (`device`, the name kvbench records), or its median and the floors beside it would be of
// two models. Throws ResultCsvError naming FILE:LINE, both models and what to do.
void check_bound_device(const ResultTable& t, const std::vector<BoundCase>& cases,
                        const std::string& device);

// Below this many tokens the write alone is timed too (a write floor for the launch-bound cases).
inline constexpr std::int64_t kWriteFloorMaxTokens = 128;

// One output row: the case's axes and time from the result CSV, its split, and the floors.
struct BoundRow {
  std::vector<std::string> axes;
  double median_us = 0;
  std::int64_t bytes = 0, read_bytes = 0, write_bytes = 0;
  double write_floor_us = 0, move_floor_us = 0;         // write: 0 when not timed (T > 128)
  double launch_floor_us = 0, pdl_launch_floor_us = 0;  // empty kernel, without and with PDL
  std::string write_floor_method, move_floor_method;
  int buffer_sets = 1;
  double scatter_floor_us = 0;  // cache write: the same rows to the same slots; 0 for concat
  std::string scatter_floor_method;
  // The lowest mean of the samples among the kernels tried for the move and the scatter (0: not
  // timed): what plain_move_mean_of() takes.
  double move_floor_mean_us = 0, scatter_floor_mean_us = 0;
  std::string device, device_uuid, git_sha;  // where and with what the floors were timed
  Context context = Context::back_to_back;   // the row's, in which the floors were timed
  Timer timer = Timer::events;
};

// The case's plain-move reference (`plain_move_us`; `bound_us` in CSVs of earlier builds):
// the fastest plain kernel timed that moves the case's bytes, the contiguous move or, for the
// cache write, the scatter of its rows to its slots (concat's output is K, contiguous per token).
// Kernels can beat it: a reference, not a lower bound. It / median_us is the row's
// pct_of_plain_move.
double bound_of(const BoundRow& r);

// The plain-move reference by the mean of the samples (`plain_move_mean_us`): the lower of the
// move's and the scatter's lowest means; 0 when neither was timed. The mean resolves below the
// timer's step (docs/measurement.md, "Resolution"), so a row's mean_us minus this says how far
// a kernel is from a plain move where the medians differ by whole steps.
double plain_move_mean_of(const BoundRow& r);

std::string bounds_header();
std::string bounds_line(const BoundRow& r);

}  // namespace kvbench
