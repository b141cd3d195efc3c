// `kvbench bounds`: the fastest plain write and move of each small case's bytes.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/bounds.hpp"
#include "core/file_io.hpp"
#include "kvbench_version.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/device_info.hpp"

namespace kvbench::cli {

int cmd_bounds(const std::string& results_path, const std::string& output,
               std::int64_t max_tokens, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  const ResultTable results = read_results(results_path);
  bound_cases(results, max_tokens);  // refuse bad rows before touching the GPU
  open_device();
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
  return kOk;
}

}  // namespace kvbench::cli
