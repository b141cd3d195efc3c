// concat_and_cast_mha_k: case -> kernel arguments -> launch plan (kernels/concat_mha_k/plan.hpp).
#pragma once

#include "kernels/concat_mha_k/plan.hpp"
#include "ops/concat_mha_k/operation.hpp"
#include "ops/launch.hpp"

namespace kvbench {

// Device buffers of a concat case, each where its allocation starts.
struct ConcatBuffers {
  const void* k_nope;
  const void* k_rope;
  void* k_buffer;  // [guard | k | guard]
};
kernels::ConcatArgs concat_args(const Case& c, const ConcatGeometry& g, const ConcatBuffers& b);

// The arguments at the addresses case_plan places the buffers (plan_allocation).
kernels::ConcatArgs concat_plan_args(const Case& c);
// As a plugin receives them (ops/launch.hpp, to_abi).
kvb_concat_mla_k_args concat_abi_args(const kernels::ConcatArgs& a);

// The operation's backend (ops/launch.hpp).
const Backend& concat_backend();

}  // namespace kvbench
