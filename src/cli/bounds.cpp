// `kvbench bounds`: the fastest plain write and move of each small case's bytes.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <optional>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/bounds.hpp"
#include "core/file_io.hpp"
#include "core/footprint.hpp"
#include "kvbench_version.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/device_info.hpp"

namespace kvbench::cli {

int cmd_bounds(const std::string& results_path, const std::string& output,
               std::int64_t max_tokens, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  ResultTable results = read_results(results_path);
  const std::vector<BoundCase> cases = bound_cases(results, max_tokens);  // bad rows: before the GPU
  open_device();
  // Memory admission: the floors of a case copy its bytes between two buffers of its largest
  // side. A case that does not fit is left out, one line each, and the exit code says so.
  std::size_t free = 0, capacity = 0;
  std::size_t refused = 0;
  if (cudaMemGetInfo(&free, &capacity) == cudaSuccess) {
    constexpr std::uint64_t kMargin = std::uint64_t{256} << 20;
    const std::uint64_t avail = free > kMargin ? free - kMargin : 0;
    std::vector<bool> drop(results.rows.size(), false);
    for (const BoundCase& c : cases) {
      Footprint f;
      f.device_fixed = 2 * static_cast<std::uint64_t>(std::max(c.read_bytes, c.write_bytes));
      const std::string why = admission_refusal(f, 1, std::nullopt, avail);
      if (why.empty()) continue;
      drop[c.row] = true;
      ++refused;
      std::fprintf(stderr, "kvbench bounds: %s:%u: %s; left out\n", results_path.c_str(),
                   results.rows[c.row].line, why.c_str());
    }
    std::deque<ResultRow> kept;
    for (std::size_t i = 0; i < results.rows.size(); ++i)
      if (!drop[i]) kept.push_back(results.rows[i]);
    results.rows = std::move(kept);
  }
  const std::vector<BoundRow> rows =
      measure_bounds(results, max_tokens, s, [](std::size_t done, std::size_t total) {
        std::fprintf(stderr, "\rkvbench bounds: %zu/%zu byte splits timed", done, total);
        if (done == total) std::fprintf(stderr, "\n");
      });
  const DeviceDetails d = device_details();
  std::string text = bounds_header() + "\n";
  for (BoundRow r : rows) {
    r.device = d.name;
    r.device_uuid = d.uuid;
    r.git_sha = std::string(kGitSha) + (kGitDirty ? "+dirty" : "");
    text += bounds_line(r) + "\n";
  }
  write_file_atomic(output, text);
  std::printf("%s: %zu rows of num_tokens <= %lld from %s\n", output.c_str(), rows.size(),
              static_cast<long long>(max_tokens), results_path.c_str());
  return refused ? kFailed : kOk;
}

}  // namespace kvbench::cli
