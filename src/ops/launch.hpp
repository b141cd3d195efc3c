// Case -> kernel arguments -> launch plan, by operation. The runner launches each case with its
// operation's arguments and plan; `kvbench list --plan` prints the same plan from buffers placed
// where the runner places them, so the printed plan is the executed one. Plans come from the
// kernels' plan headers, which core does not include: each operation answers for them through its
// Backend (src/ops/<op>/launch.cpp), and backends() lists them, one line each (src/ops/launch.cpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "kernels/common/device_props.hpp"
#include "kvbench/kvbench.h"

namespace kvbench {

// The plan of a case: to_string() of it, and its key (the decisions that select code; empty
// when the plan is an error).
struct CasePlan {
  std::string text, key;
};

// A case's arguments as a plugin's variant receives them (include/kvbench/kvbench.h): kvb_args
// and the operation's struct it points to, held together (so not copyable).
struct AbiArgs {
  kvb_args args{};
  kvb_concat_mla_k_args concat_mla_k{};
  kvb_cache_write_args cache_write{};
  AbiArgs() = default;
  AbiArgs(const AbiArgs&) = delete;
  AbiArgs& operator=(const AbiArgs&) = delete;
};

// The ABI's dtype (enum kvb_dtype).
std::int32_t abi_dtype(DType t);

// Everything above core that dispatches on an operation, answered by the operation (its
// launch.cpp). Kernel arguments (`const void*`) are the operation's own struct, as the runner's
// launches receive them (kernels::ConcatArgs, kernels::CacheWriteArgs, ...).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Kernel kernel() const = 0;
  // The plan of case c on `device` (case_plan), for a case of one of kvbench's own variants.
  virtual CasePlan plan(const Case& c, const kernels::DeviceProps& device) const = 0;
  // Every key the operation's planner can return (its plan.hpp declares them), for the coverage
  // test of the validation sweep (tests/test_plan.cpp).
  virtual std::set<std::string> plan_keys() const = 0;
  // The buffer a launch writes, where a planted fault writes far beyond (runtime/planted_fault).
  virtual void* output(const void* kernel_args) const = 0;
  // The plugin ABI's operation (enum kvb_op); 0 when the ABI has none for it.
  virtual std::int32_t abi_op() const { return 0; }
  // Kernel arguments as the ABI's. std::invalid_argument when the ABI has no such operation, or
  // cannot express the case (a scale mode of its own).
  void to_abi(const void* kernel_args, AbiArgs& out) const;
  // Case c's ABI arguments with its buffers where case_plan places them: for a plugin's
  // `supports`, which is asked before anything is allocated. Throws as to_abi.
  virtual void plan_abi_args(const Case& c, AbiArgs& out) const = 0;

 protected:
  // Fills out's operation struct and points out.args at it; only called when abi_op() != 0.
  virtual void fill_abi(const void* kernel_args, AbiArgs& out) const = 0;
};

// A backend over kernel arguments of type Args: the casts from `const void*` in one place.
template <class Args>
class BackendOf : public Backend {
 public:
  void* output(const void* a) const final { return output_of(*static_cast<const Args*>(a)); }
  void plan_abi_args(const Case& c, AbiArgs& out) const final {
    if (abi_op() == 0) return to_abi(nullptr, out);  // throws: the ABI has no such operation
    const Args a = plan_args(c);
    to_abi(&a, out);
  }

 protected:
  // The arguments at the addresses case_plan places the buffers (plan_allocation).
  virtual Args plan_args(const Case& c) const = 0;
  virtual void* output_of(const Args& a) const = 0;
  void fill_abi(const void* a, AbiArgs& out) const final {
    fill_abi_of(*static_cast<const Args*>(a), out);
  }
  virtual void fill_abi_of(const Args&, AbiArgs&) const {}  // operations in the ABI fill it
};

// The operations' backends, in the order of the Kernel enum (src/ops/launch.cpp).
const std::vector<const Backend*>& backends();
const Backend& backend(Kernel k);

// The plan of case c as the runner launches it on `device`: every allocation at a 256-byte
// aligned address (cudaMalloc's), the SWA table one entry in (its guard), outputs after their
// guards. A variant from outside kvbench plans nothing of kvbench's.
CasePlan case_plan(const Case& c, const kernels::DeviceProps& device);

// The n-th allocation of a case, as cudaMalloc aligns it (256 bytes); only alignment matters.
template <class T>
T* plan_allocation(int n) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(n + 1) << 32);
}

}  // namespace kvbench
