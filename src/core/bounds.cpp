#include "core/bounds.hpp"

#include <cstdio>

#include "core/checked.hpp"
#include "core/csv.hpp"
#include "core/types.hpp"

namespace kvbench {
namespace {

// Positions in ResultRow::axes (result_axis_columns()).
std::size_t axis(const char* name) {
  const auto& cols = result_axis_columns();
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return i;
  throw std::logic_error(std::string("no axis column ") + name);
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

std::vector<BoundCase> bound_cases(const ResultTable& t, std::int64_t max_tokens) {
  static const std::size_t kernel = axis("kernel"), tokens = axis("num_tokens"),
                           heads = axis("num_heads"), dim = axis("head_dim"),
                           rope = axis("rope_dim"), out = axis("out_dtype");
  std::vector<BoundCase> cases;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const ResultRow& r = t.rows[i];
    if (r.status != Status::passed || !r.timing) continue;
    const std::int64_t T = std::stoll(r.axes[tokens]);  // digits, checked by read_results
    if (T > max_tokens) continue;
    const std::string at = t.path + ":" + std::to_string(r.line) + ": ";
    if (!r.bytes || !r.written_tokens)
      throw ResultCsvError(at + "column '" + (r.bytes ? "written_tokens" : "bytes") +
                           "': empty or absent, but the row is timed");
    std::int64_t elems = 0;
    try {
      const std::int64_t H = std::stoll(r.axes[heads]), D = std::stoll(r.axes[dim]);
      const auto out_size = static_cast<std::int64_t>(size_of(from_string<DType>(r.axes[out])));
      switch (from_string<Kernel>(r.axes[kernel])) {
        case Kernel::concat_mla_k:
          elems = checked_mul(checked_mul(T, H), checked_add(D, std::stoll(r.axes[rope])));
          break;
        case Kernel::cache_write:
          elems = checked_mul(checked_mul(checked_mul(*r.written_tokens, 2), H), D);
          break;
      }
      elems = checked_mul(elems, out_size);
    } catch (const std::invalid_argument& e) {
      throw ResultCsvError(at + e.what());
    } catch (const SizeOverflow& e) {
      throw ResultCsvError(at + "the case's output size: " + e.what());
    }
    if (elems > *r.bytes)
      throw ResultCsvError(at + "column 'bytes': " + std::to_string(*r.bytes) +
                           " is less than the case's output alone (" + std::to_string(elems) +
                           " bytes)");
    cases.push_back({i, *r.bytes - elems, elems});
  }
  return cases;
}

std::string bounds_header() {
  std::vector<std::string> cols = result_axis_columns();
  for (const char* c : {"median_us", "bytes", "read_bytes", "write_bytes", "launch_floor_us",
                        "pdl_launch_floor_us", "write_floor_us", "write_floor_method",
                        "move_floor_us", "move_floor_method", "device", "device_uuid", "git_sha"})
    cols.emplace_back(c);
  return join_csv(cols);
}

std::string bounds_line(const BoundRow& r) {
  std::vector<std::string> f;
  for (const std::string& a : r.axes) f.push_back(csv_quoted(a));
  for (std::string v :
       {fixed(r.median_us), std::to_string(r.bytes), std::to_string(r.read_bytes),
        std::to_string(r.write_bytes), fixed(r.launch_floor_us), fixed(r.pdl_launch_floor_us),
        fixed(r.write_floor_us), csv_quoted(r.write_floor_method), fixed(r.move_floor_us),
        csv_quoted(r.move_floor_method), csv_quoted(r.device), csv_quoted(r.device_uuid),
        csv_quoted(r.git_sha)})
    f.push_back(std::move(v));
  return join_csv(f);
}

}  // namespace kvbench
