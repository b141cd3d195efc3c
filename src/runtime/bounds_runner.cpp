#include "runtime/bounds_runner.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/inputs.hpp"
#include "core/operation.hpp"
#include "core/rotation.hpp"
#include "runtime/bound_kernels.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

constexpr int kPerThread[] = {1, 2, 4, 8};
constexpr int kThreads[] = {128, 256, 512};
constexpr int kScatterThreads[] = {128, 256, 512};
// The full grid of shapes costs a dozen measurements a split. It is searched where it can matter
// and is cheap: a few sets of up to 4 MiB. Past that, or over many sets (each measurement then
// launches every set), four shapes: those that win at large sizes, and the smallest blocks.
constexpr std::int64_t kFullSearchBytes = 4 << 20;
constexpr int kFullSearchSets = 8;
constexpr BoundShape kFewShapes[] = {{4, 256}, {8, 256}, {4, 512}, {1, 128}};

std::string shape_name(BoundShape s) {
  return "t" + std::to_string(s.threads) + "x" + std::to_string(s.per_thread);
}

std::size_t words16(std::int64_t bytes) { return (static_cast<std::size_t>(bytes) + 15) / 16 * 16; }

// The fastest of the kernels tried: by the median (`us`, and its `method`), and the lowest mean of
// their samples (`mean_us`, which resolves below the timer's step where medians tie).
struct Best {
  double us = 0, mean_us = 0;
  std::string method;
  void consider(const Stats& candidate, std::string how) {
    if (method.empty() || candidate.median_us < us) {
      us = candidate.median_us;
      method = std::move(how);
    }
    if (mean_us <= 0 || candidate.mean_us < mean_us) mean_us = candidate.mean_us;
  }
};

// Timed over `sets` buffer sets, as the case was: `launch(set, stream)`, in the case's context
// (s.context; its predecessor writes `inputs(set)`) by its timer.
Stats time_sets(const SetLaunch& launch, int sets, const SetInputs& inputs, cudaStream_t stream,
                const RunSettings& s) {
  const ContextPredecessor before(s, inputs, current_sm_count(), stream);
  return measure(Workload{launch, sets, before.launch()}, stream, s).stats;
}

// The settings a case's floors are timed with: the run's, in the case's context by its timer.
RunSettings timed_as(const RunSettings& s, const BoundCase& c) {
  RunSettings r = s;
  r.context = c.context;
  r.hot_inputs = c.context == Context::after_producer;
  r.timer = s.mode == TimingMode::graph ? c.timer : Timer::events;  // cupti: graph mode only
  return r;
}

// The contiguous floors of one (read, write, sets) split: the fastest move of the bytes, and for
// the launch-bound sizes the fastest write of the output bytes alone.
std::pair<Best, Best> split_floors(std::int64_t read, std::int64_t write, int sets, bool with_write,
                                   cudaStream_t st, const RunSettings& s) {
  const std::size_t rb = words16(std::max<std::int64_t>(read, 16)),
                    wb = words16(std::max<std::int64_t>(write, 16));
  const DeviceBuffer src(rb * static_cast<std::size_t>(sets)),
      dst(wb * static_cast<std::size_t>(sets)), sink(sizeof(std::uint32_t));
  // Every source word reads 0x5A5A5A5A, so the XOR of a 16-byte word is 0, never 1.
  KVB_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, src.bytes(), st));
  KVB_CUDA_CHECK(cudaMemsetAsync(dst.get(), 0, dst.bytes(), st));
  const std::uint32_t never = 1;
  auto* d = dst.as<unsigned char>();
  auto* r = src.as<unsigned char>();
  const SetInputs inputs = [r, rb](int set) {
    return std::pair<void*, std::size_t>(r + static_cast<std::size_t>(set) * rb, rb);
  };
  const auto w = static_cast<std::size_t>(write), rd = static_cast<std::size_t>(read);
  Best write_best, move_best;
  std::vector<BoundShape> shapes;
  if (write > kFullSearchBytes || sets > kFullSearchSets) {
    shapes.assign(std::begin(kFewShapes), std::end(kFewShapes));
  } else {
    for (int threads : kThreads)
      for (int k : kPerThread) shapes.push_back({k, threads});
  }
  if (with_write && w > 0) {
    // cudaMemsetAsync is a memset node, not a kernel: CUPTI's kernel records cannot time it.
    if (s.timer != Timer::cupti)
      write_best.consider(
          time_sets([&](int set, cudaStream_t x) { return cudaMemsetAsync(d + set * wb, 0, w, x); },
                    sets, inputs, st, s),
          "memset");
    for (BoundShape shape : shapes)
      write_best.consider(
          time_sets(
              [&](int set, cudaStream_t x) { return launch_store16(d + set * wb, w, shape, x); },
              sets, inputs, st, s),
          "store16 " + shape_name(shape));
  }
  for (BoundShape shape : shapes)
    move_best.consider(time_sets(
                           [&](int set, cudaStream_t x) {
                             return launch_move16(r + set * rb, rd, d + set * wb, w, never,
                                                  sink.as<std::uint32_t>(), shape, x);
                           },
                           sets, inputs, st, s),
                       "move16 " + shape_name(shape));
  return {write_best, move_best};
}

}  // namespace

