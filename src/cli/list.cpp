// `kvbench list`: the cases a config expands to, without a GPU.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "cli/plugins.hpp"
#include "core/csv.hpp"
#include "core/operation.hpp"
#include "core/shard.hpp"
#include "core/sweep.hpp"
#include "ops/launch.hpp"
#include "runtime/runner.hpp"

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

// `list --plan`: each case's launch plan, on the named device profile (h200, h100) or, when
// none is named, on the real device (NoDeviceError without one).
struct ListPlan {
  bool show = false;
  std::string device_profile;
};

// How long `list --plan` waits for one case's plan when a plugin's supports() is asked.
constexpr int kPlanSeconds = 30;

// Each listed case's plan (the runner's, ops/launch.hpp). A plan asks a plugin variant's
// supports(); one that crashes, ends the process or hangs would end `list`, so with shared-object
// plugins loaded the plans are made in a child process (as `run` asks in its workers), and such a
// plugin is refused naming the case and the plugin. Python variants are asked here: a fork of a
// process running Python may deadlock, and their errors are caught as exceptions already.
std::vector<std::string> plans_of(const std::vector<const Case*>& cases,
                                  const kernels::DeviceProps& device,
                                  const plugin::Plugins* plugins) {
  const auto plan = [&](std::size_t i) { return case_plan(*cases[i], device).text; };
  bool shared_objects = false, in_process = false;
  for (const plugin::PluginInfo& i : plugins ? plugins->info() : std::vector<plugin::PluginInfo>{})
    (i.in_process ? in_process : shared_objects) = true;
  if (!shared_objects || in_process) {
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < cases.size(); ++i) texts.push_back(plan(i));
    return texts;
  }
  try {
    return plugin::ask_in_child(cases.size(), plan, kPlanSeconds);
  } catch (const plugin::AskEnded& e) {
    const Case& c = *cases[e.index];
    const std::string name(to_string(c.variant));
    const plugin::PluginVariant* pv = plugins->find(name);
    throw plugin::PluginError((pv ? "plugin " + pv->plugin + ": " : std::string()) + "variant " +
                              name + " " + e.what() + " planning " + describe(c) +
                              " (list --plan asks its supports())");
  }
}

// `shard`: --shard I/N or slurm, the cases of that shard only; empty: all.
// `max_cases`: the expanded case count past which the config is refused (--max-cases).
// `max_tokens`: only cases with num_tokens up to it (--max-tokens), numbered as in the sweep.
int cmd_list(const std::string& config_path, const std::string& format, const ListPlan& plan,
             const std::string& shard, std::uint64_t max_cases, std::int64_t max_tokens,
             const std::vector<std::string>& plugins, const std::vector<std::string>& variants) {
  // The config may name the plugins' variants.
  const plugin::Plugins* loaded = plugins.empty() ? nullptr : &load_plugin_variants(plugins);
  Config config = load_config(config_path, max_cases);
  if (!variants.empty()) config.cases = with_variants(config.cases, variants);
  // --shard: the cases of that shard only, numbered as in the whole sweep.
  Shard s;
  if (!shard.empty()) s = parse_shard(shard, [](const char* name) { return std::getenv(name); });
  const auto listed = [&](std::size_t i) {
    return s.holds(i) && config.cases[i].num_tokens <= max_tokens;
  };
  kernels::DeviceProps storage;
  const kernels::DeviceProps* device =
      plan.show ? &plan_device(plan.device_profile, storage) : nullptr;
  std::vector<std::size_t> shown;  // the listed cases' numbers in the whole sweep
  std::vector<const Case*> shown_cases;
  for (std::size_t i = 0; i < config.cases.size(); ++i)
    if (listed(i)) {
      shown.push_back(i);
      shown_cases.push_back(&config.cases[i]);
    }
  const std::vector<std::string> plans =
      device ? plans_of(shown_cases, *device, loaded) : std::vector<std::string>{};
  if (format == "csv") {
    // The case columns of the result CSV, so scripts can run the same cases elsewhere.
    std::cout << "case," << join_csv(case_columns()) << (device ? ",plan" : "") << '\n';
    for (std::size_t k = 0; k < shown.size(); ++k) {
      std::vector<std::string> fields = case_fields(*shown_cases[k]);
      if (device) fields.push_back(plans[k]);
      for (std::string& f : fields) f = csv_quoted(f);  // a plan's reason may hold a comma
      std::cout << shown[k] << ',' << join_csv(fields) << '\n';
    }
  } else {
    if (device)
      std::cout << "# launch plans on " << device->name << ": " << device->sm_count << " SMs, L2 "
                << device->l2_bytes / (1 << 20) << " MiB\n";
    for (std::size_t k = 0; k < shown.size(); ++k) {
      std::cout << shown[k] << ' ' << describe(*shown_cases[k]);
      if (device) std::cout << " | " << plans[k];
      std::cout << '\n';
    }
  }
  check_stdout();
  return kOk;
}

}  // namespace

Command add_list(CLI::App& app) {
  struct Args {
    std::string config_path, format = "text", shard;
    std::uint64_t max_cases = kDefaultMaxCases;
    std::int64_t max_tokens = kAllTokens;
    ListPlan plan;
    std::vector<std::string> plugins, variants;
  };
  auto a = std::make_shared<Args>();
  CLI::App* list = app.add_subcommand(
      "list", "Print the cases CONFIG expands to (with --plan, each case's launch plan)");
  list->add_option("config", a->config_path, "YAML sweep file")->required();
  list->add_option("--format", a->format, "text or csv")->check(CLI::IsMember({"text", "csv"}));
  list->add_option("--max-cases", a->max_cases,
                   "Refuse a config expanding to more cases than this (default 100000)")
      ->transform(integer_in(1, UINT64_MAX));
  CLI::Option* plan_flag =
      list->add_flag("--plan", a->plan.show, "Print each case's launch plan (docs/kernels.md)");
  list->add_option("--device-profile", a->plan.device_profile,
                   "Plan for this device instead of the real one: h200 or h100 (no GPU needed)")
      ->needs(plan_flag)
      ->check(non_empty());
  list->add_option("--shard", a->shard, "Only shard I of N (I/N), or `slurm`; numbers unchanged")
      ->check(non_empty());
  add_max_tokens_flag(list, a->max_tokens);
  add_plugin_flags(list, a->plugins, a->variants);
  return {list, [a] {
            return cmd_list(a->config_path, a->format, a->plan, a->shard, a->max_cases,
                            a->max_tokens, a->plugins, a->variants);
          }};
}

}  // namespace kvbench::cli
