#include "core/shard.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvbench {
namespace {

// A non-negative decimal integer that fills `text`, or throws naming `what`.
std::size_t whole_number(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(what + ": expected a non-negative integer, got '" + text + "'");
  // Leading zeros are no size: "0000000001" is 1.
  if (text.size() - std::min(text.find_first_not_of('0'), text.size()) > 9)
    throw std::invalid_argument(what + ": '" + text + "' is more than 999999999");
  return std::stoul(text);
}

void check_count(std::size_t count, const std::string& what) {
  if (count > kMaxShardCount)
    throw std::invalid_argument(what + ": " + std::to_string(count) + " shards, more than " +
                                std::to_string(kMaxShardCount));
}

Shard slurm_shard(const std::function<const char*(const char*)>& getenv) {
  const char* id = getenv("SLURM_ARRAY_TASK_ID");
  const char* count = getenv("SLURM_ARRAY_TASK_COUNT");
  if (!id || !count)
    throw std::invalid_argument(
        std::string("--shard slurm: ") + (!id ? "SLURM_ARRAY_TASK_ID" : "SLURM_ARRAY_TASK_COUNT") +
        " is not set (run it as a task of an array job: sbatch --array=0-N)");
  const std::string at = "--shard slurm: ";
  const std::size_t task = whole_number(id, at + "SLURM_ARRAY_TASK_ID");
  Shard s;
  s.count = whole_number(count, at + "SLURM_ARRAY_TASK_COUNT");
  check_count(s.count, at + "SLURM_ARRAY_TASK_COUNT");
  const char* min_text = getenv("SLURM_ARRAY_TASK_MIN");
  const char* step_text = getenv("SLURM_ARRAY_TASK_STEP");
  const char* max_text = getenv("SLURM_ARRAY_TASK_MAX");
  const std::size_t first = min_text ? whole_number(min_text, at + "SLURM_ARRAY_TASK_MIN") : 0;
  const std::size_t step = step_text ? whole_number(step_text, at + "SLURM_ARRAY_TASK_STEP") : 1;
  if (step == 0) throw std::invalid_argument(at + "SLURM_ARRAY_TASK_STEP is 0");
  if (task < first)
    throw std::invalid_argument(at + "SLURM_ARRAY_TASK_ID " + std::to_string(task) +
                                " is below SLURM_ARRAY_TASK_MIN " + std::to_string(first));
  if ((task - first) % step != 0)
    throw std::invalid_argument(at + "SLURM_ARRAY_TASK_ID " + std::to_string(task) +
                                " is not SLURM_ARRAY_TASK_MIN " + std::to_string(first) +
                                " plus a multiple of SLURM_ARRAY_TASK_STEP " +
                                std::to_string(step));
  // One range with one step has (MAX - MIN) / STEP + 1 tasks; a list (--array=1,3,8) does not.
  if (max_text) {
    const std::size_t last = whole_number(max_text, at + "SLURM_ARRAY_TASK_MAX");
    if (last < first || (last - first) % step != 0 || (last - first) / step + 1 != s.count)
      throw std::invalid_argument(
          at + "the array is not one range with one step (SLURM_ARRAY_TASK_MIN " +
          std::to_string(first) + ", SLURM_ARRAY_TASK_MAX " + std::to_string(last) +
          ", SLURM_ARRAY_TASK_STEP " + std::to_string(step) + ", SLURM_ARRAY_TASK_COUNT " +
          std::to_string(s.count) + "); use --array=A-B or A-B:STEP");
  }
  s.index = (task - first) / step;
  if (s.count == 0 || s.index >= s.count)
    throw std::invalid_argument(
        at + "SLURM_ARRAY_TASK_ID " + std::to_string(task) + " is task " + std::to_string(s.index) +
        " of the array, not below SLURM_ARRAY_TASK_COUNT " + std::to_string(s.count));
  return s;
}

}  // namespace

Shard parse_shard(const std::string& text, const std::function<const char*(const char*)>& getenv) {
  if (text == "slurm") return slurm_shard(getenv);
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw std::invalid_argument("--shard: expected I/N or slurm, got '" + text + "'");
  Shard s;
  s.index = whole_number(text.substr(0, slash), "--shard " + text);
  s.count = whole_number(text.substr(slash + 1), "--shard " + text);
  check_count(s.count, "--shard " + text);
  if (s.count == 0 || s.index >= s.count)
    throw std::invalid_argument("--shard " + text + ": expected 0 <= I < N");
  return s;
}

std::vector<std::size_t> parse_device_list(const std::string& spec) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = spec.find(',', start);
    const std::string item =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty() || item.size() > 4 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("--devices: expected all or device numbers like 0,2,5, got '" +
                                  spec + "'");
    out.push_back(std::stoul(item));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::vector<std::size_t> shard_cases(const std::vector<std::size_t>& indices, const Shard& s) {
  std::vector<std::size_t> out;
  for (std::size_t i : indices)
    if (s.holds(i)) out.push_back(i);
  return out;
}

std::string missing_shards_text(std::vector<std::size_t> present, std::size_t count,
                                std::size_t max_ranges) {
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  present.push_back(count);  // the end: the gap before it is the last
  std::string out;
  std::size_t ranges = 0, next = 0;  // the first shard not yet accounted for
  for (std::size_t p : present) {
    if (p > count) break;
    if (p > next) {
      if (ranges++ < max_ranges)
        out += (out.empty() ? "" : ", ") + std::to_string(next) +
               (p - 1 > next ? "-" + std::to_string(p - 1) : "");
    }
    next = p + 1;
  }
  if (ranges > max_ranges) out += ", and " + std::to_string(ranges - max_ranges) + " more ranges";
  return out;
}

}  // namespace kvbench
