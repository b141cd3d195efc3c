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
// used, naming it; nothing is loaded then.
const plugin::Plugins& load_plugin_variants(const std::vector<std::string>& paths);

// `base` with a launch for each plugin variant: it hands the case's arguments to the plugin's
// launch on the case's stream; a non-zero return throws LaunchError with the plugin's message.
LaunchOverride with_plugin_launches(LaunchOverride base, const plugin::Plugins& plugins);

// The sidecar's and the worker setup's record of the plugins: [{path, size, sha256, variants}].
std::string plugins_json(const plugin::Plugins& plugins);
// Throws plugin::PluginError when a plugin's file is not the one the run recorded (`expected`,
// plugins_json's text): a worker runs exactly the bytes the sidecar names.
void check_plugins_unchanged(const plugin::Plugins& plugins, const std::string& expected);

}  // namespace kvbench::cli
