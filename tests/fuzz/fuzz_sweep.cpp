// Fuzzes the YAML sweep parser: every input either parses or throws ConfigError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // A low case ceiling: the parser's limit is under test, not the machine's memory.
    kvbench::parse_config(text, "fuzz.yaml", 10000);
  } catch (const kvbench::ConfigError&) {
  }
  return 0;
}
