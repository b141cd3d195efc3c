#include "runtime/timer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "core/csv.hpp"  // kClockLowFraction
#include "core/kernel_records.hpp"
#include "core/rotation.hpp"
#include "runtime/blocking_kernel.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/cupti_timer.hpp"
#include "runtime/l2flush.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

// Device resources shared by every measurement of the process (device 0 is current).
struct Engine {
  int sm_count = 0;
  BlockingKernel blocker;
  bool use_blocker = true;             // off after a timeout: a profiler or a stuck host defeats it
  std::unique_ptr<L2Flusher> flusher;  // allocated on the first cold measurement
  Event start, stop;
  DeviceBuffer clock_mhz{2 * timing::kMaxSmSlots * sizeof(float)};  // before, after
  DeviceBuffer claimed{2 * timing::kMaxSmSlots * sizeof(int)};

  Engine() { KVB_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0)); }

  const L2Flusher& flush_buffer() {
    if (!flusher) {
      int l2 = 0;
      KVB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
      flusher = std::make_unique<L2Flusher>(static_cast<std::size_t>(l2), sm_count);
    }
    return *flusher;
  }
};

Engine& engine() {
  static Engine e;
  return e;
}

// Releases the blocking kernel even if enqueueing the window throws.
struct ReleaseGuard {
  BlockingKernel* blocker;
  ~ReleaseGuard() {
    if (blocker) blocker->release();
  }
};

// One timed window: [flush] block, start, body, stop, release, wait. Returns milliseconds.
template <class Body>
double window_ms(Engine& e, cudaStream_t stream, const RunSettings& s, Body&& body) {
  if (s.mode == TimingMode::cold) e.flush_buffer().flush(s.l2_flush, stream);
  const bool blocked = e.use_blocker;
  {
    ReleaseGuard guard{blocked ? &e.blocker : nullptr};
    if (blocked) e.blocker.block(stream);
    KVB_CUDA_CHECK(cudaEventRecord(e.start.get(), stream));
    body();
    KVB_CUDA_CHECK(cudaEventRecord(e.stop.get(), stream));
  }
  KVB_CUDA_CHECK(cudaEventSynchronize(e.stop.get()));
  if (blocked && e.blocker.timed_out()) {
    e.use_blocker = false;
    std::fprintf(stderr,
                 "kvbench: warning: the blocking kernel timed out (a profiler serializing "
                 "launches?); from now on timed windows may include launch latency\n");
  }
  float ms = 0;
  KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, e.start.get(), e.stop.get()));
  return ms;
}

// The kernel nodes of `graph`.
std::size_t kernel_nodes(cudaGraph_t graph) {
  std::size_t n = 0;
  KVB_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  KVB_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  std::size_t kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    KVB_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel;
  }
  return kernels;
}

// A graph of `launches` launches, launch i on set i mod sets (after the producer on that set).
// `kernels`, when given, receives the graph's kernel node count.
GraphExec capture(const Workload& w, cudaStream_t stream, int launches,
                  std::size_t* kernels = nullptr) {
  cudaGraph_t graph = nullptr;
  KVB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t err = cudaSuccess;
  try {
    for (int i = 0; i < launches && err == cudaSuccess; ++i) {
      const int set = i % w.sets;
      if (w.producer) err = w.producer(set, stream);
      if (err == cudaSuccess) err = w.launch(set, stream);
    }
  } catch (...) {  // a launch that throws (LaunchError) leaves the stream usable
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  KVB_CUDA_CHECK(err);
  KVB_CUDA_CHECK(end);
  GraphExec exec(graph);
  if (kernels) *kernels = kernel_nodes(graph);
  cudaGraphDestroy(graph);
  return exec;
}

// The kernels one call of `launch` adds to a graph (captured, never run).
std::size_t kernels_of(const SetLaunch& launch, cudaStream_t stream) {
  std::size_t n = 0;
  capture(Workload{launch, 1, {}}, stream, 1, &n);
  return n;
}

// What the cupti timer needs of a graph-mode workload: the shape of its graph.
ReplayShape replay_shape(const Workload& w, cudaStream_t stream, int launches,
                         std::size_t graph_kernels) {
  ReplayShape shape;
  shape.steps = static_cast<std::size_t>(launches);
  shape.producer = w.producer ? kernels_of(w.producer, stream) : 0;
  shape.launch = kernels_of(w.launch, stream);
  if (shape.launch == 0 || shape.kernels() != graph_kernels)
    throw CudaError(cudaErrorUnknown, "cupti timer: the graph has " +
                                          std::to_string(graph_kernels) + " kernels, not " +
                                          std::to_string(shape.steps) + " x (" +
                                          std::to_string(shape.producer) + " + " +
                                          std::to_string(shape.launch) + ")");
  return shape;
}

// Probing the clock costs 2 x this per case; long enough against %globaltimer's ~1 µs steps.
constexpr std::uint64_t kClockProbeNs = 200'000;

// The median over SMs of every non-zero per-SM reading.
double median_mhz(std::vector<float> mhz) {
  mhz.erase(std::remove(mhz.begin(), mhz.end(), 0.0f), mhz.end());
  if (mhz.empty()) return 0;
  std::nth_element(mhz.begin(), mhz.begin() + static_cast<std::ptrdiff_t>(mhz.size() / 2),
                   mhz.end());
  return mhz[mhz.size() / 2];
}

}  // namespace

