#include "core/rotation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/inputs.hpp"

namespace kvbench {
namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

// Sets of `per_set` bytes that fit in `fraction` of `available`; unknown sizes cap nothing.
double sets_that_fit(double per_set, std::size_t available, double fraction) {
  return available > 0 && per_set > 0
             ? std::floor(fraction * static_cast<double>(available) / per_set)
             : static_cast<double>(kMaxBufferSets);
}

}  // namespace

RotationChoice choose_buffer_sets(const RotationInput& in) {
  const double per_set = static_cast<double>(in.set_device_bytes);
  const double per_host = static_cast<double>(in.set_host_bytes);
  const double device_fit = sets_that_fit(per_set, in.device_free_bytes, kRotateDeviceFraction);
  const double host_fit = sets_that_fit(per_host, in.host_available_bytes, kRotateHostFraction);
  const double fit = std::min(device_fit, host_fit);
  RotationChoice out;
  if (in.setting != kRotateAuto) {
    out.sets = in.setting;
    if (in.setting > 1 && static_cast<double>(in.setting) > device_fit)
      out.refused = "rotate " + std::to_string(in.setting) + " needs " + gb(per_set * in.setting) +
                    " of device memory, " + gb(static_cast<double>(in.device_free_bytes)) + " free";
    else if (in.setting > 1 && static_cast<double>(in.setting) > host_fit)
      out.refused = "rotate " + std::to_string(in.setting) + " needs " + gb(per_host * in.setting) +
                    " of host memory, " + gb(static_cast<double>(in.host_available_bytes)) +
                    " available";
    return out;
  }
  if (in.mode == TimingMode::cold || in.set_bytes <= 0) return out;
  const double target = kRotateL2Multiple * static_cast<double>(in.l2_bytes);
  const double wanted = std::floor(target / static_cast<double>(in.set_bytes)) + 1;
  const double n = std::min({wanted, std::max(1.0, fit), static_cast<double>(kMaxBufferSets)});
  out.cold_context = n < wanted && in.context == Context::back_to_back;
  out.sets = out.cold_context ? 1 : static_cast<int>(n);
  return out;
}

int graph_launches(int launches_per_sample, int sets) {
  const int n = std::max(1, launches_per_sample), k = std::max(1, sets);
  return (n + k - 1) / k * k;
}

std::uint64_t set_seed(std::uint64_t case_seed, int set) {
  if (set == 0) return case_seed;
  std::uint64_t state = case_seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(set));
  return splitmix64(state);
}

}  // namespace kvbench
