// concat_and_cache_mla's launch plan: the one place where a launch is decided (docs/kernels.md,
// "concat_and_cache_mla"). A pure function of the arguments and the device's properties, plain
// C++: `kvbench list --plan` prints it and the CPU tests check it; the launcher only executes it.
#pragma once

#include <set>
#include <string>

#include "kernels/common/device_props.hpp"
#include "kernels/common/tiling.hpp"
#include "kernels/mla_cache/mla_cache.hpp"

namespace kvbench::kernels {

enum class MlaCachePath { plain, fp8_ds_mla };
std::string to_string(MlaCachePath p);  // "plain", "fp8_ds_mla"

struct MlaCachePlan {
  std::string error;  // non-empty: not launchable, and why
  MlaCachePath path = MlaCachePath::plain;
  int vec = 1;                            // elements per access (plain)
  TileScale tile_scale = TileScale::raw;  // fp8_ds_mla
  bool pdl = true;
  Dim3 grid, block;
};

MlaCachePlan plan_mla_cache(const MlaCacheArgs& a, Variant variant, const DeviceProps& device);

// "plain vec=in16 V=8 pdl grid=16 block=72x3x1", "fp8_ds_mla tile=raw pdl grid=1 block=32"
std::string to_string(const MlaCachePlan& p, DType in);
// The decisions that select code, without the grid: "plain vec=in16", "fp8_ds_mla tile=pow2".
std::string plan_key(const MlaCachePlan& p, DType in);
// Every key plan_mla_cache can return for a launchable case (tests/test_plan.cpp checks the set
// both ways on a grid of shapes).
std::set<std::string> reachable_mla_cache_keys();

}  // namespace kvbench::kernels
