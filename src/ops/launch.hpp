// Case -> kernel arguments -> launch plan, by operation. The runner launches each case with its
// operation's arguments and plan (src/ops/<op>/launch.hpp); `kvbench list --plan` prints the
// same plan from buffers placed where the runner places them, so the printed plan is the
// executed one. Plans come from the kernels' plan headers, which core does not include: this
// lookup is the registry's (src/ops/registry.cpp) exhaustive switch for them.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "core/case.hpp"
#include "kernels/common/device_props.hpp"
#include "kvbench/kvbench.h"

namespace kvbench {

// The plan of a case: to_string() of it, and its key (the decisions that select code; empty
// when the plan is an error).
struct CasePlan {
  std::string text, key;
};

// The plan of case c as the runner launches it on `device`: every allocation at a 256-byte
// aligned address (cudaMalloc's), the SWA table one entry in (its guard), outputs after their
// guards.
CasePlan case_plan(const Case& c, const kernels::DeviceProps& device);

// Every key the operation's planner can return (its plan.hpp declares them), for the coverage
// test of the validation sweep (tests/test_plan.cpp).
std::set<std::string> reachable_plan_keys(Kernel k);

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

// The ABI's operation (enum kvb_op) of k; 0 when the ABI has none for it.
std::int32_t abi_op(Kernel k);
// The ABI's dtype (enum kvb_dtype).
std::int32_t abi_dtype(DType t);
// The kernel arguments of a case of operation k (what the runner's launches receive:
// kernels::ConcatArgs, kernels::CacheWriteArgs) as the ABI's. std::invalid_argument when the ABI
// has no such operation.
void to_abi(Kernel k, const void* kernel_args, AbiArgs& out);
// Case c's ABI arguments with its buffers where case_plan places them: for a plugin's `supports`,
// which is asked before anything is allocated.
void plan_abi_args(const Case& c, AbiArgs& out);

// The n-th allocation of a case, as cudaMalloc aligns it (256 bytes); only alignment matters.
template <class T>
T* plan_allocation(int n) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(n + 1) << 32);
}

}  // namespace kvbench
