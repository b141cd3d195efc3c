// `kvbench bounds`' pure part: which rows of a result CSV it times, and how it splits each case's
// bytes into read and written (SPEC.md §4), checked against the formulas written out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/bounds.hpp"
#include "core/csv.hpp"
#include "core/operation.hpp"
#include "core/result_csv.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

const std::string kPerf = std::string(KVBENCH_SOURCE_DIR) + "/results/h200/perf.csv";

// Case-key columns of a result row, by their names in the column table.
constexpr Col kKernel = Col::kernel, kT = Col::num_tokens, kH = Col::num_heads, kD = Col::head_dim,
              kRope = Col::rope_dim, kIn = Col::in_dtype, kOut = Col::out_dtype, kSwa = Col::swa;

std::int64_t size_of_dtype(const std::string& d) {
  if (d == "f32") return 4;
  if (d == "bf16" || d == "f16") return 2;
  return 1;  // fp8
}

TEST(Bounds, SplitsEverySmallTimedRowOfTheCommittedRun) {
  const ResultTable t = read_results(kPerf);
  std::size_t expected = 0;
  for (const ResultRow& r : t.rows)
    expected += r.status == Status::passed && r.timing && std::stoll(r.axes[kT]) <= 128;
  const std::vector<BoundCase> cases = bound_cases(t, 128);
  ASSERT_EQ(cases.size(), expected);
  ASSERT_GT(expected, 100u);
  std::size_t checked_reads = 0;
  for (const BoundCase& c : cases) {
    const ResultRow& r = t.rows[c.row];
    const std::int64_t T = std::stoll(r.axes[kT]), H = std::stoll(r.axes[kH]),
                       D = std::stoll(r.axes[kD]), in = size_of_dtype(r.axes[kIn]),
                       out = size_of_dtype(r.axes[kOut]);
    SCOPED_TRACE("line " + std::to_string(r.line));
    EXPECT_EQ(c.read_bytes + c.write_bytes, *r.bytes);
    if (r.axes[kKernel] == "concat_and_cast_mha_k") {
      const std::int64_t R = std::stoll(r.axes[kRope]);
      EXPECT_EQ(c.write_bytes, T * H * (D + R) * out);
      EXPECT_EQ(c.read_bytes, T * H * D * in + T * R * in);  // nope per head, rope once
      ++checked_reads;
    } else {
      EXPECT_EQ(c.write_bytes, *r.written_tokens * 2 * H * D * out);
      if (r.axes[kSwa] == "false") {  // slot_mapping plus K and V of written tokens
        EXPECT_EQ(c.read_bytes, 8 * T + *r.written_tokens * 2 * H * D * in);
        ++checked_reads;
      }
    }
  }
  EXPECT_GT(checked_reads, 50u);
  EXPECT_LT(bound_cases(t, 1).size(), expected);
}

ResultTable one_row(std::optional<std::int64_t> bytes, std::optional<std::int64_t> written) {
  ResultRow r;
  r.axes = {"reshape_and_cache_flash",
            "optimized",
            "s",
            "16",
            "8",
            "128",
            "0",
            "16",
            "bf16",
            "bf16",
            "nhd",
            "none",
            "false",
            "false",
            "contiguous",
            "random"};
  r.status = Status::passed;
  r.timing = Timing{1.0, 0.9, 1.1};
  r.bytes = bytes;
  r.written_tokens = written;
  r.line = 7;
  return {"r.csv", {r}};
}

