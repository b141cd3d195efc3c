// concat_and_cast_mha_k's launch plan: the one place where a launch is decided (docs/kernels.md,
// "concat_and_cast_mha_k"). A pure function of the arguments and the device's properties, plain
// C++: `kvbench list --plan` prints it and the CPU tests check it; the launcher only executes it.
#pragma once

#include <set>
#include <string>

#include "kernels/common/device_props.hpp"
#include "kernels/common/plan.hpp"
#include "kernels/common/tiling.hpp"
#include "kernels/concat_mha_k/concat_mha_k.hpp"

namespace kvbench::kernels {

enum class ConcatPath { seed_port, tile_2d, walk, flat };
std::string to_string(ConcatPath p);  // seed_port, optimized_2d, optimized_walk, optimized_flat

struct ConcatPlan {
  std::string error;  // non-empty: not launchable, and why
  ConcatPath path = ConcatPath::seed_port;
  int vec = 1;  // elements per access
  IndexType index = IndexType::int64;
  int unroll = 1;             // tokens in flight per thread (2-D tiling, walk)
  bool late_trigger = false;  // walk: PDL's trigger after the walk
  bool pdl = false;
  Dim3 grid, block;
};

ConcatPlan plan_concat(const ConcatArgs& a, Variant variant, const DeviceProps& device);

// "optimized_2d vec=in16 unroll=1 int32 V=8 pdl grid=16 block=24x8x1"
std::string to_string(const ConcatPlan& p, DType in);
// The decisions that select code, without the grid: "optimized_2d vec=in16 unroll=2 int32".
std::string plan_key(const ConcatPlan& p, DType in);
// Every key plan_concat can return for a launchable case (tests/test_plan.cpp checks the set
// both ways on a grid of shapes).
std::set<std::string> reachable_concat_keys();

}  // namespace kvbench::kernels
