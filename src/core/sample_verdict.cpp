#include "core/sample_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kvbench {
namespace {

// The trimmed mean of `v`, sorted in place; with the winsorized variance when asked.
double trimmed_mean(std::vector<double>& v, double* winsorized_var = nullptr) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const auto g = static_cast<std::size_t>(std::floor(kTrimFraction * static_cast<double>(n)));
  const double sum = std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(g),
                                     v.end() - static_cast<std::ptrdiff_t>(g), 0.0);
  const double mean = sum / static_cast<double>(n - 2 * g);
  if (winsorized_var && n > 1) {
    const double lo = v[g], hi = v[n - g - 1];
    double wsum = 0;
    for (double x : v) wsum += std::clamp(x, lo, hi);
    const double wmean = wsum / static_cast<double>(n);
    double ss = 0;
    for (double x : v) ss += (std::clamp(x, lo, hi) - wmean) * (std::clamp(x, lo, hi) - wmean);
    *winsorized_var = ss / static_cast<double>(n - 1);
  }
  return mean;
}

// The standard error of the trimmed mean from kErrorBatches contiguous batches (0 when there
// are too few samples for batches of 10).
double batch_se(const std::vector<double>& samples) {
  const std::size_t k = kErrorBatches, per = samples.size() / k;
  if (per < 10) return 0;
  std::vector<double> means;
  for (std::size_t b = 0; b < k; ++b) {
    const auto first = samples.begin() + static_cast<std::ptrdiff_t>(b * per);
    const auto last = b + 1 == k ? samples.end() : first + static_cast<std::ptrdiff_t>(per);
    std::vector<double> batch(first, last);
    means.push_back(trimmed_mean(batch));
  }
  const double m = std::accumulate(means.begin(), means.end(), 0.0) / static_cast<double>(k);
  double ss = 0;
  for (double x : means) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(k - 1) / static_cast<double>(k));
}

}  // namespace

double timer_step(const std::vector<double>& samples_us) {
  std::vector<double> v = samples_us;
  std::sort(v.begin(), v.end());
  double step = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const double d = v[i] - v[i - 1];
    if (d > 0 && (step == 0 || d < step)) step = d;
  }
  return step;
}

SampleEstimate estimate(const std::vector<double>& samples_us, double step_us) {
  SampleEstimate e;
  e.n = samples_us.size();
  if (e.n == 0) return e;
  std::vector<double> v = samples_us;
  double wvar = 0;
  e.mean_us = trimmed_mean(v, &wvar);
  const double n = static_cast<double>(e.n);
  const double g = std::floor(kTrimFraction * n);
  const double yuen = std::sqrt(wvar) / ((1 - 2 * g / n) * std::sqrt(n));
  const double quantized = step_us / std::sqrt(12 * n);
  e.se_us = std::max({yuen, batch_se(samples_us), quantized});
  return e;
}

namespace {

// The interval and verdict of `j`, its estimates set, with `half` the interval's half-width in
// log ratio at least `floor_half`.
void decide(SampleJudgement& j, double threshold, double floor_half) {
  const SampleEstimate &b = j.baseline, &c = j.current;
  if (b.mean_us <= 0 || c.mean_us <= 0) return;  // nothing to divide: ambiguous
  j.ratio = c.mean_us / b.mean_us;
  const double rb = b.se_us / b.mean_us, rc = c.se_us / c.mean_us;
  const double half = std::max(floor_half, kSampleZ * std::sqrt(rb * rb + rc * rc));
  j.lo = j.ratio * std::exp(-half);
  j.hi = j.ratio * std::exp(half);
  if (b.n < kMinVerdictSamples || c.n < kMinVerdictSamples) return;
  const double flag = 1 + threshold / 2, band = 1 + threshold;
  if (j.lo > flag)
    j.verdict = Verdict::slower;
  else if (j.hi < 1 / flag)
    j.verdict = Verdict::faster;
  else if (j.lo > 1 / band && j.hi < band)
    j.verdict = Verdict::same;
}

}  // namespace

SampleJudgement judge_samples(const std::vector<double>& baseline_us, double baseline_step_us,
                              const std::vector<double>& current_us, double current_step_us,
                              double threshold) {
  SampleJudgement j;
  j.baseline = estimate(baseline_us, baseline_step_us);
  j.current = estimate(current_us, current_step_us);
  decide(j, threshold, 0);
  return j;
}

double t_quantile(int df) {
  static constexpr double kT[] = {636.62, 31.60, 12.92, 8.61, 6.87, 5.96, 5.41, 5.04, 4.78, 4.59,
                                  4.44,   4.32,  4.22,  4.14, 4.07, 4.01, 3.97, 3.92, 3.88, 3.85};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 20) return kT[df - 1];
  return df <= 30 ? 3.73 : df <= 60 ? 3.55 : df <= 120 ? 3.42 : kSampleZ;  // at df 25, 40, 80
}

SampleJudgement judge_rounds(const std::vector<std::vector<double>>& baseline_rounds,
                             const std::vector<std::vector<double>>& current_rounds,
                             double threshold) {
  std::vector<double> base, cur, logs;
  const std::size_t rounds = std::min(baseline_rounds.size(), current_rounds.size());
  for (std::size_t r = 0; r < rounds; ++r) {
    std::vector<double> b = baseline_rounds[r], c = current_rounds[r];
    base.insert(base.end(), b.begin(), b.end());
    cur.insert(cur.end(), c.begin(), c.end());
    if (b.empty() || c.empty()) continue;
    const double mb = trimmed_mean(b), mc = trimmed_mean(c);
    if (mb > 0 && mc > 0) logs.push_back(std::log(mc / mb));
  }
  SampleJudgement j;
  j.baseline = estimate(base, timer_step(base));
  j.current = estimate(cur, timer_step(cur));
  // The spread of the rounds' ratios: fewer than two rounds cannot show it, so no verdict.
  double half = std::numeric_limits<double>::infinity();
  if (logs.size() >= 2) {
    const double n = static_cast<double>(logs.size());
    const double m = std::accumulate(logs.begin(), logs.end(), 0.0) / n;
    double ss = 0;
    for (double x : logs) ss += (x - m) * (x - m);
    half = t_quantile(static_cast<int>(logs.size()) - 1) * std::sqrt(ss / (n - 1) / n);
  }
  decide(j, threshold, half);
  return j;
}

}  // namespace kvbench
