// Splitting a sweep over hosts: shard I of N holds the cases whose index in `kvbench list` is
// I modulo N. Deterministic, disjoint, and the N shards cover the sweep. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kvbench {

struct Shard {
  std::size_t index = 0, count = 1;  // count 1: the whole sweep
  bool holds(std::size_t case_index) const { return case_index % count == index; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "I/N" (0 <= I < N), or "slurm": SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT read through
// `getenv`. Throws std::invalid_argument naming --shard and the value, or the unset variable.
Shard parse_shard(const std::string& text, const std::function<const char*(const char*)>& getenv);

// The case indices of `indices` that shard `s` holds, in order.
std::vector<std::size_t> shard_cases(const std::vector<std::size_t>& indices, const Shard& s);

}  // namespace kvbench
