// Splitting a sweep over hosts: shard I of N holds the cases whose index in `kvbench list` is
// I modulo N. Deterministic, disjoint, and the N shards cover the sweep. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kvbench {

// The most shards a sweep may be split into (N of --shard I/N, SLURM_ARRAY_TASK_COUNT): more
// than Slurm's largest array, and as many as a default config has cases ten times over.
inline constexpr std::size_t kMaxShardCount = 1000000;

struct Shard {
  std::size_t index = 0, count = 1;  // count 1: the whole sweep
  bool holds(std::size_t case_index) const { return case_index % count == index; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "I/N" (0 <= I < N <= kMaxShardCount), or "slurm": the task's rank in its array job,
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP, of
// SLURM_ARRAY_TASK_COUNT, read through `getenv` (MIN 0 and STEP 1 when unset). A task off the
// array's step, below its first task, or of an array that is not one range with one step
// (--array=1,3,8) is refused. Throws std::invalid_argument naming --shard and the value, or the
// variable.
Shard parse_shard(const std::string& text, const std::function<const char*(const char*)>& getenv);

// --devices' list, "0,2,5": device numbers of up to four digits, every item checked before any
// is used. Throws std::invalid_argument naming --devices and the whole value.
std::vector<std::size_t> parse_device_list(const std::string& spec);

// The case indices of `indices` that shard `s` holds, in order.
std::vector<std::size_t> shard_cases(const std::vector<std::size_t>& indices, const Shard& s);

// The shards of `count` not among `present` (indices below `count`, any order, repeats allowed)
// as ranges, "1, 3-7, 9", at most `max_ranges` of them and then ", and K more ranges". Costs
// the size of `present`, not `count`.
std::string missing_shards_text(std::vector<std::size_t> present, std::size_t count,
                                std::size_t max_ranges = 10);

}  // namespace kvbench
