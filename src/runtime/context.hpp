// The predecessor of each timed launch in a context (`settings.context`, docs/measurement.md
// "Contexts"): one definition for the runner, which times the case's launches, and `kvbench
// bounds`, which times its plain-move references, so that both are timed in the same context.
// It is a function of a set's input bytes only, never of the variant or the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "core/sweep.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/timer.hpp"

namespace kvbench {

// A set's inputs: the bytes the previous operation of a layer would have written.
using SetInputs = std::function<std::pair<void*, std::size_t>(int set)>;

class ContextPredecessor {
 public:
  // back_to_back: none; cold: the L2 flush of `settings.l2_flush`; after_producer: a kernel that
  // rewrites every 16-byte word of the set's inputs; layer: a read of `settings.layer_mib` MiB of
  // weights (allocated here, zero-filled on `stream`), then that producer.
  ContextPredecessor(const RunSettings& settings, SetInputs inputs, int sm_count,
                     cudaStream_t stream);
  // Workload::producer: empty in back_to_back.
  const SetLaunch& launch() const { return launch_; }

 private:
  std::unique_ptr<DeviceBuffer> weights_, sink_;  // the layer context's
  SetLaunch launch_;
};

// The device's SM count (the producer's grid), for callers without a DeviceInfo.
int current_sm_count();

}  // namespace kvbench
