#include "core/bounds.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "core/checked.hpp"
#include "core/csv.hpp"
#include "core/operation.hpp"
#include "core/types.hpp"

namespace kvbench {
namespace {

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

Case case_of(const ResultTable& t, const ResultRow& r) {
  try {
    return case_of_key(r.axes);  // read in column order: the first bad value is the one reported
  } catch (const std::invalid_argument& e) {
    throw ResultCsvError(t.path + ":" + std::to_string(r.line) + ": " + e.what());
  }
}

std::vector<BoundCase> bound_cases(const ResultTable& t, std::int64_t max_tokens,
                                   const std::string& variant) {
  if (!variant.empty() && std::none_of(t.rows.begin(), t.rows.end(), [&](const ResultRow& r) {
        return r.axes[Col::variant] == variant;
      })) {
    std::set<std::string> there;
    for (const ResultRow& r : t.rows) there.insert(r.axes[Col::variant]);
    std::string names;
    for (const std::string& v : there) names += (names.empty() ? "" : ", ") + v;
    throw ResultCsvError("--variant " + variant + ": no row of " + t.path + " has it (" +
                         (names.empty() ? "no rows" : "variants there: " + names) + ")");
  }
  std::vector<BoundCase> cases;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const ResultRow& r = t.rows[i];
    if (r.status != Status::passed || !r.timing) continue;
    if (!variant.empty() && r.axes[Col::variant] != variant) continue;
    const std::int64_t T = std::stoll(r.axes[Col::num_tokens]);  // digits, checked by read_results
    if (T > max_tokens) continue;
    const std::string at = t.path + ":" + std::to_string(r.line) + ": ";
    if (!r.bytes || !r.written_tokens)
      throw ResultCsvError(at + "column '" + (r.bytes ? "written_tokens" : "bytes") +
                           "': empty or absent, but the row is timed");
    const Case c = case_of(t, r);
    std::int64_t elems = 0;
    try {
      elems = checked_mul(operation(c.kernel).output_elems(c, *r.written_tokens),
                          static_cast<std::int64_t>(size_of(c.out_dtype)));
    } catch (const SizeOverflow& e) {
      throw ResultCsvError(at + "the case's output size: " + e.what());
    }
    if (elems > *r.bytes)
      throw ResultCsvError(at + "column 'bytes': " + std::to_string(*r.bytes) +
                           " is less than the case's output alone (" + std::to_string(elems) +
                           " bytes)");
    BoundCase b{i, *r.bytes - elems, elems, c, r.buffer_sets};
    // read_results checked both names.
    if (!r.context.empty()) b.context = from_string<Context>(r.context.str());
    if (!r.timer.empty()) b.timer = from_string<Timer>(r.timer.str());
    cases.push_back(std::move(b));
  }
  return cases;
}

void check_bound_device(const ResultTable& t, const std::vector<BoundCase>& cases,
                        const std::string& device) {
  for (const BoundCase& c : cases) {
    const ResultRow& r = t.rows[c.row];
    if (r.device.str() != device)
      throw ResultCsvError(t.path + ":" + std::to_string(r.line) + ": ran on '" + r.device.str() +
                           "', this GPU is '" + device +
                           "' (a row's median and its floors are timed on one GPU model; run "
                           "bounds where the CSV ran)");
  }
}

double bound_of(const BoundRow& r) {
  return r.scatter_floor_us > 0 && (r.move_floor_us <= 0 || r.scatter_floor_us < r.move_floor_us)
             ? r.scatter_floor_us
             : r.move_floor_us;
}

double plain_move_mean_of(const BoundRow& r) {
  if (r.scatter_floor_mean_us > 0 &&
      (r.move_floor_mean_us <= 0 || r.scatter_floor_mean_us < r.move_floor_mean_us))
    return r.scatter_floor_mean_us;
  return r.move_floor_mean_us;
}

std::string bounds_header() {
  std::vector<std::string> cols = result_axis_columns();
  for (const char* c : {"median_us",
                        "bytes",
                        "read_bytes",
                        "write_bytes",
                        "launch_floor_us",
                        "pdl_launch_floor_us",
                        "write_floor_us",
                        "write_floor_method",
                        "move_floor_us",
                        "move_floor_method",
                        "device",
                        "device_uuid",
                        "git_sha",
                        "buffer_sets",
                        "scatter_floor_us",
                        "scatter_floor_method",
                        "plain_move_us",
                        "pct_of_plain_move",
                        "context",
                        "timer",
                        "plain_move_mean_us"})
    cols.emplace_back(c);
  return join_csv(cols);
}

std::string bounds_line(const BoundRow& r) {
  std::vector<std::string> f;
  for (const std::string& a : r.axes) f.push_back(csv_quoted(a));
  for (std::string v : {fixed(r.median_us),
                        std::to_string(r.bytes),
                        std::to_string(r.read_bytes),
                        std::to_string(r.write_bytes),
                        fixed(r.launch_floor_us),
                        fixed(r.pdl_launch_floor_us),
                        r.write_floor_us > 0 ? fixed(r.write_floor_us) : std::string(),
                        csv_quoted(r.write_floor_method),
                        fixed(r.move_floor_us),
                        csv_quoted(r.move_floor_method),
                        csv_quoted(r.device),
                        csv_quoted(r.device_uuid),
                        csv_quoted(r.git_sha),
                        std::to_string(r.buffer_sets),
                        r.scatter_floor_us > 0 ? fixed(r.scatter_floor_us) : std::string(),
                        csv_quoted(r.scatter_floor_method),
                        fixed(bound_of(r)),
                        r.median_us > 0 ? fixed(100 * bound_of(r) / r.median_us) : std::string(),
                        std::string(to_string(r.context)),
                        std::string(to_string(r.timer)),
                        plain_move_mean_of(r) > 0 ? fixed(plain_move_mean_of(r)) : std::string()})
    f.push_back(std::move(v));
  return join_csv(f);
}

}  // namespace kvbench
