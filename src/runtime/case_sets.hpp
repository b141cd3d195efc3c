// The stages of one case, as run_case (runner.cpp) drives them:
//   admit     the op checks what needs no device memory (dtype pair, strides, injected input)
//   size      the bytes of one buffer set, for the set count (core/rotation.hpp)
//   build     per set: host inputs and the CPU reference, upload, one launch, bitwise check
//   time      the engine (timer.hpp) over every set
//   recheck   what timing could break (slot_order's table)
//   save      --save-tensors
// Each operation implements CaseSets (src/ops/<op>/stages.cpp); the helpers they share
// (canaries, upload, compare, saved tensors, the host-data cache) are declared here and defined
// in case_check.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/csv.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/runner.hpp"
#include "runtime/timer.hpp"

namespace kvbench::stages {

// Every output byte starts as this, so a write the kernel should not make shows as a mismatch.
inline constexpr unsigned char kCanary = 0xA5;
// Buffers inside a set start at multiples of this (and own whole 16-byte words at their end, so
// the hot-inputs producer may round up).
inline constexpr std::size_t kAlign = 256;

using Bytes = std::vector<unsigned char>;
using Locate = std::function<std::string(std::int64_t)>;

Bytes host_bytes(std::int64_t elems, DType t);

// Offsets of one set's buffers: inputs first (the producer touches [0, inputs_end)), then the
// outputs and scratch. Every set has the same layout, `bytes` apart.
class SetLayout {
 public:
  std::size_t add(std::size_t bytes);  // offset of a new buffer
  void end_inputs() { inputs_end_ = bytes_; }
  std::size_t bytes() const { return bytes_; }
  std::size_t inputs_end() const { return inputs_end_; }

 private:
  std::size_t bytes_ = 0, inputs_end_ = 0;
};

void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

// Launches once, reads the whole output buffer back (guards included) and compares it with
// `expected`; sets the row's mismatch count, and status and reason when they differ. Everything
// happens on one stream (a legacy-stream memset would race with it). Returns the bytes read.
Bytes launch_and_compare(const Launch& launch, const void* out, const Bytes& expected,
                         DType out_dtype, cudaStream_t stream, const ValidationOptions& options,
                         const Locate& locate, Row& row);

// One tensor of a case as --save-tensors writes it: the whole host allocation, 1-D.
struct SavedTensor {
  std::string name;   // file stem: "<name>.<dtype>.npy"
  std::string dtype;  // kvbench's name of what the bits hold (f32, bf16, i64, ...)
  std::string descr;  // NumPy's
  const void* data;
  std::size_t bytes;
  std::size_t elem_size;
};
SavedTensor tensor(const std::string& name, DType t, const Bytes& b);
SavedTensor i64_tensor(const std::string& name, const std::vector<std::int64_t>& v);
SavedTensor f32_tensor(const std::string& name, const std::vector<float>& v);

// Writes DIR/<tag>[/set<N>]/<name>.<dtype>.npy for each tensor and case.txt with the case and
// its geometry (strides and guards, to rebuild the views with torch.as_strided).
void save_tensors(const ValidationOptions& o, const Case& c, int set, const std::string& geometry,
                  const std::vector<SavedTensor>& tensors);

bool should_save(const ValidationOptions& o, const Row& row);

// "set 3 of 61: " for a set after the first, so a reason says which set failed.
std::string set_prefix(int set, int sets);

// Host inputs and reference outputs of every set of the last case, reused by the next case when
// it differs only in its variant (sweeps vary the variant fastest): generating inputs and running
// the reference dominate a sweep's host time. Variants see identical inputs (case_seed ignores
// them). What it holds is bounded by the rotation: sets beyond the first exist only while their
// case is below 3x L2 (or kMaxBufferSets of them).
template <class HostData>
class LastCase {
 public:
  // Makes every set of `sets` not held yet, `make(set)` on several threads at once (the sets are
  // independent and generating them is pure host work); the case key as in get().
  template <class Make>
  void prefetch(const Case& c, std::uint64_t case_seed, int sets, Make&& make) {
    use(c, case_seed);
    if (data_.size() < static_cast<std::size_t>(sets)) data_.resize(static_cast<std::size_t>(sets));
    std::vector<int> missing;
    for (int s = 0; s < sets; ++s)
      if (!data_[static_cast<std::size_t>(s)]) missing.push_back(s);
    parallel_for(missing.size(), [&](std::size_t i) {
      data_[static_cast<std::size_t>(missing[i])] = std::make_unique<HostData>(make(missing[i]));
    });
  }

