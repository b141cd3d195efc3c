// Move-only RAII owners of CUDA resources. Destructors ignore errors (they may run while an
// exception unwinds); creation failures throw CudaError.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "runtime/cuda_check.hpp"

namespace kvbench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) KVB_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { KVB_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { KVB_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraph_t graph) { KVB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0)); }
  ~GraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&&) = delete;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace kvbench
