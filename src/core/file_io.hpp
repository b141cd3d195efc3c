// Whole-file reads and all-or-nothing writes of the small text files kvbench writes (sidecars,
// JUnit reports, calibration files).
#pragma once

#include <string>

namespace kvbench {

// Writes `text` to `path` through a temporary file and a rename, so readers never see half.
// Throws std::runtime_error naming the path when it cannot.
void write_file_atomic(const std::string& path, const std::string& text);

// The file's bytes; empty when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace kvbench
