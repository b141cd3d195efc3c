#include "runtime/context.hpp"

#include "runtime/cuda_check.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {

ContextPredecessor::ContextPredecessor(const RunSettings& settings, SetInputs inputs, int sm_count,
                                       cudaStream_t stream) {
  const SetLaunch producer = [inputs, sm_count](int set, cudaStream_t s) {
    const auto [buf, bytes] = inputs(set);
    return timing::launch_touch(buf, bytes, 0, sm_count, s);
  };
  switch (settings.context) {
    case Context::back_to_back:
      break;
    case Context::cold: {
      const Launch flush = l2_flush_launch(settings.l2_flush);
      launch_ = [flush](int, cudaStream_t s) { return flush(s); };
      break;
    }
    case Context::after_producer:
      launch_ = producer;
      break;
    case Context::layer: {
      // The previous operation of a layer: it streams its weights (read once, never written)
      // and writes the case's inputs.
      weights_ = std::make_unique<DeviceBuffer>(static_cast<std::size_t>(settings.layer_mib) << 20);
      sink_ = std::make_unique<DeviceBuffer>(sizeof(std::uint32_t));
      KVB_CUDA_CHECK(cudaMemsetAsync(weights_->get(), 0, weights_->bytes(), stream));
      const void* w = weights_->get();
      const std::size_t bytes = weights_->bytes();
      auto* out = sink_->as<std::uint32_t>();
      launch_ = [=](int set, cudaStream_t s) {
        // The weights hold zeros: their XOR is 0, never 1, so nothing is written.
        const cudaError_t err = timing::launch_read_flush(w, bytes, 1, out, sm_count, s);
        return err == cudaSuccess ? producer(set, s) : err;
      };
      break;
    }
  }
}

int current_sm_count() {
  int device = 0, count = 0;
  KVB_CUDA_CHECK(cudaGetDevice(&device));
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

}  // namespace kvbench
