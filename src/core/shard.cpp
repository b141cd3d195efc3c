#include "core/shard.hpp"

#include <stdexcept>

namespace kvbench {
namespace {

// A non-negative decimal integer that fills `text`, or throws naming `what`.
std::size_t whole_number(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9)
    throw std::invalid_argument(what + ": expected a non-negative integer, got '" + text + "'");
  return std::stoul(text);
}

}  // namespace

Shard parse_shard(const std::string& text, const std::function<const char*(const char*)>& getenv) {
  Shard s;
  if (text == "slurm") {
    const char* id = getenv("SLURM_ARRAY_TASK_ID");
    const char* count = getenv("SLURM_ARRAY_TASK_COUNT");
    if (!id || !count)
      throw std::invalid_argument(
          std::string("--shard slurm: ") +
          (!id ? "SLURM_ARRAY_TASK_ID" : "SLURM_ARRAY_TASK_COUNT") +
          " is not set (run it as a task of an array job: sbatch --array=0-N)");
    s.index = whole_number(id, "--shard slurm: SLURM_ARRAY_TASK_ID");
    s.count = whole_number(count, "--shard slurm: SLURM_ARRAY_TASK_COUNT");
    // --array=1-4 numbers the tasks from 1: shard I is the task's rank from the first.
    if (const char* min = getenv("SLURM_ARRAY_TASK_MIN")) {
      const std::size_t first = whole_number(min, "--shard slurm: SLURM_ARRAY_TASK_MIN");
      if (s.index >= first) s.index -= first;
    }
    if (s.count == 0 || s.index >= s.count)
      throw std::invalid_argument("--shard slurm: SLURM_ARRAY_TASK_ID " + std::to_string(s.index) +
                                  " is not below SLURM_ARRAY_TASK_COUNT " +
                                  std::to_string(s.count) + " (use --array=0-" +
                                  std::to_string(s.count ? s.count - 1 : 0) + ")");
    return s;
  }
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw std::invalid_argument("--shard: expected I/N or slurm, got '" + text + "'");
  s.index = whole_number(text.substr(0, slash), "--shard " + text);
  s.count = whole_number(text.substr(slash + 1), "--shard " + text);
  if (s.count == 0 || s.index >= s.count)
    throw std::invalid_argument("--shard " + text + ": expected 0 <= I < N");
  return s;
}

std::vector<std::size_t> shard_cases(const std::vector<std::size_t>& indices, const Shard& s) {
  std::vector<std::size_t> out;
  for (std::size_t i : indices)
    if (s.holds(i)) out.push_back(i);
  return out;
}

}  // namespace kvbench
