#include "cli/plugins.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/flags.hpp"
#include "core/operation.hpp"
#include "ops/launch.hpp"

namespace kvbench::cli {
namespace {

// The operation whose ABI value is `op` (the loader has checked that one has it).
Kernel kernel_of(std::int32_t op) {
  for (const Operation* o : operations())
    if (abi_op(o->kernel()) == op) return o->kernel();
  throw plugin::PluginError("operation " + std::to_string(op) + " is not one kvbench has");
}

// The variant's `supports` over case c's arguments, at the addresses kvbench plans them.
std::string ask_supports(const plugin::PluginVariant& pv, const Case& c) {
  if (!pv.supports) return "";
  try {
    AbiArgs a;
    plan_abi_args(c, a);
    const char* why = pv.supports(&a.args);
    if (!why) return "";
    return *why ? std::string(why) : "not supported (" + pv.name + " gave no reason)";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

void add_plugin_flags(CLI::App* command, std::vector<std::string>& paths,
                      std::vector<std::string>& variants) {
  command
      ->add_option("--plugin", paths,
                   "Load variants from this shared object (repeatable; docs/plugins.md)")
      ->check(non_empty());
  command
      ->add_option("--variants", variants,
                   "Run each case with these variants instead of the config's (comma-separated; "
                   "cases of an operation with none of them are left out)")
      ->delimiter(',')
      ->check(non_empty());
}

const plugin::Plugins& load_plugin_variants(const std::vector<std::string>& paths) {
  static std::optional<plugin::Plugins> loaded;
  static std::vector<std::string> loaded_paths;
  if (loaded) {
    if (paths != loaded_paths) throw plugin::PluginError("plugins are loaded once per process");
    return *loaded;
  }
  std::vector<std::string> taken;
  for (Variant v : all_values<Variant>()) taken.emplace_back(to_string(v));
  plugin::Plugins p = plugin::load_plugins(paths, taken);
  for (const plugin::PluginVariant& pv : p.variants()) {
    const Kernel k = kernel_of(pv.op);
    const Variant v = name_external_variant(pv.name);
    add_external_variant(k, {v, pv.why, [pv](const Case& c) { return ask_supports(pv, c); }},
                         "plugin " + pv.plugin);
  }
  loaded_paths = paths;
  loaded = std::move(p);
  return *loaded;
}

LaunchOverride with_plugin_launches(LaunchOverride base, const plugin::Plugins& plugins) {
  for (const plugin::PluginVariant& pv : plugins.variants()) {
    const Kernel k = kernel_of(pv.op);
    base.on_variant(from_string<Variant>(pv.name), [pv, k](const void* args, cudaStream_t s) {
      AbiArgs a;
      to_abi(k, args, a);
      char message[512] = {};
      const std::int32_t rc = pv.launch(&a.args, s, message, sizeof message);
      message[sizeof message - 1] = '\0';
      if (rc != 0)
        throw LaunchError("plugin " + pv.plugin + ": variant " + pv.name + ": launch returned " +
                          std::to_string(rc) + (message[0] ? ": " + std::string(message) : ""));
      return cudaGetLastError();  // a kernel the plugin could not launch
    });
  }
  return base;
}

std::string plugins_json(const plugin::Plugins& plugins) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const plugin::PluginInfo& i : plugins.info())
    list.push_back(
        {{"path", i.path}, {"size", i.size}, {"sha256", i.sha256}, {"variants", i.variants}});
  return list.dump();
}

void check_plugins_unchanged(const plugin::Plugins& plugins, const std::string& expected) {
  const nlohmann::json want = nlohmann::json::parse(expected, nullptr, false);
  const nlohmann::json have = nlohmann::json::parse(plugins_json(plugins));
  if (want != have)
    throw plugin::PluginError("the plugins are not the files the run started with (run: " +
                              expected + "; now: " + have.dump() + ")");
}

}  // namespace kvbench::cli
