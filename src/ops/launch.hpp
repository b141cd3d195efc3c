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

// The n-th allocation of a case, as cudaMalloc aligns it (256 bytes); only alignment matters.
template <class T>
T* plan_allocation(int n) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(n + 1) << 32);
}

}  // namespace kvbench
