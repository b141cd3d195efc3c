// `kvbench flush-study`: how each way of emptying L2 before a cold sample affects the time of
// the timed kernel (docs/measurement.md has the reasoning and the H200 figures). The timed
// kernel is the 16-byte copy (src and dst of `bytes` each), a streaming read + write like the
// KV-cache kernels, so dirty lines left in L2 by the flush cost it write-backs as they would them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/metadata.hpp"
#include "core/stats.hpp"

namespace kvbench {

struct FlushStudyRow {
  std::size_t bytes = 0;  // per buffer; the copy moves 2x this
  std::string method;     // hot, memset, read, rotate, memset_only, read_only
  int buffer_sets = 1;    // rotate: how many src/dst pairs are cycled
  Stats stats;            // µs per timed window
  double gbps = 0;        // 2 * bytes / median (0 for the flush-only rows)
};

// One row per method and size; `settings` gives the sampling rules (mode is set per method).
std::vector<FlushStudyRow> flush_study(const DeviceDetails& device,
                                       const std::vector<std::size_t>& sizes,
                                       const RunSettings& settings);

}  // namespace kvbench
