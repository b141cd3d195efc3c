// Per-kernel GPU timestamps of graph replays (the CUPTI timer, runtime/cupti_timer.hpp), turned
// into each kernel's own duration, the gap before it and the replay's span. Pure: the records
// are plain values, so the bookkeeping is tested on synthetic ones.
//
// A replayed graph of the engine is `steps` repetitions of one step: the step's producer kernels
// (none without a producer), then the timed launch's kernels (one for most variants). A single
// stream captured it, so its kernels run in capture order, and ordering the replay's records by
// start time gives each record its position in the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvbench {

// One kernel execution as the Activity API reports it, in ns of the GPU's timestamp clock.
struct KernelRecord {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t graph_id = 0;  // 0: not launched by a graph (the engine's own kernels)
};

// Start 0 (the timestamp could not be collected) or an end before the start.
bool invalid_record(const KernelRecord& r);

// The shape of the replayed graph.
struct ReplayShape {
  std::size_t steps = 1;     // repetitions of the step
  std::size_t producer = 0;  // kernels of the producer, first in each step
  std::size_t launch = 1;    // kernels of the timed launch, after the producer's
  std::size_t kernels() const { return steps * (producer + launch); }
};

// One unit of a step (the producer or the timed launch): from its first kernel's start to its
// last kernel's end, and from the previous kernel's end to its first kernel's start (negative
// when it started before that end, as a programmatic dependent launch may).
struct UnitTiming {
  double duration_us = 0;
  double gap_us = 0;
  bool has_gap = false;  // false for the replay's first unit: nothing ran before it in the graph
};

// One replay's records, classified. `complete` only when the valid graph records number
// shape.kernels() and all come from one graph; then `launches` (and `producers` when the step
// has a producer) hold one entry per step, in order, and `span_us` runs from the first start to
// the last end.
struct ReplayTiming {
  bool complete = false;
  std::string problem;      // why not complete, one line
  std::size_t dropped = 0;  // invalid records of graph kernels, left out
  std::size_t foreign = 0;  // records of kernels no graph launched (graph_id 0), left out
  std::vector<UnitTiming> launches, producers;
  double span_us = 0;
};
ReplayTiming time_replay(std::vector<KernelRecord> records, const ReplayShape& shape);

// The median of `v` (0 when empty); the middle two averaged for an even count.
double median_of(std::vector<double> v);

// The figures of a case over its complete replays: medians of the timed launch's own duration,
// of the gap before it (launches with a predecessor only), of the producer's duration (0 without
// one) and of the replay span.
struct ReplaySummary {
  std::size_t replays = 0;        // replays given
  std::size_t incomplete = 0;     // of them, not complete (left out of every figure)
  std::size_t dropped = 0;        // invalid records, over all replays
  std::vector<double> launch_us;  // every timed launch's duration, in replay order: the samples
  double launch_median_us = 0, gap_median_us = 0, producer_median_us = 0, span_median_us = 0;
};
ReplaySummary summarize_replays(const std::vector<ReplayTiming>& replays);

}  // namespace kvbench
