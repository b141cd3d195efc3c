// The timing engine. It knows only "a launch on a stream": warm-up, L2 flush, the blocking
// kernel, CUDA graphs, events, adaptive sampling, statistics and the SM clock live here and
// nowhere else. docs/measurement.md explains each mode and why.
//
// Every mode times a window bracketed by two events, with the stream held by a blocking kernel
// while the host enqueues the window, so host launch latency stays outside it:
//   cold:  L2 flushed (settings.l2_flush), then one launch per window.
//   hot:   launches_per_sample launches back to back per window; time per launch.
//   graph: launches_per_sample launches captured once in a CUDA graph; one replay per window;
//          time per launch. The fair figure for microsecond kernels.
// With N buffer sets (settings.rotate), launch i uses set i mod N in every mode; a graph holds
// launches_per_sample rounded up to a multiple of N, so each replay launches every set equally.
// Repeated launches must be valid: the cache write and concat are idempotent (every launch
// writes the same bytes to the same places), so they are.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "core/stats.hpp"
#include "core/sweep.hpp"

namespace kvbench {

using Launch = std::function<cudaError_t(cudaStream_t)>;
// A launch on buffer set `set` (0 <= set < the workload's sets).
using SetLaunch = std::function<cudaError_t(int set, cudaStream_t)>;

// What the engine times: `launch` over `sets` buffer sets. With a `producer`, each launch is
// preceded by the producer on the same set (inputs hot in L2, as after the kernel that wrote
// them); the producer is then timed alone the same way and its median subtracted (times clamped
// at 0; a median of 0 leaves the measurement not converged).
struct Workload {
  SetLaunch launch;
  int sets = 1;
  SetLaunch producer;  // empty: none
};

struct Measurement {
  Stats stats;                     // per launch, µs
  std::vector<double> samples_us;  // what stats summarize, in the order they were taken
  int launches_per_sample = 1;     // launches in each timed window
  bool converged = false;          // false: the timeout ended sampling before the noise target
  double sm_clock_mhz = 0;         // SM clock probed right before and after the samples; 0: unknown
  double producer_us = 0;  // the producer's median per launch (events: subtracted from stats)
  // The cupti timer (settings.timer, graph mode): stats are each launch's own duration, from its
  // first kernel's start to its last kernel's end, nothing subtracted. `timer` says which timer
  // ran (events when cupti was asked for but cannot be loaded).
  Timer timer = Timer::events;
  double gap_us = 0;        // median from the previous kernel's end to the launch's start
  double span_us = 0;       // median span of a replay, first start to last end
  std::size_t replays = 0;  // replays timed
  std::size_t replays_incomplete = 0;  // of them, left out: their kernel records did not add up
  std::size_t records_dropped = 0;     // invalid kernel records (start 0, end before start)
  // The same windows timed by events, per launch (median; producers included, nothing
  // subtracted): against an event-timer run of the case, what collecting records costs.
  double window_us = 0;
};

// Throws CudaError on a failed launch or CUDA call, and when the cupti timer gets no replay
// whose kernel records add up.
Measurement measure(const Workload& work, cudaStream_t stream, const RunSettings& settings);
Measurement measure(const Launch& launch, cudaStream_t stream, const RunSettings& settings);

// An empty kernel measured in every mode: below these, a row's time is launch and scheduling
// overhead, not work. It keeps the run's launches_per_sample (a graph's own launch cost is
// shared by its launches, so the floor of a row depends on it) but never samples less than
// kFloorSampling, and it starts after the GPU has been kept busy for kFloorSettleS so that its
// clocks are at their steady level (docs/measurement.md, "The launch floor"). A floor whose SM
// clock reads below kClockLowFraction of `max_sm_clock_mhz` is measured once more after another
// settle; `clock_low` says whether it still was.
struct LaunchFloor {
  TimingMode mode;
  Measurement m;
  bool clock_low = false;
  int attempts = 1;
};
inline constexpr double kFloorSettleS = 0.2;
std::vector<LaunchFloor> measure_launch_floor(const RunSettings& settings,
                                              double max_sm_clock_mhz = 0);
// The floor's sampling: the run's settings, raised to at least these.
RunSettings floor_settings(const RunSettings& run);

// A launch of the engine's L2 flush (cold mode's, `method`), its buffer allocated now, so that
// it can be captured in a graph: the cold context's predecessor.
Launch l2_flush_launch(L2Flush method);

// Keeps every SM busy for `seconds` (the clock probe kernel, back to back) and returns the SM
// clock read at its end, MHz (0: unknown).
double settle_clocks(double seconds);

// Whether the blocking kernel ever timed out in this process (then windows may include launch
// latency; a warning has been printed).
bool blocking_kernel_timed_out();

}  // namespace kvbench