void expect_error(const ResultTable& t, const std::string& fragment) {
  try {
    bound_cases(t, 128);
    ADD_FAILURE() << "expected ResultCsvError";
  } catch (const ResultCsvError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Bounds, RowsWithoutTheirBytesAreRefusedByFileAndLine) {
  const std::int64_t out = 16 * 2 * 8 * 128 * 2;
  EXPECT_EQ(bound_cases(one_row(8 * 16 + 2 * out, 16), 128)[0].write_bytes, out);
  expect_error(one_row(std::nullopt, 16), "r.csv:7: column 'bytes': empty or absent");
  expect_error(one_row(100, std::nullopt), "r.csv:7: column 'written_tokens'");
  expect_error(one_row(out - 1, 16), "r.csv:7: column 'bytes': " + std::to_string(out - 1));
  ResultTable bad = one_row(2 * out, 16);
  bad.rows[0].axes.at(kOut) = "int4";
  expect_error(bad, "r.csv:7: unknown dtype 'int4'");
  // Head counts whose products overflow 64 bits (a UBSan finding) are refused by line.
  ResultTable huge = one_row(2 * out, 16);
  huge.rows[0].axes.at(kH) = "999999999999999999";
  huge.rows[0].axes.at(kD) = "999999999999999999";
  expect_error(huge, "r.csv:7: the case's output size: ");
  huge.rows[0].axes.at(kKernel) = "concat_and_cast_mha_k";
  huge.rows[0].axes.at(kT) = "1";
  expect_error(huge, "overflows 64 bits");
  // The row's context and timer, in which its floors are timed; a row of neither: back to back,
  // by events.
  EXPECT_EQ(bound_cases(one_row(2 * out, 16), 128)[0].context, Context::back_to_back);
  EXPECT_EQ(bound_cases(one_row(2 * out, 16), 128)[0].timer, Timer::events);
  ResultTable in_context = one_row(2 * out, 16);
  in_context.rows[0].context = Text("after_producer");
  in_context.rows[0].timer = Text("cupti");
  EXPECT_EQ(bound_cases(in_context, 128)[0].context, Context::after_producer);
  EXPECT_EQ(bound_cases(in_context, 128)[0].timer, Timer::cupti);
  ResultTable untimed = one_row(std::nullopt, std::nullopt);
  untimed.rows[0].timing.reset();  // not timed: not selected, so not an error
  EXPECT_TRUE(bound_cases(untimed, 128).empty());
}

TEST(Bounds, OutputLinesHaveTheHeadersColumns) {
  BoundRow r;
  r.axes = {"a", "b,c", "d", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"};
  r.write_floor_method = "store16 t256x4";
  r.move_floor_method = "move16 t128x8";
  const std::string line = bounds_line(r);
  EXPECT_NE(line.find("\"b,c\""), std::string::npos) << line;
  const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  EXPECT_EQ(commas(line) - 1, commas(bounds_header()));  // one comma inside the quotes
  r.context = Context::layer;
  r.timer = Timer::cupti;
  EXPECT_EQ(bounds_line(r).substr(bounds_line(r).size() - 13), ",layer,cupti,");
  EXPECT_EQ(bounds_header().substr(bounds_header().size() - 33),
            ",context,timer,plain_move_mean_us");
}

TEST(Bounds, EverySizeAndOneVariantOnRequestWithTheRowsSetCount) {
  const ResultTable t = read_results(kPerf);
  std::size_t timed = 0, optimized = 0;
  for (const ResultRow& r : t.rows) {
    const bool ok = r.status == Status::passed && r.timing.has_value();
    timed += ok;
    optimized += ok && r.axes[1] == "optimized";
  }
  EXPECT_EQ(bound_cases(t, std::int64_t{1} << 40).size(), timed);
  const std::vector<BoundCase> opt = bound_cases(t, std::int64_t{1} << 40, "optimized");
  ASSERT_EQ(opt.size(), optimized);
  ASSERT_GT(optimized, 200u);
  for (const BoundCase& c : opt) {
    EXPECT_EQ(c.c.variant, Variant::optimized);
    EXPECT_EQ(c.buffer_sets, 1);  // a schema-1 run: one set
    // The rebuilt case is the row's: same description as the runner would print.
    const ResultRow& r = t.rows[c.row];
    EXPECT_EQ(std::to_string(c.c.num_tokens), r.axes[kT]);
    EXPECT_EQ(std::string(to_string(c.c.out_dtype)), r.axes[kOut]);
  }
}

// The floors are timed here: a row of another GPU model is refused, naming it and both models.
TEST(Bounds, ARowOfAnotherGpuModelIsRefused) {
  ResultTable t = one_row(8 * 16 + 2 * 16 * 2 * 8 * 128 * 2, 16);
  t.rows[0].device = Text("NVIDIA H200");
  const std::vector<BoundCase> cases = bound_cases(t, 128);
  EXPECT_NO_THROW(check_bound_device(t, cases, "NVIDIA H200"));
  try {
    check_bound_device(t, cases, "NVIDIA H100 80GB HBM3");
    ADD_FAILURE() << "expected ResultCsvError";
  } catch (const ResultCsvError& e) {
    EXPECT_EQ(std::string(e.what()),
              "r.csv:7: ran on 'NVIDIA H200', this GPU is 'NVIDIA H100 80GB HBM3' (a row's median "
              "and its floors are timed on one GPU model; run bounds where the CSV ran)");
  }
}

TEST(Bounds, ARowNamingNoCaseIsRefusedByFileAndLine) {
  ResultTable bad = one_row(8 * 16 + 2 * 16 * 2 * 8 * 128 * 2, 16);
  bad.rows[0].axes.at(Col::swa) = "maybe";
  expect_error(bad, "r.csv:7: swa 'maybe' is not true or false");
}

// The plain-move reference is the faster of the contiguous move of the case's bytes and, for the
// cache write, the scatter of its rows to its slots: a scaled fp8 write's scatter can be slower
// than a move of the same bytes, and a reference slower than a plain move would flatter the kernel.
TEST(Bounds, TheReferenceIsTheFasterOfTheMoveAndTheScatter) {
  BoundRow r;
  r.median_us = 10;
  r.move_floor_us = 8;
  EXPECT_EQ(bound_of(r), 8);  // concat: no scatter
  r.scatter_floor_us = 9;
  EXPECT_EQ(bound_of(r), 8);
  r.scatter_floor_us = 7.5;
  EXPECT_EQ(bound_of(r), 7.5);
  r.move_floor_us = 9;
  r.scatter_floor_us = 9;
  r.axes.assign(kKeyColumnCount, "x");
  const std::string line = bounds_line(r);
  EXPECT_NE(line.find(",9.0000,90.0000"), std::string::npos)
      << line;  // plain_move_us, pct_of_plain_move
}

// By the mean too: the lower of the move's and the scatter's lowest means, each taken apart from
// the medians (the kernel with the lowest median need not have the lowest mean); the last column,
// empty when neither was timed.
TEST(Bounds, ThePlainMoveByTheMeanIsTheLowerMean) {
  BoundRow r;
  r.axes.assign(kKeyColumnCount, "x");
  r.median_us = 2;
  r.move_floor_us = 1.024;
  EXPECT_EQ(plain_move_mean_of(r), 0);
  EXPECT_EQ(bounds_line(r).back(), ',') << bounds_line(r);  // not timed: empty
  r.move_floor_mean_us = 1.1;
  EXPECT_EQ(plain_move_mean_of(r), 1.1);  // concat: no scatter
  r.scatter_floor_us = 1.28;              // slower by the median...
  r.scatter_floor_mean_us = 1.05;         // ...faster by the mean
  EXPECT_EQ(bound_of(r), 1.024);
  EXPECT_EQ(plain_move_mean_of(r), 1.05);
  r.scatter_floor_mean_us = 1.2;
  EXPECT_EQ(plain_move_mean_of(r), 1.1);
  const std::string line = bounds_line(r);
  EXPECT_EQ(line.substr(line.rfind(',')), ",1.1000") << line;
  const std::string header = bounds_header();
  EXPECT_EQ(header.substr(header.rfind(',')), ",plain_move_mean_us");
}

// Whether a case's bound is a scatter is its operation's to say: the cache write's is, each token's
// K and V rows to its slot, inside the destination, one distinct place per written token, as
// many as its slots write; concat's is the contiguous move.
TEST(Bounds, TheCacheWriteScattersInsideItsCachesAndConcatHasNoScatter) {
  EXPECT_FALSE(operation(Kernel::concat_mha_k).scatter_shape(testing_support::concat_case(64, 16)));
  for (const auto& [layout, swa, interleaved, slots] :
       {std::tuple{Layout::nhd, false, false, SlotPattern::random},
        std::tuple{Layout::hnd, false, false, SlotPattern::padded},
        std::tuple{Layout::nhd, true, false, SlotPattern::skip},
        std::tuple{Layout::hnd, false, true, SlotPattern::contiguous}}) {
    Case c = testing_support::cache_case(100, 8, 96, 16);
    c.out_dtype = DType::fp8_e4m3;
    CacheWriteParams& p = testing_support::cache_params(c);
    p.layout = layout;
    p.swa = swa;
    p.kv_interleaved = interleaved;
    p.slots = slots;
    SCOPED_TRACE(describe(c));
    const std::optional<ScatterShape> shape = operation(c.kernel).scatter_shape(c);
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->head_read, 96 * 2);
    EXPECT_EQ(shape->head_write, 96 * 1);
    const std::vector<std::int64_t> rows = shape->rows(7);
    ASSERT_EQ(rows.size(), 100u);
    std::set<std::int64_t> places;
    for (std::int64_t row : rows) {
      if (row < 0) continue;
      EXPECT_TRUE(places.insert(row).second) << row;
      const std::int64_t last_v = row + shape->v_offset + 7 * shape->head_stride;
      EXPECT_LE(last_v + shape->head_write, shape->dest_bytes) << row;
    }
    // The slots the stages draw for the set of seed 7 (make_slots, 2 past the set's seed).
    const SlotData drawn = make_slots(c, cache_geometry(c), 7 + 2);
    EXPECT_EQ(static_cast<std::int64_t>(places.size()), drawn.written_tokens);
    EXPECT_GT(drawn.written_tokens, 0);
  }
}

}  // namespace
}  // namespace kvbench
