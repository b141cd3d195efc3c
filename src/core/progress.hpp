// The progress line `kvbench run` keeps on stderr when it is a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace kvbench {

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

// "[3/40] 12s elapsed, ETA 2m28s": the ETA assumes the remaining cases take as long as the
// finished ones did on average; "ETA ?" before any case has finished.
std::string progress_line(std::size_t done, std::size_t total, double elapsed_s);

// Shows progress_line on stderr, redrawn in place; silent when stderr is not a terminal.
class Progress {
 public:
  explicit Progress(std::size_t total);
  void show(std::size_t done);
  void clear();

 private:
  std::size_t total_;
  bool active_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace kvbench