namespace {

int word_bytes(const std::vector<std::int64_t>& sizes) {
  for (int w : {16, 8, 4, 2})
    if (std::all_of(sizes.begin(), sizes.end(), [w](std::int64_t v) { return v % w == 0; }))
      return w;
  return 1;
}

// The scatter bound of a case (its operation's ScatterShape): its rows to their places, over as
// many sets as it had.
Best scatter_floor(const Case& c, const ScatterShape& shape, std::uint64_t run_seed, int sets,
                   cudaStream_t st, const RunSettings& s) {
  const std::int64_t input = words16(c.num_tokens * c.num_heads * shape.head_read);
  const std::int64_t cache = words16(shape.dest_bytes);
  const std::int64_t rows_bytes = words16(c.num_tokens * 8);
  const std::int64_t per_set = 2 * input + cache + rows_bytes;
  const DeviceBuffer buf(static_cast<std::size_t>(per_set) * static_cast<std::size_t>(sets)),
      sink(sizeof(std::uint32_t));
  auto* base = buf.as<unsigned char>();
  KVB_CUDA_CHECK(cudaMemsetAsync(base, 0x5A, buf.bytes(), st));  // XOR of a word: 0, never 1
  std::vector<ScatterArgs> args;
  for (int set = 0; set < sets; ++set) {
    unsigned char* b = base + static_cast<std::size_t>(set) * static_cast<std::size_t>(per_set);
    const std::vector<std::int64_t> rows = shape.rows(set_seed(case_seed(c, run_seed), set));
    KVB_CUDA_CHECK(cudaMemcpyAsync(b + 2 * input + cache, rows.data(), rows.size() * 8,
                                   cudaMemcpyHostToDevice, st));
    ScatterArgs a;
    a.src_k = b;
    a.src_v = b + input;
    a.dst = b + 2 * input;
    a.dst_row = reinterpret_cast<const std::int64_t*>(b + 2 * input + cache);
    a.v_offset = shape.v_offset;
    a.tokens = c.num_tokens;
    a.heads = c.num_heads;
    a.head_read = shape.head_read;
    a.head_write = shape.head_write;
    a.head_stride = shape.head_stride;
    std::vector<std::int64_t> sizes = {shape.head_read, shape.head_write, shape.head_stride,
                                       shape.v_offset};
    sizes.insert(sizes.end(), shape.dest_strides.begin(), shape.dest_strides.end());
    a.word_bytes = word_bytes(sizes);
    a.sink = sink.as<std::uint32_t>();
    args.push_back(a);
  }
  KVB_CUDA_CHECK(cudaStreamSynchronize(st));  // `rows` of each set uploaded before it is freed
  // The set's inputs, K and V: what a producer writes.
  const SetInputs inputs = [base, per_set, input](int set) {
    return std::pair<void*, std::size_t>(
        base + static_cast<std::size_t>(set) * static_cast<std::size_t>(per_set),
        static_cast<std::size_t>(2 * input));
  };
  Best best;
  for (bool eager : {false, true})
    for (int threads : kScatterThreads)
      for (int per_thread : {1, 4})
        best.consider(time_sets(
                          [&](int set, cudaStream_t x) {
                            return launch_scatter(args[static_cast<std::size_t>(set)], threads,
                                                  per_thread, eager, x);
                          },
                          sets, inputs, st, s),
                      "scatter" + std::to_string(args.front().word_bytes) + " t" +
                          std::to_string(threads) + "x" + std::to_string(per_thread) +
                          (eager ? " eager" : ""));
  return best;
}

}  // namespace