namespace {

// The samples of one workload (its producer included, when it has one).
Measurement sample(const Workload& w, cudaStream_t stream, const RunSettings& s) {
  Engine& e = engine();
  Measurement m;
  // Hot mode enqueues every launch behind the blocking kernel: with a producer, two per launch.
  const int hot = w.producer ? std::max(1, s.launches_per_sample / 2) : s.launches_per_sample;
  m.launches_per_sample = s.mode == TimingMode::cold ? 1
                          : s.mode == TimingMode::graph
                              ? graph_launches(s.launches_per_sample, w.sets)
                              : std::min(hot, kMaxLaunchesPerSample);
  const int n = m.launches_per_sample;

  // The cupti timer, when asked for and loadable: graph mode only (settings refuse the others).
  CuptiTimer* cupti =
      s.mode == TimingMode::graph && s.timer == Timer::cupti ? CuptiTimer::get() : nullptr;
  // Collecting from before the graph is captured and instantiated, so CUPTI sees it made.
  if (cupti) cupti->start();
  std::size_t graph_kernels = 0;
  const GraphExec exec = s.mode == TimingMode::graph
                             ? capture(w, stream, n, cupti ? &graph_kernels : nullptr)
                             : GraphExec();
  ReplayShape shape;
  if (cupti) {
    shape = replay_shape(w, stream, n, graph_kernels);
    m.timer = Timer::cupti;
  }
  std::uint64_t next = 0;  // cold and hot: the launch count so far, whose set is next % sets
  const auto body = [&] {
    if (s.mode == TimingMode::graph) {
      KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const int set = static_cast<int>(next++ % static_cast<std::uint64_t>(w.sets));
      if (w.producer) KVB_CUDA_CHECK(w.producer(set, stream));
      KVB_CUDA_CHECK(w.launch(set, stream));
    }
  };

  // Kernel records of the warm-up (and of anything before it) are thrown away.
  struct CollectGuard {
    CuptiTimer* t;
    ~CollectGuard() {
      if (t) t->stop();
    }
  } collect{cupti};
  for (int i = 0; i < s.warmup; ++i) window_ms(e, stream, s, body);
  if (cupti) cupti->take();
  std::vector<ReplayTiming> replays;

  // The SM clock is probed right before and right after the samples (sustained throttling shows
  // in both); the probes are outside every timed window.
  auto* mhz = e.clock_mhz.as<float>();
  auto* claimed = e.claimed.as<int>();
  KVB_CUDA_CHECK(cudaMemsetAsync(claimed, 0, e.claimed.bytes(), stream));
  KVB_CUDA_CHECK(cudaMemsetAsync(mhz, 0, e.clock_mhz.bytes(), stream));
  KVB_CUDA_CHECK(timing::launch_clock_probe(mhz, claimed, kClockProbeNs, e.sm_count, stream));

  const StopRule rule{s.min_samples, s.min_time_s, s.target_noise, s.timeout_s};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> samples_us, windows_us;  // windows_us: cupti, each window by events
  double timed_s = 0;
  std::size_t next_check = static_cast<std::size_t>(s.min_samples);
  while (true) {
    const double ms = window_ms(e, stream, s, body);
    if (cupti) {  // each launch's own duration is a sample
      replays.push_back(time_replay(cupti->take(), shape));
      for (const UnitTiming& u : replays.back().launches) samples_us.push_back(u.duration_us);
      windows_us.push_back(1000.0 * ms / n);
    } else {
      samples_us.push_back(1000.0 * ms / n);
    }
    timed_s += ms / 1000.0;
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (wall_s >= s.timeout_s) break;
    // The CI costs O(n): check on a geometric schedule so sampling stays O(n) overall.
    if (samples_us.size() >= next_check) {
      if (should_stop(rule, samples_us, timed_s, wall_s) == StopReason::converged) {
        m.converged = true;
        break;
      }
      next_check = samples_us.size() + std::max<std::size_t>(1, samples_us.size() / 16);
    }
  }

  if (cupti) {
    cupti->stop();
    const ReplaySummary sum = summarize_replays(replays);
    if (sum.launch_us.empty())
      throw CudaError(cudaErrorUnknown, "cupti timer: no replay's kernel records add up (" +
                                            replays.front().problem + ")");
    m.gap_us = sum.gap_median_us;
    m.span_us = sum.span_median_us;
    m.producer_us = sum.producer_median_us;
    m.replays = sum.replays;
    m.replays_incomplete = sum.incomplete;
    m.records_dropped = sum.dropped;
    m.window_us = summarize(std::move(windows_us)).median_us;
  }
  KVB_CUDA_CHECK(timing::launch_clock_probe(
      mhz + timing::kMaxSmSlots, claimed + timing::kMaxSmSlots, kClockProbeNs, e.sm_count, stream));
  std::vector<float> host(2 * timing::kMaxSmSlots);
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), mhz, e.clock_mhz.bytes(), cudaMemcpyDeviceToHost, stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  m.sm_clock_mhz = median_mhz(std::move(host));
  m.stats = summarize(samples_us);
  m.samples_us = std::move(samples_us);
  return m;
}

