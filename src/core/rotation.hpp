// How many independent buffer sets a case is timed over (`settings.rotate`, docs/measurement.md
// "Rotated buffers"). Pure: the runner passes what it knows of the case and the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/sweep.hpp"

namespace kvbench {

// `rotate: auto` picks the smallest N whose sets together exceed this many times the L2 size.
inline constexpr double kRotateL2Multiple = 3.0;
// Fraction of the free device memory the sets may take (the rest: the engine, the L2 flush
// buffer, fragmentation).
inline constexpr double kRotateDeviceFraction = 0.8;
// Fraction of the available host memory the sets' inputs and references may take (every set's
// are kept while the case's variants run).
inline constexpr double kRotateHostFraction = 0.5;

struct RotationInput {
  int setting = 1;  // settings.rotate (kRotateAuto or N)
  TimingMode mode = TimingMode::graph;
  Context context = Context::back_to_back;  // settings.context
  std::int64_t set_bytes = 0;               // bytes one launch touches: SPEC.md §4's logical bytes
  std::size_t set_device_bytes = 0;         // device bytes one set allocates
  std::size_t l2_bytes = 0;
  std::size_t device_free_bytes = 0;     // 0: unknown, no cap
  std::size_t set_host_bytes = 0;        // host bytes one set's inputs and reference take
  std::size_t host_available_bytes = 0;  // 0: unknown, no cap
};

struct RotationChoice {
  int sets = 1;
  std::string refused;  // non-empty: an explicit N does not fit; the case fails with this reason
  // auto, back to back: the sets that fit cannot cover kRotateL2Multiple x L2, so the case is
  // timed on one set in the `cold` context instead (the L2 flushed before each launch, inside the
  // graph, not counted).
  bool cold_context = false;
};

// Explicit N: N, or refused when N sets do not fit in the free device memory or the available
// host memory. auto: 1 in cold mode (the flush already makes every launch cold); else the
// smallest N with N * set_bytes > kRotateL2Multiple * l2_bytes. When what fits in the device and
// the host memory, or kMaxBufferSets, caps N below that: in the back_to_back context, one set and
// cold_context; in another context (whose predecessor already writes the inputs), the capped N
// (at least 1).
RotationChoice choose_buffer_sets(const RotationInput& in);

// Launches in one CUDA graph over `sets` buffer sets: launches_per_sample rounded up to a
// multiple of `sets`, so every replay launches each set equally often (launch i on set i mod N).
int graph_launches(int launches_per_sample, int sets);

// The seed of buffer set `set` of a case whose seed is `case_seed`: set 0 keeps the case's seed,
// so a run with rotate 1 sees exactly the inputs it always did.
std::uint64_t set_seed(std::uint64_t case_seed, int set);

}  // namespace kvbench
