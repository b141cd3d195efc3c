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
// Repeated launches must be valid: the cache write and concat are idempotent (every launch
// writes the same bytes to the same places), so they are.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "core/stats.hpp"
#include "core/sweep.hpp"

namespace kvbench {

using Launch = std::function<cudaError_t(cudaStream_t)>;

struct Measurement {
  Stats stats;                  // per launch, µs
  int launches_per_sample = 1;  // launches in each timed window
  bool converged = false;       // false: the timeout ended sampling before the noise target
  double sm_clock_mhz = 0;      // SM clock probed right before and after the samples; 0: unknown
};

// Throws CudaError on a failed launch or CUDA call.
Measurement measure(const Launch& launch, cudaStream_t stream, const RunSettings& settings);

// An empty kernel measured in every mode with `settings`' sampling rules: below these, a row's
// time is launch and scheduling overhead, not work.
struct LaunchFloor {
  TimingMode mode;
  Measurement m;
};
std::vector<LaunchFloor> measure_launch_floor(const RunSettings& settings);

// Whether the blocking kernel ever timed out in this process (then windows may include launch
// latency; a warning has been printed).
bool blocking_kernel_timed_out();

}  // namespace kvbench
