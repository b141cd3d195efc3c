#include "cli/plugins.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "core/operation.hpp"
#include "ops/launch.hpp"

namespace kvbench::cli {
namespace {

// The operation whose ABI value is `op` (the loader has checked that one has it).
Kernel kernel_of(std::int32_t op) {
  for (const Backend* b : backends())
    if (b->abi_op() == op) return b->kernel();
  throw plugin::PluginError("operation " + std::to_string(op) + " is not one kvbench has");
}

// The variant's `supports` over case c's arguments, at the addresses kvbench plans them.
std::string ask_supports(const plugin::PluginVariant& pv, const Case& c) {
  try {
    // A case the ABI cannot express (scale per_token_head) is refused here, whether or not the
    // variant has a `supports`.
    AbiArgs a;
    backend(c.kernel).plan_abi_args(c, a);
    if (!pv.supports) return "";
    const char* why = pv.supports(&a.args);
    if (!why) return "";
    const std::string reason = plugin::plugin_text(why);
    return !reason.empty() ? reason : "not supported (" + pv.name + " gave no reason)";
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
  // Split here rather than by CLI11's delimiter, which drops empty names: "optimized," is a typo,
  // not a list of one.
  command
      ->add_option_function<std::vector<std::string>>(
          "--variants",
          [&variants](const std::vector<std::string>& given) {
            for (const std::string& list : given) {
              std::size_t from = 0;
              for (std::size_t comma; (comma = list.find(',', from)) != std::string::npos;
                   from = comma + 1)
                variants.push_back(list.substr(from, comma - from));
              variants.push_back(list.substr(from));
            }
          },
          "Run each case with these variants instead of the config's (comma-separated; "
          "cases of an operation with none of them are left out)")
      ->check(CLI::Validator(
          [](std::string& list) -> std::string {
            const bool empty_name = list.empty() || list.front() == ',' || list.back() == ',' ||
                                    list.find(",,") != std::string::npos;
            return empty_name ? "expected comma-separated variant names, got '" + list +
                                    "' (an empty name)"
                              : "";
          },
          ""));
}

namespace {

// The plugins and in-process variants of this process, in the order they came.
plugin::Plugins& process_plugins() {
  static plugin::Plugins plugins;
  return plugins;
}

// kvbench's own variant names, which no other may take, and the operations the plugin ABI has.
plugin::Known known_to_plugins() {
  plugin::Known known;
  for (Variant v : all_values<Variant>())
    if (!is_external(v)) known.variants.emplace_back(to_string(v));
  for (const Backend* b : backends())
    if (b->abi_op() != 0) known.ops.push_back(b->abi_op());
  return known;
}

// Names the variant and adds it to its operation, so configs and --variants select it.
void add_to_operation(const plugin::PluginVariant& pv, const std::string& origin) {
  const Kernel k = kernel_of(pv.op);
  // The plugin's variant of another operation may have named it already (the loader let no
  // other plugin take a name, nor kvbench's own).
  bool named = true;
  try {
    from_string<Variant>(pv.name);
  } catch (const std::invalid_argument&) {
    named = false;
  }
  const Variant v = named ? from_string<Variant>(pv.name) : name_external_variant(pv.name);
  add_external_variant(k, {v, pv.why, [pv](const Case& c) { return ask_supports(pv, c); }}, origin);
}

}  // namespace

const plugin::Plugins& load_plugin_variants(const std::vector<std::string>& paths) {
  static std::optional<std::vector<std::string>> loaded_paths;
  if (loaded_paths) {
    if (paths != *loaded_paths) throw plugin::PluginError("plugins are loaded once per process");
    return process_plugins();
  }
  plugin::Plugins& all = process_plugins();
  const std::size_t before = all.variants().size();
  all.load(paths, known_to_plugins());
  for (std::size_t i = before; i < all.variants().size(); ++i)
    add_to_operation(all.variants()[i], "plugin " + all.variants()[i].plugin);
  loaded_paths = paths;
  return all;
}

void add_in_process_variant(const kvb_variant& variant, const std::string& source) {
  plugin::Plugins& all = process_plugins();
  all.add_in_process(variant, source, known_to_plugins());
  add_to_operation(all.variants().back(), source);
}

LaunchOverride with_plugin_launches(LaunchOverride base, const plugin::Plugins& plugins) {
  for (const plugin::PluginVariant& pv : plugins.variants()) {
    const Kernel k = kernel_of(pv.op);
    bool in_process = false;
    for (const plugin::PluginInfo& i : plugins.info())
      in_process = in_process || (i.in_process && i.path == pv.plugin);
    base.on_variant(
        k, from_string<Variant>(pv.name), [pv, k, in_process](const void* args, cudaStream_t s) {
          AbiArgs a;
          backend(k).to_abi(args, a);
          char message[512] = {};
          const std::int32_t rc = pv.launch(&a.args, s, message, sizeof message);
          message[sizeof message - 1] = '\0';
          const std::string text = plugin::plugin_text(message);
          if (rc == 0) return cudaGetLastError();  // a kernel the variant could not launch
          // An in-process variant's message is its error ("RuntimeError: ..."), its source named.
          if (in_process && !text.empty())
            throw LaunchError("variant " + pv.name + " (" + pv.plugin + "): " + text);
          throw LaunchError("plugin " + pv.plugin + ": variant " + pv.name + ": launch returned " +
                            std::to_string(rc) + (text.empty() ? "" : ": " + text));
        });
  }
  return base;
}

std::string plugins_json(const plugin::Plugins& plugins) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const plugin::PluginInfo& i : plugins.info()) {
    // Each variant's operation, in the order of `variants`: merge numbers the cases of shards
    // run with them without loading the plugin.
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const plugin::PluginVariant& pv : plugins.variants())
      if (pv.plugin == i.path) kernels.push_back(std::string(to_string(kernel_of(pv.op))));
    nlohmann::ordered_json entry = {{"path", i.path},
                                    {"size", i.size},
                                    {"sha256", i.sha256},
                                    {"variants", i.variants},
                                    {"kernels", kernels}};
    if (i.in_process) entry["in_process"] = true;
    list.push_back(entry);
  }
  return list.dump();
}

void check_plugins_unchanged(const plugin::Plugins& plugins, const std::string& expected) {
  const nlohmann::json want = nlohmann::json::parse(expected, nullptr, false);
  const nlohmann::json have = nlohmann::json::parse(plugins_json(plugins));
  if (want != have)
    throw plugin::PluginError("the plugins are not the files the run started with (run: " +
                              expected + "; now: " + have.dump() + ")");
}

bool plugin_loaded() { return plugin::plugin_loaded(); }

}  // namespace kvbench::cli
