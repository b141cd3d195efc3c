// Empties L2 before a cold sample by touching a buffer twice the L2 size. docs/measurement.md
// compares the methods; `read` is the default because it leaves only clean lines behind, so the
// timed kernel is not charged for write-backs of the flush's own data, as after a memset.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/types.hpp"
#include "runtime/cuda_resources.hpp"

namespace kvbench {

class L2Flusher {
 public:
  L2Flusher(std::size_t l2_bytes, int sm_count);
  void flush(L2Flush method, cudaStream_t stream) const;
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;  // 2x L2, zeroed
  DeviceBuffer sink_;    // never written (see launch_read_flush)
  int sm_count_;
};

}  // namespace kvbench
