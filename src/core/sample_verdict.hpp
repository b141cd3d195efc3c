// Verdicts from timing samples, not from medians: how sure a change is, at a threshold. Pure.
// docs/gate.md ("Verdicts from samples") says why these statistics and not others.
//
// Each side's samples become a 10%-trimmed mean with a standard error; the two become an
// interval of their ratio (current / baseline) at kSampleZ standard errors; the interval against
// the threshold t becomes the verdict:
//   slower     the whole interval above 1 + t/2   (surely slower by more than half the threshold)
//   faster     the whole interval below 1/(1 + t/2)
//   same       the whole interval inside (1/(1 + t), 1 + t)
//   ambiguous  none of these: the data cannot tell at the threshold (measure again)
#pragma once

#include <cstddef>
#include <vector>

#include "core/types.hpp"

namespace kvbench {

// Share of samples trimmed from each end before the mean: heavy tails (a preempted launch, a
// clock dip) fall outside it, while a quantized timer's dithered steps still average below a
// step (a median would move by whole steps).
inline constexpr double kTrimFraction = 0.1;
// Standard errors each side of the estimate: 3.29 is 99.9% two-sided, so an unchanged case is
// called slower (or faster) with a probability under 0.05% however noisy it is.
inline constexpr double kSampleZ = 3.29;
// Fewer samples than this on either side: ambiguous, whatever they say.
inline constexpr std::size_t kMinVerdictSamples = 20;
// Contiguous batches whose means bound the standard error from below when samples are
// correlated in time (launches of one window, a drifting clock): batch means, as in
// simulation output analysis.
inline constexpr std::size_t kErrorBatches = 20;

// The step of a quantized timer, from the samples themselves: the smallest positive difference
// between two distinct values (µs; 0 for fewer than two distinct values). A timer that is not
// quantized gives a step far below its noise, which then changes nothing.
double timer_step(const std::vector<double>& samples_us);

// One side's samples, in the order they were taken.
struct SampleEstimate {
  std::size_t n = 0;
  double mean_us = 0;  // the trimmed mean
  double se_us = 0;    // its standard error: the largest of Yuen's (winsorized variance), the
                       // batch means', and the quantization floor step / sqrt(12 n)
};
SampleEstimate estimate(const std::vector<double>& samples_us, double step_us);

struct SampleJudgement {
  Verdict verdict = Verdict::ambiguous;
  double ratio = 0;       // current / baseline trimmed mean
  double lo = 0, hi = 0;  // the interval of the ratio
  SampleEstimate baseline, current;
};

// The verdict of `current` against `baseline` at `threshold` (0.05: 5%), each side's timer step
// given (timer_step() of its samples when the timer does not say).
SampleJudgement judge_samples(const std::vector<double>& baseline_us, double baseline_step_us,
                              const std::vector<double>& current_us, double current_step_us,
                              double threshold);

// Two-sided 99.9% quantile of Student's t with `df` degrees of freedom (kSampleZ for many).
double t_quantile(int df);

// As judge_samples, for samples taken in rounds, each round by fresh worker processes of both
// builds (kvbench ab): round r of each side is rounds[r]. Two processes of one build differ by
// a few percent at the smallest sizes (their allocations, their graphs), which no count of
// samples within a process averages out; so the interval is also at least t(R-1) standard
// errors of the mean of the R per-round log ratios of trimmed means, whichever is wider.
SampleJudgement judge_rounds(const std::vector<std::vector<double>>& baseline_rounds,
                             const std::vector<std::vector<double>>& current_rounds,
                             double threshold);

}  // namespace kvbench
