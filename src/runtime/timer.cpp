#include "runtime/timer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "runtime/blocking_kernel.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/l2flush.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

// Device resources shared by every measurement of the process (device 0 is current).
struct Engine {
  int sm_count = 0;
  BlockingKernel blocker;
  bool use_blocker = true;  // off after a timeout: a profiler or a stuck host defeats it
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

GraphExec capture(const Launch& launch, cudaStream_t stream, int launches) {
  cudaGraph_t graph = nullptr;
  KVB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t err = cudaSuccess;
  for (int i = 0; i < launches && err == cudaSuccess; ++i) err = launch(stream);
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  KVB_CUDA_CHECK(err);
  KVB_CUDA_CHECK(end);
  GraphExec exec(graph);
  cudaGraphDestroy(graph);
  return exec;
}

// Probing the clock costs 2 x this per case; long enough against %globaltimer's ~1 µs steps.
constexpr std::uint64_t kClockProbeNs = 200'000;

// The median over SMs of every non-zero per-SM reading.
double median_mhz(std::vector<float> mhz) {
  mhz.erase(std::remove(mhz.begin(), mhz.end(), 0.0f), mhz.end());
  if (mhz.empty()) return 0;
  std::nth_element(mhz.begin(), mhz.begin() + static_cast<std::ptrdiff_t>(mhz.size() / 2), mhz.end());
  return mhz[mhz.size() / 2];
}

}  // namespace

Measurement measure(const Launch& launch, cudaStream_t stream, const RunSettings& s) {
  Engine& e = engine();
  Measurement m;
  m.launches_per_sample = s.mode == TimingMode::cold ? 1 : s.launches_per_sample;
  const int n = m.launches_per_sample;

  const GraphExec exec = s.mode == TimingMode::graph ? capture(launch, stream, n) : GraphExec();
  const auto body = [&] {
    if (s.mode == TimingMode::graph) {
      KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
    } else {
      for (int i = 0; i < n; ++i) KVB_CUDA_CHECK(launch(stream));
    }
  };

  for (int i = 0; i < s.warmup; ++i) window_ms(e, stream, s, body);

  // The SM clock is probed right before and right after the samples (sustained throttling shows
  // in both); the probes are outside every timed window.
  auto* mhz = e.clock_mhz.as<float>();
  auto* claimed = e.claimed.as<int>();
  KVB_CUDA_CHECK(cudaMemsetAsync(claimed, 0, e.claimed.bytes(), stream));
  KVB_CUDA_CHECK(cudaMemsetAsync(mhz, 0, e.clock_mhz.bytes(), stream));
  KVB_CUDA_CHECK(timing::launch_clock_probe(mhz, claimed, kClockProbeNs, e.sm_count, stream));

  const StopRule rule{s.min_samples, s.min_time_s, s.target_noise, s.timeout_s};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> samples_us;
  double timed_s = 0;
  std::size_t next_check = static_cast<std::size_t>(s.min_samples);
  while (true) {
    const double ms = window_ms(e, stream, s, body);
    samples_us.push_back(1000.0 * ms / n);
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

  KVB_CUDA_CHECK(timing::launch_clock_probe(mhz + timing::kMaxSmSlots,
                                            claimed + timing::kMaxSmSlots, kClockProbeNs,
                                            e.sm_count, stream));
  std::vector<float> host(2 * timing::kMaxSmSlots);
  KVB_CUDA_CHECK(cudaMemcpyAsync(host.data(), mhz, e.clock_mhz.bytes(), cudaMemcpyDeviceToHost, stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  m.sm_clock_mhz = median_mhz(std::move(host));
  m.stats = summarize(std::move(samples_us));
  return m;
}

std::vector<LaunchFloor> measure_launch_floor(const RunSettings& settings) {
  const Stream stream;
  std::vector<LaunchFloor> out;
  for (TimingMode mode : all_values<TimingMode>()) {
    RunSettings s = settings;
    s.mode = mode;
    out.push_back({mode, measure([](cudaStream_t st) { return timing::launch_empty(st); },
                                 stream.get(), s)});
  }
  return out;
}

bool blocking_kernel_timed_out() { return !engine().use_blocker; }

}  // namespace kvbench
