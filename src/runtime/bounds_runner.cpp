#include "runtime/bounds_runner.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "runtime/bound_kernels.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

constexpr int kPerThread[] = {1, 2, 4, 8};
constexpr int kThreads[] = {128, 256, 512};

std::string shape_name(BoundShape s) {
  return "t" + std::to_string(s.threads) + "x" + std::to_string(s.per_thread);
}

struct Best {
  double us = 0;
  std::string method;
  void consider(double candidate, std::string how) {
    if (method.empty() || candidate < us) {
      us = candidate;
      method = std::move(how);
    }
  }
};

}  // namespace

std::vector<BoundRow> measure_bounds(const ResultTable& results, std::int64_t max_tokens,
                                     const RunSettings& settings,
                                     void (*progress)(std::size_t, std::size_t)) {
  const std::vector<BoundCase> cases = bound_cases(results, max_tokens);
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<Best, Best>> floors;
  std::int64_t most = 16;
  for (const BoundCase& c : cases) {
    floors[{c.read_bytes, c.write_bytes}];
    most = std::max({most, c.read_bytes, c.write_bytes});
  }
  std::vector<BoundRow> rows;
  if (cases.empty()) return rows;

  const Stream stream;
  const cudaStream_t st = stream.get();
  const std::size_t buffer = (static_cast<std::size_t>(most) + 15) / 16 * 16;
  const DeviceBuffer src(buffer), dst(buffer), sink(sizeof(std::uint32_t));
  // Every source word reads 0x5A5A5A5A, so the XOR of a 16-byte word is 0, never 1.
  KVB_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, buffer, st));
  KVB_CUDA_CHECK(cudaMemsetAsync(dst.get(), 0, buffer, st));
  const std::uint32_t never = 1;

  const RunSettings& s = settings;
  const double launch_floor =
      measure([](cudaStream_t x) { return timing::launch_empty(x); }, st, s).stats.median_us;
  const double pdl_launch_floor =
      measure([](cudaStream_t x) { return launch_empty_pdl(x); }, st, s).stats.median_us;
  std::size_t done = 0;
  for (auto& [split, best] : floors) {
    const auto [read, write] = split;
    const auto w = static_cast<std::size_t>(write), r = static_cast<std::size_t>(read);
    auto& [write_best, move_best] = best;
    if (w > 0) {
      const Launch memset = [&](cudaStream_t x) { return cudaMemsetAsync(dst.get(), 0, w, x); };
      write_best.consider(measure(memset, st, s).stats.median_us, "memset");
    }
    for (int threads : kThreads)
      for (int k : kPerThread) {
        const BoundShape shape{k, threads};
        if (w > 0)
          write_best.consider(
              measure([&](cudaStream_t x) { return launch_store16(dst.get(), w, shape, x); }, st, s)
                  .stats.median_us,
              "store16 " + shape_name(shape));
        move_best.consider(measure(
                               [&](cudaStream_t x) {
                                 return launch_move16(src.get(), r, dst.get(), w, never,
                                                      sink.as<std::uint32_t>(), shape, x);
                               },
                               st, s)
                               .stats.median_us,
                           "move16 " + shape_name(shape));
      }
    if (progress) progress(++done, floors.size());
  }
  for (const BoundCase& c : cases) {
    const ResultRow& r = results.rows[c.row];
    const auto& [write_best, move_best] = floors.at({c.read_bytes, c.write_bytes});
    BoundRow b;
    b.axes = r.axes;
    b.median_us = r.timing->median_us;
    b.bytes = c.read_bytes + c.write_bytes;
    b.read_bytes = c.read_bytes;
    b.write_bytes = c.write_bytes;
    b.launch_floor_us = launch_floor;
    b.pdl_launch_floor_us = pdl_launch_floor;
    b.write_floor_us = write_best.us;
    b.write_floor_method = write_best.method;
    b.move_floor_us = move_best.us;
    b.move_floor_method = move_best.method;
    rows.push_back(std::move(b));
  }
  return rows;
}

}  // namespace kvbench