// Every time of `st` less `us`, at least 0; the relative spreads rescaled to the new centre.
Stats shifted(Stats st, double us) {
  const double mean = st.mean_us, median = st.median_us;
  for (double* v : {&st.median_us, &st.mean_us, &st.min_us, &st.max_us, &st.p10_us, &st.p90_us})
    *v = std::max(0.0, *v - us);
  st.rel_stdev = st.mean_us > 0 ? st.rel_stdev * mean / st.mean_us : 0;
  st.median_ci_rel = st.median_us > 0 ? st.median_ci_rel * median / st.median_us
                                      : std::numeric_limits<double>::infinity();
  return st;
}

}  // namespace

Measurement measure(const Workload& w, cudaStream_t stream, const RunSettings& s) {
  Measurement m = sample(w, stream, s);
  // The cupti timer times the launch on its own: there is nothing to subtract.
  if (!w.producer || m.timer == Timer::cupti) return m;
  // The producer alone, on the same sets in the same order: what it adds to each window.
  const Measurement alone = sample(Workload{w.producer, w.sets, {}}, stream, s);
  m.producer_us = alone.stats.median_us;
  m.stats = shifted(m.stats, m.producer_us);
  for (double& v : m.samples_us) v = std::max(0.0, v - m.producer_us);
  // A difference that vanishes says the producer's noise swamps the case: not converged.
  m.converged = m.converged && alone.converged && m.stats.median_us > 0;
  return m;
}

Measurement measure(const Launch& launch, cudaStream_t stream, const RunSettings& s) {
  return measure(Workload{[&launch](int, cudaStream_t st) { return launch(st); }, 1, {}}, stream,
                 s);
}

Launch l2_flush_launch(L2Flush method) {
  const L2Flusher* flusher = &engine().flush_buffer();
  return [flusher, method](cudaStream_t stream) {
    try {
      flusher->flush(method, stream);
      return cudaSuccess;
    } catch (const CudaError& e) {
      return e.code();
    }
  };
}

RunSettings floor_settings(const RunSettings& run) {
  RunSettings s = run;
  s.warmup = std::max(s.warmup, 10);
  s.min_samples = std::max(s.min_samples, 20);
  s.min_time_s = std::max(s.min_time_s, 0.02);
  s.timeout_s = std::max(s.timeout_s, 1.0);
  return s;
}

double settle_clocks(double seconds) {
  Engine& e = engine();
  const Stream stream;
  auto* mhz = e.clock_mhz.as<float>();
  auto* claimed = e.claimed.as<int>();
  // Probes of 10 ms back to back: every SM spinning, as under load; the last one's reading is
  // the clock the GPU settled at.
  constexpr std::uint64_t kSpinNs = 10'000'000;
  const int probes = std::max(1, static_cast<int>(seconds * 1e9 / kSpinNs));
  for (int i = 0; i < probes; ++i) {
    KVB_CUDA_CHECK(cudaMemsetAsync(claimed, 0, e.claimed.bytes(), stream.get()));
    KVB_CUDA_CHECK(cudaMemsetAsync(mhz, 0, e.clock_mhz.bytes(), stream.get()));
    KVB_CUDA_CHECK(timing::launch_clock_probe(mhz, claimed, kSpinNs, e.sm_count, stream.get()));
  }
  std::vector<float> host(timing::kMaxSmSlots);
  KVB_CUDA_CHECK(cudaMemcpyAsync(host.data(), mhz, host.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream.get()));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return median_mhz(std::move(host));
}

std::vector<LaunchFloor> measure_launch_floor(const RunSettings& settings,
                                              double max_sm_clock_mhz) {
  const Stream stream;
  std::vector<LaunchFloor> out;
  const auto low = [&](double mhz) {
    return max_sm_clock_mhz > 0 && mhz > 0 && mhz < kClockLowFraction * max_sm_clock_mhz;
  };
  settle_clocks(kFloorSettleS);
  for (TimingMode mode : all_values<TimingMode>()) {
    RunSettings s = floor_settings(settings);
    s.mode = mode;
    s.rotate = 1;
    s.hot_inputs = false;
    s.timer = Timer::events;
    const auto once = [&] {
      return measure([](cudaStream_t st) { return timing::launch_empty(st); }, stream.get(), s);
    };
    LaunchFloor f{mode, once()};
    if (low(f.m.sm_clock_mhz)) {  // not at its steady clock yet: settle again, measure again
      settle_clocks(kFloorSettleS);
      f.m = once();
      f.attempts = 2;
    }
    f.clock_low = low(f.m.sm_clock_mhz);
    out.push_back(f);
  }
  return out;
}

bool blocking_kernel_timed_out() { return !engine().use_blocker; }

}  // namespace kvbench
