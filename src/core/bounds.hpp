// `kvbench bounds`: the bytes of each small case of a result CSV, split into what the kernel
// reads and what it writes (SPEC.md §4), so that the fastest plain write and the fastest plain
// move of the same bytes can be timed beside it. What they show: docs/performance.md, "Floors".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result_csv.hpp"

namespace kvbench {

struct BoundCase {
  std::size_t row = 0;  // index into ResultTable::rows
  std::int64_t read_bytes = 0, write_bytes = 0;
};

// Timed rows (status passed, median set) with num_tokens <= max_tokens, in file order. The
// written bytes are the output elements (concat: T*H*(NOPE+ROPE); cache write: written tokens
// * 2*H*D) times the output dtype's size; the rest of `bytes` is read. Throws ResultCsvError
// naming FILE:LINE for a selected row without bytes or written_tokens, or whose split is
// negative.
std::vector<BoundCase> bound_cases(const ResultTable& t, std::int64_t max_tokens);

// One output row: the case's axes and time from the result CSV, its split, and the floors.
struct BoundRow {
  std::vector<std::string> axes;
  double median_us = 0;
  std::int64_t bytes = 0, read_bytes = 0, write_bytes = 0;
  double write_floor_us = 0, move_floor_us = 0;
  double launch_floor_us = 0, pdl_launch_floor_us = 0;  // empty kernel, without and with PDL
  std::string write_floor_method, move_floor_method;
  std::string device, device_uuid, git_sha;  // where and with what the floors were timed
};

std::string bounds_header();
std::string bounds_line(const BoundRow& r);

}  // namespace kvbench
