// `kvbench list`: the cases a config expands to, without a GPU.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/csv.hpp"
#include "ops/launch.hpp"
#include "core/shard.hpp"
#include "core/sweep.hpp"

namespace kvbench::cli {

namespace {

// The device whose plans `list --plan` prints: the named profile, else the real device.
const kernels::DeviceProps& plan_device(const std::string& profile, kernels::DeviceProps& storage) {
  if (!profile.empty()) return storage = kernels::device_profile(profile);  // throws on unknown
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw NoDeviceError("no CUDA device: pass --device-profile h200 or h100");
  }
  return kernels::current_device_props();
}

}  // namespace

int cmd_list(const std::string& config_path, const std::string& format, const ListPlan& plan,
             const std::string& shard, std::uint64_t max_cases) {
  const Config config = load_config(config_path, max_cases);
  // --shard: the cases of that shard only, numbered as in the whole sweep.
  Shard s;
  if (!shard.empty()) s = parse_shard(shard, [](const char* name) { return std::getenv(name); });
  kernels::DeviceProps storage;
  const kernels::DeviceProps* device =
      plan.show ? &plan_device(plan.device_profile, storage) : nullptr;
  // The plan the runner would execute for case c (ops/launch.hpp).
  const auto plan_of = [&](const Case& c) { return case_plan(c, *device).text; };
  if (format == "csv") {
    // The case columns of the result CSV, so scripts can run the same cases elsewhere.
    std::cout << "case," << join_csv(case_columns()) << (device ? ",plan" : "") << '\n';
    for (std::size_t i = 0; i < config.cases.size(); ++i) {
      if (!s.holds(i)) continue;
      std::vector<std::string> fields = case_fields(config.cases[i]);
      if (device) fields.push_back(plan_of(config.cases[i]));
      std::cout << i << ',' << join_csv(fields) << '\n';
    }
  } else {
    if (device)
      std::cout << "# launch plans on " << device->name << ": " << device->sm_count << " SMs, L2 "
                << device->l2_bytes / (1 << 20) << " MiB\n";
    for (std::size_t i = 0; i < config.cases.size(); ++i) {
      if (!s.holds(i)) continue;
      std::cout << i << ' ' << describe(config.cases[i]);
      if (device) std::cout << " | " << plan_of(config.cases[i]);
      std::cout << '\n';
    }
  }
  check_stdout();
  return kOk;
}

}  // namespace kvbench::cli
