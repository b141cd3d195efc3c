// What every operation's run stages (src/ops/<op>/stages.cpp, runtime/case_sets.hpp) share, as
// one base: the case, its seed and validation options, one set's layout, every set's host data
// (LastCase), each built set's kernel arguments and plan, the launch (a planted one, or the
// plan's), and the bookkeeping of a set's bitwise check. An operation says how it makes a set's
// host data, plans and launches its kernels, and what its build uploads.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/case_sets.hpp"

namespace kvbench::stages {

// Host: one set's host data, with `Bytes expected` (the whole output buffer, guards included).
template <class Args, class Plan, class Host>
class OpSets : public CaseSets {
 public:
  const SetLayout& layout() const final { return layout_; }

  void prepare(int sets) final {
    if (sets > 1) last().prefetch(c_, seed_, sets, [this](int set) { return make_set(set); });
  }

  cudaError_t launch(int set, cudaStream_t s) const final {
    const auto i = static_cast<std::size_t>(set);
    const LaunchOverride::Launch* replaced = override_.find(c_);
    return replaced ? (*replaced)(&args_[i], s) : launch_plan(args_[i], plans_[i], s);
  }

  void save(const ValidationOptions&, const Row&) final {
    if (first_) save_set(0, *first_, first_actual_);
  }

 protected:
  OpSets(const Case& c, std::uint64_t seed, const ValidationOptions& options,
         const LaunchOverride& override_launch)
      : c_(c), seed_(seed), options_(options), override_(override_launch) {}

  // Set `set`'s host inputs and reference, made once per case (LastCase) and on several threads.
  virtual Host make_set(int set) const = 0;
  virtual Plan plan(const Args& a) const = 0;
  virtual cudaError_t launch_plan(const Args& a, const Plan& p, cudaStream_t s) const = 0;
  // --save-tensors of set `set`: its host data and its output as read back.
  virtual void save_set(int set, const Host& host, const Bytes& actual) const = 0;

  const Host& host_of(int set) {
    return last().get(c_, seed_, set, [&] { return make_set(set); });
  }

  // The next set's kernel arguments, planned once: every launch of it (validation and timing)
  // executes this plan.
  void add_set(const Args& a) {
    args_.push_back(a);
    plans_.push_back(plan(args_.back()));
  }
  const std::vector<Args>& set_args() const { return args_; }

  // Launches set `set` once and compares `out` with host.expected bit for bit
  // (launch_and_compare). Keeps set 0 for --save-tensors; a failing set is named in the reason
  // (and saved, when it is a later one). build()'s answer: false when the set failed.
  bool check(int set, int sets, const Host& host, const void* out, cudaStream_t stream,
             const Locate& locate, Row& row) {
    Bytes actual = launch_and_compare([this, set](cudaStream_t s) { return launch(set, s); }, out,
                                      host.expected, c_.out_dtype, stream, options_, locate, row);
    if (set == 0) {
      first_ = &host;
      // Kept for --save-tensors only: the read-back output can be as large as the case.
      if (!options_.save_tensors_dir.empty()) first_actual_ = std::move(actual);
    }
    if (row.status != Status::incorrect) return true;
    row.reason = set_prefix(set, sets) + row.reason;
    if (set > 0 && should_save(options_, row)) save_set(set, host, actual);
    return false;
  }

  const Case c_;
  const std::uint64_t seed_;
  const ValidationOptions& options_;
  SetLayout layout_;

 private:
  static LastCase<Host>& last() {
    static LastCase<Host> cache;
    return cache;
  }

  const LaunchOverride& override_;
  std::vector<Args> args_;  // per built set
  std::vector<Plan> plans_;
  const Host* first_ = nullptr;  // set 0's host data (held by the LastCase cache)
  Bytes first_actual_;
};

}  // namespace kvbench::stages
