// The result CSV's columns: the one list, each column named once, in CSV order, with its role.
// Everything else derives from it: the row's writer and its inverse (core/csv.cpp, one codec per
// column), the gate's reader (core/result_csv.cpp), the case key (`kvbench schema --case-key`),
// `kvbench schema --columns`, and through the binary the scripts (scripts/kvbench_schema.py).
// docs/results.md says what each column means.
//
// Adding a column: one line here (its place is its place in every row), one codec in csv.cpp
// (the build fails until it has one), and docs/results.md; a new column is a new schema_version.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace kvbench {

// case_key: the columns that name a case (`compare` matches rows by them); result: what the run
// of the case found; metadata: the schema, the device and the build.
enum class ColumnRole { case_key, result, metadata };

constexpr std::string_view to_string(ColumnRole role) {
  switch (role) {
    case ColumnRole::case_key:
      return "case_key";
    case ColumnRole::result:
      return "result";
    case ColumnRole::metadata:
      return "metadata";
  }
  return "?";
}

// X(name, role) for every column, in CSV order.
#define KVBENCH_RESULT_COLUMNS(X)    \
  X(schema_version, metadata)        \
  X(kernel, case_key)                \
  X(variant, case_key)               \
  X(sweep, case_key)                 \
  X(num_tokens, case_key)            \
  X(num_heads, case_key)             \
  X(head_dim, case_key)              \
  X(rope_dim, case_key)              \
  X(block_size, case_key)            \
  X(in_dtype, case_key)              \
  X(out_dtype, case_key)             \
  X(layout, case_key)                \
  X(scale, case_key)                 \
  X(swa, case_key)                   \
  X(kv_interleaved, case_key)        \
  X(strides, case_key)               \
  X(slots, case_key)                 \
  X(status, result)                  \
  X(reason, result)                  \
  X(mismatches, result)              \
  X(written_tokens, result)          \
  X(bytes, result)                   \
  X(mode, result)                    \
  X(buffer_sets, result)             \
  X(context, result)                 \
  X(timer, result)                   \
  X(samples, result)                 \
  X(launches_per_sample, result)     \
  X(converged, result)               \
  X(median_us, result)               \
  X(mean_us, result)                 \
  X(min_us, result)                  \
  X(max_us, result)                  \
  X(p10_us, result)                  \
  X(p90_us, result)                  \
  X(rel_stdev, result)               \
  X(median_ci_rel, result)           \
  X(gap_us, result)                  \
  X(span_us, result)                 \
  X(gbps, result)                    \
  X(pct_of_measured_peak, result)    \
  X(pct_of_theoretical_peak, result) \
  X(sm_clock_mhz, result)            \
  X(clock_low, result)               \
  X(device, metadata)                \
  X(device_uuid, metadata)           \
  X(git_sha, metadata)               \
  X(git_dirty, metadata)

// A column by name in code: Col::median_us. Its value is its position in the row.
enum class Col : std::size_t {
#define KVBENCH_COLUMN_ID(name, role) name,
  KVBENCH_RESULT_COLUMNS(KVBENCH_COLUMN_ID)
#undef KVBENCH_COLUMN_ID
};

struct ColumnInfo {
  std::string_view name;
  ColumnRole role;
};

inline constexpr std::array kColumns = {
#define KVBENCH_COLUMN_INFO(name, role) ColumnInfo{#name, ColumnRole::role},
    KVBENCH_RESULT_COLUMNS(KVBENCH_COLUMN_INFO)
#undef KVBENCH_COLUMN_INFO
};

inline constexpr std::size_t kColumnCount = kColumns.size();

constexpr std::size_t index(Col c) { return static_cast<std::size_t>(c); }
constexpr std::string_view name(Col c) { return kColumns[index(c)].name; }
constexpr ColumnRole role(Col c) { return kColumns[index(c)].role; }

namespace detail {
constexpr std::size_t first_key_column() {
  for (std::size_t i = 0; i < kColumnCount; ++i)
    if (kColumns[i].role == ColumnRole::case_key) return i;
  return kColumnCount;
}
constexpr std::size_t key_column_count() {
  std::size_t n = 0;
  for (const ColumnInfo& c : kColumns) n += c.role == ColumnRole::case_key;
  return n;
}
}  // namespace detail

// The case key is one run of adjacent columns: a row's key is a slice of it.
inline constexpr std::size_t kFirstKeyColumn = detail::first_key_column();
inline constexpr std::size_t kKeyColumnCount = detail::key_column_count();
static_assert(
    [] {
      for (std::size_t i = kFirstKeyColumn; i < kFirstKeyColumn + kKeyColumnCount; ++i)
        if (kColumns[i].role != ColumnRole::case_key) return false;
      return kKeyColumnCount > 0;
    }(),
    "the case-key columns are adjacent");

// The position of a case-key column within the case key.
constexpr std::size_t key_index(Col c) { return index(c) - kFirstKeyColumn; }

}  // namespace kvbench
