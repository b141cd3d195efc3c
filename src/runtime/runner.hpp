// One case end to end: inputs -> kernel launch -> bitwise check against the CPU reference ->
// timing -> a result row. Validation always comes first; a case that fails it is not timed.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/csv.hpp"
#include "core/sweep.hpp"

namespace kvbench {

class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
};

// Selects device 0. Throws NoDeviceError ("no CUDA device: ...") when there is none.
DeviceInfo open_device();

// How cases are validated beyond the run settings: `kvbench run`'s validation flags.
struct ValidationOptions {
  std::string save_tensors_dir;   // --save-tensors DIR: inputs and outputs of failing cases
  bool save_all = false;          // --save-tensors-all: of every validated case
  bool check_bounds = false;      // --check-bounds: device slot-range pre-pass (cache write)
  std::string case_tag = "case";  // saved tensors go to <save_tensors_dir>/<case_tag>/
  std::size_t max_report = 8;     // mismatches named in the reason
};

// Replaces the launch of a case's variant. Tests plant wrong kernels per operation, typed by its
// kernel arguments (on<kernels::ConcatArgs>(Kernel::concat_mha_k, f)), and see them judged
// exactly as a real kernel is (same inputs, canaries, guards and comparison). A variant from
// outside kvbench (a plugin's) has no kernel of kvbench's: it launches only through the one
// given for it (on_variant), with the same arguments. Without either, the real kernel runs.
class LaunchOverride {
 public:
  using Launch = std::function<cudaError_t(const void* args, cudaStream_t)>;
  template <class Args, class F>
  LaunchOverride& on(Kernel op, F f) {
    return on_operation(op, [f](const void* args, cudaStream_t s) {
      return f(*static_cast<const Args*>(args), s);
    });
  }
  // Untyped: `args` is the operation's kernel arguments (ops/launch.hpp, Backend).
  LaunchOverride& on_operation(Kernel op, Launch f) {
    launches_[op] = std::move(f);
    return *this;
  }
  LaunchOverride& on_variant(Kernel op, Variant v, Launch f) {
    variants_[{op, v}] = std::move(f);
    return *this;
  }
  // The launch that replaces case c's: the one planted for its operation, else its variant's;
  // nullptr when its own kernel runs.
  const Launch* find(const Case& c) const {
    if (const auto it = launches_.find(c.kernel); it != launches_.end()) return &it->second;
    const auto it = variants_.find({c.kernel, c.variant});
    return it == variants_.end() ? nullptr : &it->second;
  }

 private:
  std::map<Kernel, Launch> launches_;
  std::map<std::pair<Kernel, Variant>, Launch> variants_;
};

// A launch that did not enqueue its work, with what it said (a plugin's launch returning an
// error): the case is `failed` with this message, and the run goes on.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs one case. Never throws for problems of the case itself (unsupported dtype pair, bad
// input, out of device memory, a failed launch): those become the row's status and reason.
// Throws std::runtime_error if saved tensors cannot be written.
Row run_case(const Case& c, const RunSettings& settings, const DeviceInfo& device,
             const ValidationOptions& options = {}, const LaunchOverride& override_launch = {});

// Throws CudaError if an earlier failure left the device unusable (a sticky error such as an
// illegal address), since no later case could run. Call after writing a failed row.
void ensure_device_usable();

// Case-specific seed: independent of the case's position in the sweep.
std::uint64_t case_seed(const Case& c, std::uint64_t run_seed);

}  // namespace kvbench
