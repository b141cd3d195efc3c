// The host-side CUDA error idiom: every runtime call goes through KVB_CUDA_CHECK, which throws
// CudaError with the call's text, file and line; main turns it into one line and an exit code.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace kvbench {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

inline void cuda_check(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw CudaError(err, std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                           ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

// The `reason` of a case that a CUDA error ended: out-of-memory gets a fixed, greppable text.
inline std::string failure_reason(const CudaError& e) {
  return e.code() == cudaErrorMemoryAllocation ? "out of device memory" : e.what();
}

}  // namespace kvbench

#define KVB_CUDA_CHECK(call) ::kvbench::cuda_check((call), #call, __FILE__, __LINE__)
