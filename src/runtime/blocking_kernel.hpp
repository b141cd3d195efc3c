// Holds a stream while the host enqueues a timed window, so the start event, the launches and the
// stop event reach the GPU together and the events bracket GPU execution only, not the host's
// launch latency (the technique of nvbench's blocking_kernel).
//
//   block(s); record start; launch...; record stop; release(); synchronize
//
// The kernel spins on a flag in host-mapped memory. If the host never releases it (it was stuck
// enqueueing, or a profiler serializes launches) the kernel gives up after a timeout; timed_out()
// then says the window may include launch latency. Move-only; one per process is enough.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kvbench {

class BlockingKernel {
 public:
  BlockingKernel();
  ~BlockingKernel();
  BlockingKernel(BlockingKernel&&) = delete;
  BlockingKernel& operator=(BlockingKernel&&) = delete;
  BlockingKernel(const BlockingKernel&) = delete;
  BlockingKernel& operator=(const BlockingKernel&) = delete;

  void block(cudaStream_t stream);  // enqueue the spinning kernel
  void release();                   // let it finish
  bool timed_out() const;           // valid once the stream has been synchronized

  static constexpr std::uint64_t kTimeoutNs = 1'000'000'000;  // 1 s

 private:
  volatile int* host_ = nullptr;  // [0]: release flag, [1]: timed-out flag
  int* device_ = nullptr;
};

}  // namespace kvbench
