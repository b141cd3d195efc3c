// Plugins: shared objects that register variants over the C ABI of include/kvbench/kvbench.h.
// Loading checks everything it can before any GPU work, and every refusal is one line naming
// the plugin, the symbol or the variant, and the version (kvbench exits 3 on it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kvbench/kvbench.h"

namespace kvbench::plugin {

// A plugin that cannot be used: "PATH: what is wrong".
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the sidecar records of a plugin: exactly which file ran.
struct PluginInfo {
  std::string path;    // as given
  std::uint64_t size;  // bytes
  std::string sha256;  // of those bytes
  std::vector<std::string> variants;
  // Registered by the program that hosts kvbench (include/kvbench/host.h), from this source
  // file, rather than loaded from a shared object.
  bool in_process = false;
};

// A variant a plugin registered, and where it came from.
struct PluginVariant {
  std::string name, why;
  std::int32_t op;  // enum kvb_op
  const char* (*supports)(const kvb_args*);
  std::int32_t (*launch)(const kvb_args*, void*, char*, std::size_t);
  std::string plugin;  // path of the plugin that registered it
};

// What kvbench has that a plugin registers against: its own variant names (no plugin may reuse
// one) and the plugin ABI's operations it runs (enum kvb_op values, in the registry's order).
struct Known {
  std::vector<std::string> variants;
  std::vector<std::int32_t> ops;
};

// The plugins of one process, loaded in order. They stay loaded as long as this object lives
// (their variants' functions point into them).
class Plugins {
 public:
  Plugins() = default;
  Plugins(Plugins&&) noexcept;
  Plugins& operator=(Plugins&&) noexcept;
  ~Plugins();

  const std::vector<PluginInfo>& info() const { return info_; }
  const std::vector<PluginVariant>& variants() const { return variants_; }
  // The variant called `name`, or nullptr.
  const PluginVariant* find(const std::string& name) const;

  // Loads each shared object in order, after those already here (load_plugins below).
  void load(const std::vector<std::string>& paths, const Known& known);
  // Registers one variant of the hosting program, with the checks a plugin's add_variant makes;
  // `source` is the file that defines it, recorded (size, SHA-256) as a plugin's is. Throws
  // PluginError "SOURCE: why" for a bad or clashing name, an unknown operation, no launch, or a
  // source that cannot be read.
  void add_in_process(const kvb_variant& variant, const std::string& source, const Known& known);

 private:
  std::vector<PluginInfo> info_;
  std::vector<PluginVariant> variants_;
  std::vector<void*> handles_;
};

// Loads each path in order. A plugin variant may not reuse a name `known` has, nor another
// plugin's, and names an operation of `known`'s. Throws PluginError for a missing, unreadable
// or non-ELF file, a file the dynamic loader refuses, a missing symbol, an ABI version other
// than KVBENCH_ABI_VERSION, a load or init that crashes, exits, throws or takes more than 30 s
// (each tried first in a child process), an init that fails, or a variant with a bad or clashing
// name, an unknown operation or no launch function.
Plugins load_plugins(const std::vector<std::string>& paths, const Known& known);

// Whether this process has loaded a plugin (dlopen, beyond the probe child): its destructors
// would run when the process exits, so kvbench's executable ends with _Exit instead (main.cpp).
bool plugin_loaded();

// Whether `name` is a valid variant name: [a-z0-9_], 1 to 32 characters.
bool valid_variant_name(const std::string& name);

// Whether s is all well-formed UTF-8 with no control character (NUL included): what a path must
// be for the sidecar (JSON) to record it.
bool plain_utf8(std::string_view s);

// A plugin's own text (a fail() message, a `why`, a supports() reason, a launch message) as
// kvbench prints it and writes it into rows: one line of valid UTF-8 of at most 300 bytes. Bytes
// that are not UTF-8 become '?', control characters (a newline too) a space, and a longer text
// is cut at a character, ending in "...". Null: "".
std::string plugin_text(const char* text);

// Calls answer(0) .. answer(n - 1) in a child process and returns their texts (one line each), so
// that a plugin function among them that crashes, ends the process or hangs costs a refusal, not
// the caller. Throws AskEnded naming the first question whose answer did not come back, or
// std::runtime_error with the message of an exception answer threw. At most `seconds` a question.
struct AskEnded : std::runtime_error {
  AskEnded(std::size_t at, const std::string& what) : std::runtime_error(what), index(at) {}
  std::size_t index;  // the question that did not come back
};
std::vector<std::string> ask_in_child(std::size_t n,
                                      const std::function<std::string(std::size_t)>& answer,
                                      int seconds);

}  // namespace kvbench::plugin
