#include "core/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kvbench {

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string progress_line(std::size_t done, std::size_t total, double elapsed_s) {
  std::string eta = "?";
  if (done > 0 && done <= total)
    eta =
        format_duration(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done));
  return "[" + std::to_string(done) + "/" + std::to_string(total) + "] " +
         format_duration(elapsed_s) + " elapsed, ETA " + eta;
}

Progress::Progress(std::size_t total)
    : total_(total), active_(isatty(STDERR_FILENO) == 1), t0_(std::chrono::steady_clock::now()) {}

void Progress::show(std::size_t done) {
  if (!active_) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::fprintf(stderr, "\r\033[K%s", progress_line(done, total_, s).c_str());
  std::fflush(stderr);
}

void Progress::clear() {
  if (active_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace kvbench
