// Whole-file reads and all-or-nothing writes of the small text files kvbench writes (sidecars,
// JUnit reports, calibration files).
#pragma once

#include <string>

namespace kvbench {

// Writes `text` to `path` through a temporary file and a rename, so readers never see half.
// A path that is a device node or FIFO (/dev/null, /dev/full, a pipe) is written in place
// instead, never replaced; a symlink's target is replaced, the link kept. Throws
// std::runtime_error naming the path when it cannot (a full device included).
void write_file_atomic(const std::string& path, const std::string& text);

// The file's bytes; empty when it cannot be read.
std::string read_file(const std::string& path);

// The JSON sidecar of the result CSV at `csv`: `<csv>.json` beside the file it names, so for a
// symlink to an existing file, beside its target (as write_file_atomic replaces the target):
// every reader and writer of a CSV reached through a link finds the one sidecar of its rows.
std::string sidecar_path(const std::string& csv);

// `text` in a sealed, unnamed in-memory file that other processes of this user open by path()
// (/proc/PID/fd/N) while this object lives. `run` hands its workers the config text it parsed
// and hashed this way: read once, so a config from a pipe works and no worker reads another
// version of the file. Throws std::runtime_error when the kernel refuses.
class SealedText {
 public:
  explicit SealedText(const std::string& text);
  ~SealedText();
  SealedText(const SealedText&) = delete;
  SealedText& operator=(const SealedText&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace kvbench
