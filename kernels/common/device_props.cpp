#include "kernels/common/device_props.hpp"

#include <map>
#include <stdexcept>
#include <utility>

#include "kernels/common/tiling.hpp"

namespace kvbench::kernels {

std::string to_string(const Dim3& d) {
  if (d.y == 1 && d.z == 1) return std::to_string(d.x);
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

std::string KernelRef::name() const {
  const std::string types =
      std::string(to_string(in)) + "," + std::string(to_string(out)) + "," + std::to_string(vec);
  switch (kernel) {
    case Kernel::concat_2d:
      return "concat_2d<" + types + "," + std::to_string(unroll) + ",int64>";
    case Kernel::concat_walk:
      return "concat_walk<" + types + "," + std::to_string(unroll) + ",0>";
    case Kernel::concat_flat:
      return "concat_optimized<" + types + ">";
    case Kernel::cache_write_optimized:
      return "cache_write_optimized<" + types + ",1," + (scaled ? "1" : "0") + ",0,0,int64>";
  }
  return "?";
}

int sm90_resident_blocks(int regs, int threads) {
  constexpr int kRegsPerSm = 65536, kSubPartitions = 4, kUnit = 256, kMaxWarps = 64,
                kMaxBlocks = 32;
  const int warps = (threads + 31) / 32;
  if (warps < 1 || regs < 1) return 0;
  const int regs_per_warp = (regs * 32 + kUnit - 1) / kUnit * kUnit;
  const int by_regs = kRegsPerSm / kSubPartitions / regs_per_warp * kSubPartitions / warps;
  const int by_warps = kMaxWarps / warps;
  int n = by_regs < by_warps ? by_regs : by_warps;
  return n < kMaxBlocks ? n : kMaxBlocks;
}

const std::vector<std::pair<std::string, int>>& sm90_kernel_registers() {
  static const std::vector<std::pair<std::string, int>> table = {
#include "kernels/common/sm90_registers.inc"
  };
  return table;
}

namespace {

// A profile's occupancy: from the committed register table; a kernel missing from it is an
// error in the table, never a guess.
int profile_resident_blocks(const KernelRef& k, int threads) {
  static const std::map<std::string, int> regs(sm90_kernel_registers().begin(),
                                               sm90_kernel_registers().end());
  const auto it = regs.find(k.name());
  if (it == regs.end())
    throw std::logic_error("no sm_90 register count for " + k.name() +
                           " (regenerate kernels/common/sm90_registers.inc)");
  return sm90_resident_blocks(it->second, threads);
}

}  // namespace

std::vector<std::string> device_profile_names() { return {"h200", "h100"}; }

// SM count and L2 size as cudaGetDeviceProperties reports them: H200 and H100 SXM both have 132
// SMs; L2 is 60 MiB on the H200 (results/h200/*.json: l2_bytes 62914560), 50 MiB on the H100.
DeviceProps device_profile(const std::string& name) {
  if (name == "h200") return {"h200", 132, std::int64_t{60} << 20, profile_resident_blocks};
  if (name == "h100") return {"h100", 132, std::int64_t{50} << 20, profile_resident_blocks};
  std::string known;
  for (const std::string& n : device_profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown device profile '" + name + "' (expected one of " + known +
                              ")");
}

}  // namespace kvbench::kernels
