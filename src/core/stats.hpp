// Summary statistics of timing samples and the adaptive stopping rule. Pure.
#pragma once

#include <vector>

namespace kvbench {

struct Stats {
  int samples = 0;
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, p10_us = 0, p90_us = 0;
  double rel_stdev = 0;      // sample standard deviation / mean
  double median_ci_rel = 0;  // half-width of the median's 95% CI / median (median_ci_rel())
};

// Percentiles interpolate linearly between order statistics (numpy's default).
Stats summarize(std::vector<double> samples_us);

// Relative half-width of the distribution-free 95% confidence interval of the median: with n
// samples in order, the interval runs from the j-th to the k-th, j = floor(n/2 - 0.98 sqrt(n)),
// k = ceil(1 + n/2 + 0.98 sqrt(n)) (1-based). Robust to the rare slow outlier, unlike the
// standard deviation. Infinity when n is too small for the interval to exist (n < 6) or the
// median is not positive.
double median_ci_rel(std::vector<double> samples_us);

// When adaptive sampling stops (RunSettings has the meaning of each limit).
struct StopRule {
  int min_samples = 10;
  double min_time_s = 0;    // sum of the timed windows
  double target_noise = 0;  // bound on median_ci_rel
  double timeout_s = 0;     // wall clock
};
enum class StopReason { more, converged, timeout };
StopReason should_stop(const StopRule& rule, const std::vector<double>& samples_us, double timed_s,
                       double wall_s);

}  // namespace kvbench
