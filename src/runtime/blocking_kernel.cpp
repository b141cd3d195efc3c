#include "runtime/blocking_kernel.hpp"

#include "runtime/cuda_check.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {

BlockingKernel::BlockingKernel() {
  void* p = nullptr;
  KVB_CUDA_CHECK(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped));
  host_ = static_cast<volatile int*>(p);
  host_[0] = host_[1] = 0;
  void* d = nullptr;
  KVB_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
  device_ = static_cast<int*>(d);
}

BlockingKernel::~BlockingKernel() {
  if (host_) {
    host_[0] = 1;  // never leave a kernel spinning
    cudaFreeHost(const_cast<int*>(host_));
  }
}

void BlockingKernel::block(cudaStream_t stream) {
  // The previous window was synchronized, so no blocker is reading the flags now.
  host_[0] = 0;
  host_[1] = 0;
  KVB_CUDA_CHECK(timing::launch_blocker(device_, device_ + 1, kTimeoutNs, stream));
}

void BlockingKernel::release() { host_[0] = 1; }

bool BlockingKernel::timed_out() const { return host_[1] != 0; }

}  // namespace kvbench
