#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvbench {
namespace {

double percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.samples = static_cast<int>(v.size());
  s.min_us = v.front();
  s.max_us = v.back();
  s.median_us = percentile(v, 0.5);
  s.p10_us = percentile(v, 0.1);
  s.p90_us = percentile(v, 0.9);
  const double n = static_cast<double>(v.size());
  s.mean_us = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (v.size() > 1 && s.mean_us > 0) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean_us) * (x - s.mean_us);
    s.rel_stdev = std::sqrt(ss / (n - 1)) / s.mean_us;
  }
  return s;
}

}  // namespace kvbench
