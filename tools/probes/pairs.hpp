// What the CUPTI probes share: two-kernel graphs replayed many times, each kernel timed on its
// own with the CUPTI timer (runtime/cupti_timer.hpp). Used by probe_context and
// probe_token_head_parts; a probe's helpers, not part of kvbench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/cupti_timer.hpp"

namespace kvbench::probes {

using Fn = std::function<cudaError_t(cudaStream_t)>;

// Each kernel's median duration and gap before it, over the complete replays of a graph of
// `steps` repetitions of [a b]; the median replay span.
struct PairTiming {
  double first_us = 0, first_gap_us = 0, second_us = 0, second_gap_us = 0, span_us = 0;
  std::size_t incomplete = 0, dropped = 0;
};

// [a b] repeated `steps` times in one graph, replayed `timed_replays` times after 20 untimed
// replays; each kernel timed on its own. Throws std::runtime_error when no replay's records add up.
PairTiming time_pair(const Fn& a, const Fn& b, int steps, int timed_replays, CuptiTimer& timer,
                     cudaStream_t stream);

// The functions of the kernels `f` launches (captured once into a graph, never run).
std::vector<void*> functions_of(const Fn& f, cudaStream_t stream);

// One row of a pair's table: graph, kernel, median µs, gap before it µs, span µs.
void print_row(const char* graph, const char* kernel, double us, double gap_us, double span_us);
// Both kernels' rows of a pair, and how many replays or records were left out.
void print_pair(const char* graph, const char* a, const char* b, const PairTiming& t);
// Registers, static shared and local memory of each kernel `f` launches.
void print_attributes(const char* name, const Fn& f, cudaStream_t stream);

}  // namespace kvbench::probes
