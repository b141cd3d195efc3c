// Summary statistics of timing samples. Pure.
#pragma once

#include <vector>

namespace kvbench {

struct Stats {
  int samples = 0;
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, p10_us = 0, p90_us = 0;
  double rel_stdev = 0;  // sample standard deviation / mean
};

// Percentiles interpolate linearly between order statistics (numpy's default).
Stats summarize(std::vector<double> samples_us);

}  // namespace kvbench