std::size_t measure_bounds(const ResultTable& results, std::int64_t max_tokens,
                           const RunSettings& settings, const std::string& variant,
                           const std::function<void(BoundRow)>& emit,
                           void (*progress)(std::size_t, std::size_t)) {
  const std::vector<BoundCase> cases = bound_cases(results, max_tokens, variant);
  if (cases.empty()) return 0;
  // Equal splits share their contiguous floors; a case's variants share its scatter floor. Each
  // is timed when the first case needing it comes, and every case's row is emitted as soon as
  // its floors are known, so a run cut short keeps the rows it finished.
  using Split = std::tuple<std::int64_t, std::int64_t, int, bool, Context, Timer>;
  std::map<Split, std::pair<Best, Best>> splits;
  std::map<std::pair<std::string, int>, Best> scatters;
  const auto split_of = [](const BoundCase& c) {
    return Split{c.read_bytes, c.write_bytes, c.buffer_sets, c.c.num_tokens <= kWriteFloorMaxTokens,
                 c.context,    c.timer};
  };
  const auto scatter_key = [](const BoundCase& c) {
    Case k = c.c;
    k.variant = Variant::seed_port;
    return std::make_pair(describe(k) + " sweep=" + k.sweep +
                              " context=" + std::string(to_string(c.context)) +
                              " timer=" + std::string(to_string(c.timer)),
                          c.buffer_sets);
  };
  std::set<Split> split_keys;
  std::set<std::pair<std::string, int>> scatter_keys;
  for (const BoundCase& c : cases) {
    split_keys.insert(split_of(c));
    if (operation(c.c.kernel).scatter_shape(c.c)) scatter_keys.insert(scatter_key(c));
  }

  const Stream stream;
  const cudaStream_t st = stream.get();
  const RunSettings& s = settings;
  const double launch_floor =
      measure([](cudaStream_t x) { return timing::launch_empty(x); }, st, s).stats.median_us;
  const double pdl_launch_floor =
      measure([](cudaStream_t x) { return launch_empty_pdl(x); }, st, s).stats.median_us;
  const std::size_t total = split_keys.size() + scatter_keys.size();
  std::size_t done = 0;
  for (const BoundCase& c : cases) {
    const Split split = split_of(c);
    auto it = splits.find(split);
    if (it == splits.end()) {
      const auto& [read, write, sets, with_write, context, timer] = split;
      it = splits.emplace(split, split_floors(read, write, sets, with_write, st, timed_as(s, c)))
               .first;
      if (progress) progress(++done, total);
    }
    const auto& [write_best, move_best] = it->second;
    const ResultRow& r = results.rows[c.row];
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
    b.move_floor_mean_us = move_best.mean_us;
    b.buffer_sets = c.buffer_sets;
    b.context = c.context;
    b.timer = timed_as(s, c).timer;
    if (const auto shape = operation(c.c.kernel).scatter_shape(c.c)) {
      const auto key = scatter_key(c);
      auto sc = scatters.find(key);
      if (sc == scatters.end()) {
        sc =
            scatters
                .emplace(key, scatter_floor(c.c, *shape, s.seed, c.buffer_sets, st, timed_as(s, c)))
                .first;
        if (progress) progress(++done, total);
      }
      b.scatter_floor_us = sc->second.us;
      b.scatter_floor_mean_us = sc->second.mean_us;
      b.scatter_floor_method = sc->second.method;
    }
    emit(std::move(b));
  }
  return cases.size();
}

}  // namespace kvbench
