// The timing engine. It knows only "a launch on a stream": warm-up, CUDA graphs, events and
// statistics live here and nowhere else.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "core/stats.hpp"
#include "core/sweep.hpp"

namespace kvbench {

using Launch = std::function<cudaError_t(cudaStream_t)>;

// graph: `graph_launches` launches captured once into a CUDA graph; each sample is one replay
//        between two events, divided by the launch count. Launch overhead stays out of the
//        window, which is the fair figure for microsecond kernels.
// hot:   each sample is one launch between two events, back to back with the previous one.
// L2 is not flushed in either mode: the cache write and concat are idempotent, so repeated
// launches are valid, but working sets below the L2 size (60 MiB on the H200) are served from it.
Stats measure(const Launch& launch, cudaStream_t stream, const RunSettings& settings);

}  // namespace kvbench
