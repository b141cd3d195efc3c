// What a launch plan reads of the device: SM count, L2 size, and how many blocks of a given
// kernel instantiation each SM holds. Plain C++: from the real device on a GPU, or from a
// committed profile (h200, h100) where there is none, so that `kvbench list --plan` and the
// CPU tests compute the plans the GPU would.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace kvbench::kernels {

// A kernel instantiation that a plan asks the occupancy of. name() spells its template
// arguments in their declared order, e.g. "concat_2d<bf16,fp8_e4m3,8,1,int64>".
struct KernelRef {
  enum class Kernel { concat_2d, concat_walk, concat_flat, cache_write_optimized };
  Kernel kernel;
  DType in, out;
  int vec;
  int unroll = 1;       // concat_2d, concat_walk
  bool scaled = false;  // cache_write_optimized
  std::string name() const;
};

struct DeviceProps {
  std::string name;  // profile name, or the device's name
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  // Blocks of `threads` threads of `kernel` that one SM holds at once.
  std::function<int(const KernelRef& kernel, int threads)> resident_blocks;
};

// sm_90 occupancy of a kernel with `regs` registers per thread and no shared memory, by the
// rules of cuda_occupancy.h: registers go to warps in units of 256, each of the 4 SM
// sub-partitions has 16384; at most 64 warps and 32 blocks per SM.
int sm90_resident_blocks(int regs, int threads);

// Registers per thread of each kernel instantiation a plan asks about, in this build for sm_90
// (ptxas -v; scripts/sm90_registers.py regenerates the table).
const std::vector<std::pair<std::string, int>>& sm90_kernel_registers();

std::vector<std::string> device_profile_names();  // h200, h100
// The named profile; std::invalid_argument naming the value and the known ones otherwise.
DeviceProps device_profile(const std::string& name);

// The current CUDA device's properties, the occupancy API answering for each kernel; sm_count
// 0 when no device can be asked (a launch then fails on its own). Asked once per device.
const DeviceProps& current_device_props();

}  // namespace kvbench::kernels
