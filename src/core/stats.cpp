#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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
  s.median_ci_rel = median_ci_rel(std::move(v));
  return s;
}

double median_ci_rel(std::vector<double> v) {
  const double inf = std::numeric_limits<double>::infinity();
  const double n = static_cast<double>(v.size());
  const double j = std::floor(n / 2 - 0.98 * std::sqrt(n));  // 1-based ranks
  const double k = std::ceil(1 + n / 2 + 0.98 * std::sqrt(n));
  if (j < 1 || k > n) return inf;
  std::sort(v.begin(), v.end());
  const double median = percentile(v, 0.5);
  if (!(median > 0)) return inf;
  const double lo = v[static_cast<std::size_t>(j) - 1], hi = v[static_cast<std::size_t>(k) - 1];
  return (hi - lo) / 2 / median;
}

StopReason should_stop(const StopRule& rule, const std::vector<double>& samples_us, double timed_s,
                       double wall_s) {
  if (!samples_us.empty() && wall_s >= rule.timeout_s) return StopReason::timeout;
  if (static_cast<int>(samples_us.size()) < rule.min_samples || timed_s < rule.min_time_s)
    return StopReason::more;
  return median_ci_rel(samples_us) <= rule.target_noise ? StopReason::converged : StopReason::more;
}

}  // namespace kvbench
