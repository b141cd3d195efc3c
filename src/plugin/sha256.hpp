// SHA-256 (FIPS 180-4) of a file's bytes, so that a sidecar names exactly which plugin ran.
#pragma once

#include <cstdint>
#include <string>

namespace kvbench::plugin {

// Lowercase hex digest of `data`.
std::string sha256_hex(const std::string& data);

}  // namespace kvbench::plugin
