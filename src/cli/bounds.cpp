// `kvbench bounds`: the fastest plain kernels moving each case's bytes (runtime/bounds_runner.hpp).
#include "core/bounds.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "core/file_io.hpp"
#include "core/footprint.hpp"
#include "core/operation.hpp"
#include "core/outputs.hpp"
#include "kvbench_version.hpp"
#include "runtime/bounds_runner.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {
namespace {

// Memory admission: the floors of a case copy its bytes between two buffers of its largest side,
// and a scatter (the cache write's) needs its inputs, its whole destination and a row offset per
// token; one of them at a time, once per buffer set of the row. A case that does not fit is dropped
// from `results`, one line each; returns how many were.
std::size_t leave_out_what_does_not_fit(ResultTable& results, const std::vector<BoundCase>& cases,
                                        const std::string& results_path) {
  std::size_t free = 0, capacity = 0;
  std::size_t refused = 0;
  if (cudaMemGetInfo(&free, &capacity) == cudaSuccess) {
    constexpr std::uint64_t kMargin = std::uint64_t{256} << 20;
    const std::uint64_t avail = free > kMargin ? free - kMargin : 0;
    std::vector<bool> drop(results.rows.size(), false);
    for (const BoundCase& c : cases) {
      Footprint f;
      f.device_per_set = 2 * static_cast<std::uint64_t>(std::max(c.read_bytes, c.write_bytes));
      if (const auto shape = operation(c.c.kernel).scatter_shape(c.c)) {
        const auto scatter = static_cast<std::uint64_t>(2 * shape->input_bytes + shape->dest_bytes +
                                                        8 * c.c.num_tokens);
        f.device_per_set = std::max(f.device_per_set, scatter);
      }
      const std::string why = admission_refusal(f, c.buffer_sets, std::nullopt, avail);
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
  return refused;
}

int cmd_bounds(const std::string& results_path, const std::string& output, std::int64_t max_tokens,
               const std::string& variant, const Overrides& overrides) {
  RunSettings s;
  apply(overrides, s);
  check_recorded_path("RESULTS", results_path);
  check_recorded_path("--output", output);
  // Bad rows and an output that is an input or in no folder: before the GPU. A device or FIFO
  // output (/dev/null, a FIFO) is written in place.
  check_outputs({{"--output", output}}, {{"the result CSV", results_path},
                                         {"the result CSV's sidecar", sidecar_path(results_path)}});
  const std::optional<OutputLock> lock = lock_output("--output", output);
  ResultTable results = read_results(results_path);
  const std::vector<BoundCase> cases = bound_cases(results, max_tokens, variant);
  // Every row is written as soon as its floors are timed (whole lines), so a run cut short keeps
  // what it finished; the output is not touched before the first row (or the end).
  RowFile out(output, bounds_header(), RowFile::Mode::replace);
  open_device();
  const DeviceDetails d = device_details();
  check_bound_device(results, cases, d.name);  // before rows are left out: `cases` indexes them
  // A case that does not fit in memory is left out, one line each, and the exit code says so.
  const std::size_t refused = leave_out_what_does_not_fit(results, cases, results_path);
  const std::string sha = std::string(kGitSha) + (kGitDirty ? "+dirty" : "");
  const std::size_t rows = measure_bounds(
      results, max_tokens, s, variant,
      [&](BoundRow r) {
        r.device = d.name;
        r.device_uuid = d.uuid;
        r.git_sha = sha;
        out.write(bounds_line(r));
      },
      [](std::size_t done, std::size_t total) {
        std::fprintf(stderr, "\rkvbench bounds: %zu/%zu floors timed", done, total);
        if (done == total) std::fprintf(stderr, "\n");
      });
  out.commit();  // no row: the header alone
  std::printf("%s: %zu rows of num_tokens <= %lld%s from %s\n", output.c_str(), rows,
              static_cast<long long>(max_tokens),
              variant.empty() ? "" : (", variant " + variant).c_str(), results_path.c_str());
  return refused ? kFailed : kOk;
}

}  // namespace

Command add_bounds(CLI::App& app) {
  struct Args {
    std::string input, output, variant, seed;
    std::int64_t max_tokens = kAllTokens;
    Overrides overrides;
  };
  auto a = std::make_shared<Args>();
  CLI::App* bounds = app.add_subcommand(
      "bounds",
      "Time the fastest plain kernels moving each case's bytes to its places: its plain-move "
      "reference, which kernels can beat (not a lower bound)");
  bounds->add_option("results", a->input, "Result CSV of `kvbench run`")->required();
  bounds->add_option("-o,--output", a->output, "CSV to write")->required()->check(non_empty());
  add_max_tokens_flag(bounds, a->max_tokens);
  bounds->add_option("--variant", a->variant, "Only rows of this variant (e.g. optimized)")
      ->check(non_empty());
  bounds
      ->add_option("--seed", a->seed,
                   "The run's input seed, which gives each case's slots (settings.seed; default 1)")
      ->check(non_empty());
  add_timing_flags(bounds, a->overrides);
  return {bounds, [a] {
            if (!a->seed.empty()) a->overrides.seed = parse_seed_flag(a->seed);
            return cmd_bounds(a->input, a->output, a->max_tokens, a->variant, a->overrides);
          }};
}

}  // namespace kvbench::cli
