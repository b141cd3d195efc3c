#include "runtime/l2flush.hpp"

#include "runtime/timing_kernels.hpp"

namespace kvbench {

L2Flusher::L2Flusher(std::size_t l2_bytes, int sm_count)
    : buffer_((2 * l2_bytes + 15) / 16 * 16), sink_(sizeof(std::uint32_t)), sm_count_(sm_count) {
  KVB_CUDA_CHECK(cudaMemset(buffer_.get(), 0, buffer_.bytes()));
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(L2Flush method, cudaStream_t stream) const {
  if (method == L2Flush::memset) {
    KVB_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), stream));
  } else {
    // The buffer holds zeros, so the XOR of its words is 0 and never equals 1.
    KVB_CUDA_CHECK(timing::launch_read_flush(buffer_.get(), buffer_.bytes(), 1,
                                             sink_.as<std::uint32_t>(), sm_count_, stream));
  }
}

}  // namespace kvbench
