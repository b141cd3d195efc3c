#include "core/kernel_records.hpp"

#include <algorithm>

namespace kvbench {
namespace {

double us_between(std::uint64_t from_ns, std::uint64_t to_ns) {
  return (static_cast<double>(to_ns) - static_cast<double>(from_ns)) / 1000.0;
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool invalid_record(const KernelRecord& r) { return r.start_ns == 0 || r.end_ns < r.start_ns; }

ReplayTiming time_replay(std::vector<KernelRecord> records, const ReplayShape& shape) {
  ReplayTiming t;
  std::vector<KernelRecord> kept;
  for (const KernelRecord& r : records) {
    if (r.graph_id == 0)
      ++t.foreign;
    else if (invalid_record(r))
      ++t.dropped;
    else
      kept.push_back(r);
  }
  const std::size_t per_step = shape.producer + shape.launch;
  if (per_step == 0 || shape.launch == 0) {
    t.problem = "the step has no timed kernel";
    return t;
  }
  if (kept.size() != shape.kernels()) {
    t.problem = std::to_string(kept.size()) + " valid kernel records in the replay (" +
                std::to_string(t.dropped) + " invalid dropped), the graph has " +
                std::to_string(shape.kernels()) + " kernels";
    return t;
  }
  for (const KernelRecord& r : kept)
    if (r.graph_id != kept.front().graph_id) {
      t.problem = "kernel records of graphs " + std::to_string(kept.front().graph_id) + " and " +
                  std::to_string(r.graph_id) + " in one replay";
      return t;
    }
  std::stable_sort(kept.begin(), kept.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  // Kernels [first, first + count) as one unit, after kernel first - 1 (if any).
  const auto unit = [&](std::size_t first, std::size_t count) {
    UnitTiming u;
    std::uint64_t end = 0;
    for (std::size_t i = first; i < first + count; ++i) end = std::max(end, kept[i].end_ns);
    u.duration_us = us_between(kept[first].start_ns, end);
    if (first > 0) {
      u.has_gap = true;
      u.gap_us = us_between(kept[first - 1].end_ns, kept[first].start_ns);
    }
    return u;
  };
  for (std::size_t step = 0; step < shape.steps; ++step) {
    const std::size_t first = step * per_step;
    if (shape.producer > 0) t.producers.push_back(unit(first, shape.producer));
    t.launches.push_back(unit(first + shape.producer, shape.launch));
  }
  std::uint64_t last_end = 0;
  for (const KernelRecord& r : kept) last_end = std::max(last_end, r.end_ns);
  t.span_us = us_between(kept.front().start_ns, last_end);
  t.complete = true;
  return t;
}

ReplaySummary summarize_replays(const std::vector<ReplayTiming>& replays) {
  ReplaySummary s;
  std::vector<double> gaps, producers, spans;
  for (const ReplayTiming& t : replays) {
    ++s.replays;
    s.dropped += t.dropped;
    if (!t.complete) {
      ++s.incomplete;
      continue;
    }
    for (const UnitTiming& u : t.launches) {
      s.launch_us.push_back(u.duration_us);
      if (u.has_gap) gaps.push_back(u.gap_us);
    }
    for (const UnitTiming& u : t.producers) producers.push_back(u.duration_us);
    spans.push_back(t.span_us);
  }
  s.launch_median_us = median_of(s.launch_us);
  s.gap_median_us = median_of(std::move(gaps));
  s.producer_median_us = median_of(std::move(producers));
  s.span_median_us = median_of(std::move(spans));
  return s;
}

}  // namespace kvbench
