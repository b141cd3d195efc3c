// reshape_and_cache_flash's launch plan: the one place where a launch is decided (docs/kernels.md,
// "reshape_and_cache_flash"). A pure function of the arguments and the device's properties,
// plain C++: `kvbench list --plan` prints it and the CPU tests check it; the launchers only
// execute it.
#pragma once

#include <set>
#include <string>

#include "kernels/cache_write/cache_write.hpp"
#include "kernels/common/device_props.hpp"
#include "kernels/common/plan.hpp"
#include "kernels/common/tiling.hpp"

namespace kvbench::kernels {

// token_head: the optimized variant's per_token_head writes (SPEC.md §7, token_head.cu).
enum class CacheWritePath { seed_port, optimized, slot_order, token_head };
std::string to_string(CacheWritePath p);

struct CacheWritePlan {
  std::string error;  // non-empty: not launchable, and why
  CacheWritePath path = CacheWritePath::seed_port;
  int vec = 1;  // elements per access
  // optimized: offsets' integer type; K/V loaded before the slot is known; the scaled kernel;
  // its many-waves copy (a register cap of its own); the kernel with the SWA lookup compiled in.
  IndexType index = IndexType::int64;
  bool speculative = false, scaled = false, many_waves = false, swa = false;
  bool head_major = false;  // slot_order: items in HND order (a head's slots contiguous)
  bool pdl = false;
  Dim3 grid, block;
  int seed_block_d = 0;        // seed_port: next_pow2(D), the Triton tile's width
  std::int64_t chunk = 0;      // slot_order: slots per block
  Dim3 fill_grid, fill_block;  // slot_order: pass 1, the slot table fill
  // token_head: lanes per (token, head) row (a power of two up to 32) and the 4-value vectors
  // each lane holds in registers (1, 2, 4 or 8; 0: the row is read twice, amax then quantize).
  int lanes = 0, row_vecs = 0;
};

CacheWritePlan plan_cache_write(const CacheWriteArgs& a, Variant variant,
                                const DeviceProps& device);

// "optimized vec=in16 int32 speculative scaled no_swa V=8 pdl grid=132 block=256",
// "token_head regs=1 lanes=32 V=4 pdl grid=1 block=256"
std::string to_string(const CacheWritePlan& p, DType in);
// The decisions that select code, without the grid: "optimized vec=in16 int32 speculative ...".
std::string plan_key(const CacheWritePlan& p, DType in);
// Every key plan_cache_write can return for a launchable case (tests/test_plan.cpp checks the
// set both ways on a grid of shapes).
std::set<std::string> reachable_cache_write_keys();

}  // namespace kvbench::kernels
