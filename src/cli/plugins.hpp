// --plugin: kernels built outside kvbench, as variants of its operations (docs/plugins.md). The
// plugins are loaded (src/plugin/loader.hpp), their variants named and added to their operations
// (core/operation.hpp), so configs select them like kvbench's own; the runner launches them
// through LaunchOverride with the case's arguments as the ABI's (ops/launch.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "plugin/loader.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {

// `run` and `list`: --plugin PATH, repeatable, and --variants A,B (core/operation.hpp,
// with_variants), which runs a config's cases with other variants, a plugin's among them.
void add_plugin_flags(CLI::App* command, std::vector<std::string>& paths,
                      std::vector<std::string>& variants);

// Loads `paths` in order and adds every variant they register; once per process (a second call
// must give the same paths). Throws plugin::PluginError (exit 3) for a plugin that cannot be
// used, naming it. Returns every plugin of the process, the in-process variants' sources among
// them.
const plugin::Plugins& load_plugin_variants(const std::vector<std::string>& paths);

// A variant of the program hosting kvbench (include/kvbench/host.h), defined in `source`: checked
// as a plugin's, recorded with its source as a plugin is, added to its operation. Throws
// plugin::PluginError "SOURCE: why" when refused.
void add_in_process_variant(const kvb_variant& variant, const std::string& source);

// `base` with a launch for each plugin variant: it hands the case's arguments to the plugin's
// launch on the case's stream; a non-zero return throws LaunchError with the plugin's message.
LaunchOverride with_plugin_launches(LaunchOverride base, const plugin::Plugins& plugins);

// The sidecar's and the worker setup's record of the plugins: [{path, size, sha256, variants,
// kernels}], kernels[k] the operation of variants[k] (as the CSV's `kernel` column names it).
std::string plugins_json(const plugin::Plugins& plugins);
// Throws plugin::PluginError when a plugin's file is not the one the run recorded (`expected`,
// plugins_json's text): a worker runs exactly the bytes the sidecar names. In-process variants'
// sources are compared too: a worker's host registers them again from the same files.
void check_plugins_unchanged(const plugin::Plugins& plugins, const std::string& expected);

}  // namespace kvbench::cli
