#include "runtime/timer.hpp"

#include <vector>

#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"

namespace kvbench {
namespace {

// Events bracket `body`; returns the elapsed milliseconds.
template <class Body>
float timed(cudaStream_t stream, const Event& start, const Event& stop, Body&& body) {
  KVB_CUDA_CHECK(cudaEventRecord(start.get(), stream));
  body();
  KVB_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
  KVB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

GraphExec capture(const Launch& launch, cudaStream_t stream, int launches) {
  cudaGraph_t graph = nullptr;
  KVB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t err = cudaSuccess;
  for (int i = 0; i < launches && err == cudaSuccess; ++i) err = launch(stream);
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  KVB_CUDA_CHECK(err);
  KVB_CUDA_CHECK(end);
  GraphExec exec(graph);
  cudaGraphDestroy(graph);
  return exec;
}

}  // namespace

Stats measure(const Launch& launch, cudaStream_t stream, const RunSettings& s) {
  Event start, stop;
  std::vector<double> samples_us;
  samples_us.reserve(static_cast<std::size_t>(s.samples));
  if (s.mode == TimingMode::graph) {
    const GraphExec exec = capture(launch, stream, s.graph_launches);
    for (int i = 0; i < s.warmup; ++i) KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
    for (int i = 0; i < s.samples; ++i) {
      const float ms = timed(stream, start, stop,
                             [&] { KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream)); });
      samples_us.push_back(1000.0 * ms / s.graph_launches);
    }
  } else {
    for (int i = 0; i < s.warmup; ++i) KVB_CUDA_CHECK(launch(stream));
    for (int i = 0; i < s.samples; ++i) {
      const float ms = timed(stream, start, stop, [&] { KVB_CUDA_CHECK(launch(stream)); });
      samples_us.push_back(1000.0 * ms);
    }
  }
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return summarize(std::move(samples_us));
}

}  // namespace kvbench