  template <class Make>
  const HostData& get(const Case& c, std::uint64_t case_seed, int set, Make&& make) {
    use(c, case_seed);
    const auto i = static_cast<std::size_t>(set);
    if (data_.size() <= i) data_.resize(i + 1);
    if (!data_[i]) data_[i] = std::make_unique<HostData>(make());
    return *data_[i];
  }

 private:
  void use(const Case& c, std::uint64_t case_seed) {
    Case key_case = c;
    key_case.variant = Variant::seed_port;
    const std::string key = describe(key_case) + " seed=" + std::to_string(case_seed);
    if (key != key_) {
      data_.clear();  // free the previous case's buffers before allocating this one's
      key_ = key;
    }
  }

  std::string key_;
  std::vector<std::unique_ptr<HostData>> data_;
};

// Runs body(0..n-1) on up to hardware_concurrency() threads; rethrows the first exception.
void parallel_for(std::size_t n, const std::function<void(std::size_t)>& body);

// One op's case, set by set. The runner owns the device memory of every set (one allocation,
// sets `layout().bytes()` apart) and the stream.
class CaseSets {
 public:
  virtual ~CaseSets() = default;
  // Host inputs and references of sets 1..sets-1, made in parallel before build() needs them
  // (called once set 0 has passed).
  virtual void prepare(int sets) = 0;
  // One set's buffers. Valid once the op is admitted.
  virtual const SetLayout& layout() const = 0;
  // The logical bytes one launch moves (SPEC.md §4); build() puts them in the row.
  virtual std::int64_t set_bytes() const = 0;
  // Host bytes of one set's inputs and reference (LastCase keeps every set's).
  virtual std::size_t set_host_bytes() const = 0;
  // Makes set `set` at `base` (its inputs, reference, canaries), validates one launch on it.
  // false: the row holds the verdict (rejected, incorrect) and no further set is built.
  virtual bool build(int set, int sets, unsigned char* base, cudaStream_t stream, Row& row) = 0;
  // A launch on a built set.
  virtual cudaError_t launch(int set, cudaStream_t stream) const = 0;
  // After timing: what the repeated launches could have left wrong (a verdict in `row`).
  virtual void recheck(int sets, cudaStream_t stream, Row& row) {
    (void)sets, (void)stream, (void)row;
  }
  // --save-tensors of set 0 (a later set that fails saves itself in build()).
  virtual void save(const ValidationOptions& o, const Row& row) = 0;
};

// The case's operation's stages (src/ops/<op>/stages.cpp), looked up in the run stages' list
// (src/ops/stages.cpp). nullptr when the case is refused before any
// allocation (row.status and reason set). The sets keep references to `options` and
// `override_launch`: both must outlive them.
std::unique_ptr<CaseSets> make_case_sets(const Case& c, std::uint64_t seed,
                                         const ValidationOptions& options,
                                         const LaunchOverride& override_launch, Row& row);
// The sets would keep references to temporaries: refused at compile time.
std::unique_ptr<CaseSets> make_case_sets(const Case&, std::uint64_t, ValidationOptions&&,
                                         const LaunchOverride&, Row&) = delete;
std::unique_ptr<CaseSets> make_case_sets(const Case&, std::uint64_t, const ValidationOptions&,
                                         LaunchOverride&&, Row&) = delete;
std::unique_ptr<CaseSets> make_case_sets(const Case&, std::uint64_t, ValidationOptions&&,
                                         LaunchOverride&&, Row&) = delete;

// The first refusal of admission that every operation makes: a variant its operation does not
// list, or one that does not support the case (core/operation.hpp). Sets the row (not_supported)
// and returns false when refused.
bool admit_variant(const Case& c, Row& row);

}  // namespace kvbench::stages
