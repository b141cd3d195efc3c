// The CUPTI timer: each kernel's own GPU start and end, from the CUPTI Activity API
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), for kernels inside replayed CUDA graphs
// (docs/measurement.md, "The CUPTI timer"). libcupti is loaded at run time with dlopen and never
// linked: a kvbench without it times with CUDA events, after one message saying why.
//
// Which file: $KVBENCH_CUPTI when set (that file only); else the soname of this build's CUDA major
// version (libcupti.so.13), then libcupti.so, each through the dynamic loader's search path, then
// the same names under $CUDA_HOME (else /usr/local/cuda) in lib64 and extras/CUPTI/lib64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel_records.hpp"

namespace kvbench {

// The files tried, in order, for these values of $KVBENCH_CUPTI and $CUDA_HOME (nullptr: unset)
// and the CUDA major version the build targets.
std::vector<std::string> cupti_candidates(const char* kvbench_cupti, const char* cuda_home,
                                          int cuda_major);

// The one line printed (to stderr, once) when the cupti timer was asked for but cannot be used.
std::string cupti_fallback_message(const std::string& why);

class CuptiTimer {
 public:
  // The process's timer, loaded on the first call; nullptr when CUPTI cannot be loaded or set up
  // (then the fallback message has been printed, and unavailable_reason() says why).
  static CuptiTimer* get();
  static std::string unavailable_reason();

  // start() turns kernel records on, for every kernel of the process, and drops those held;
  // they stay on from the first start() to the process's end (turning CUPTI's activity off and
  // on around each case is a path profilers have seen lose graph kernels). stop() drops the
  // records held.
  void start();
  void stop();
  // The records of kernels that have finished since the previous take() (or start()). Call after
  // synchronizing with the work: it forces CUPTI to hand over what it holds.
  std::vector<KernelRecord> take();
  // Records CUPTI itself dropped for want of buffer space, so far.
  std::size_t dropped_by_cupti() const;

  std::string library() const { return library_; }    // the file loaded
  std::uint32_t version() const { return version_; }  // cuptiGetVersion

 private:
  CuptiTimer() = default;
  std::string library_;
  std::uint32_t version_ = 0;
  bool enabled_ = false;
};

}  // namespace kvbench
