// The regression gate: verdicts, their precedence, and the result-CSV reader's errors.
// The small CSVs live in tests/data/gate/ (the CLI tests in CMakeLists.txt use them too).
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <iterator>
#include <string>

#include "core/csv.hpp"
#include "core/gate.hpp"
#include "core/result_csv.hpp"

namespace kvbench {
namespace {

const std::string kData = std::string(KVBENCH_SOURCE_DIR) + "/tests/data/gate/";

ResultRow timed_row(const std::string& tokens, double median, double p10, double p90,
                    const std::string& device = "GPU") {
  ResultRow r;
  r.axes = {"concat_and_cast_mha_k",
            "seed_port",
            "s",
            tokens,
            "128",
            "128",
            "64",
            "16",
            "bf16",
            "bf16",
            "nhd",
            "none",
            "false",
            "false",
            "contiguous",
            "random"};
  r.device = device;
  r.status = Status::passed;
  r.timing = Timing{median, p10, p90};
  return r;
}

// Tables live to the end of the test program: reports point into them.
const ResultTable& table(std::vector<ResultRow> rows, const std::string& path = "t.csv") {
  static std::deque<ResultTable> tables;
  unsigned line = 2;
  for (auto& r : rows) r.line = line++;
  ResultTable t;
  t.path = path;
  t.rows.assign(rows.begin(), rows.end());
  return tables.emplace_back(std::move(t));
}

Verdict only_verdict(const GateReport& r) {
  EXPECT_EQ(r.cases.size(), 1u);
  return r.cases.empty() ? Verdict::unknown : r.cases[0].verdict;
}

TEST(Gate, AxisColumnsAreTheCaseColumns) {
  // The case key must cover every axis the writer emits.
  EXPECT_EQ(result_axis_columns(), case_columns());
}

TEST(Gate, JudgeUsesTheLargerOfThresholdAndNoise) {
  double tol = 0;
  const Timing base{100, 99.5, 100.5};
  EXPECT_EQ(judge(base, {110, 109.5, 110.5}, 0.05, &tol), Verdict::slower);
  EXPECT_DOUBLE_EQ(tol, 0.05);
  EXPECT_EQ(judge(base, {104, 103.5, 104.5}, 0.05, &tol), Verdict::same);
  // 10% slower, but the current row's own p10-p90 spread is 30%: not a regression.
  EXPECT_EQ(judge(base, {110, 95, 128}, 0.05, &tol), Verdict::same);
  EXPECT_NEAR(tol, 0.3, 1e-12);
  // Noise on the baseline side counts as much.
  EXPECT_EQ(judge({100, 80, 120}, {110, 109.5, 110.5}, 0.05, &tol), Verdict::same);
  // Faster is the mirror image.
  EXPECT_EQ(judge(base, {90, 89.5, 90.5}, 0.05, &tol), Verdict::faster);
  EXPECT_EQ(judge(base, {96, 95.5, 96.5}, 0.05, &tol), Verdict::same);
  // A larger threshold absorbs a 10% change.
  EXPECT_EQ(judge(base, {110, 109.5, 110.5}, 0.15, &tol), Verdict::same);
}

TEST(Gate, IdenticalRerunIsSame) {
  const auto t = table({timed_row("1", 10, 9.9, 10.1), timed_row("2", 20, 19.8, 20.2)});
  const GateReport r = run_gate(t, t, {});
  EXPECT_EQ(r.counts.at(Verdict::same), 2);
  EXPECT_EQ(r.exit_code(), kGatePass);
}

TEST(Gate, EveryVerdict) {
  auto base = table({timed_row("1", 10, 9.9, 10.1)});
  EXPECT_EQ(only_verdict(run_gate(base, table({timed_row("1", 12, 11.9, 12.1)}), {})),
            Verdict::slower);
  EXPECT_EQ(only_verdict(run_gate(base, table({timed_row("1", 8, 7.9, 8.1)}), {})),
            Verdict::faster);
  EXPECT_EQ(only_verdict(run_gate(base, table({timed_row("1", 10.2, 10.1, 10.3)}), {})),
            Verdict::same);

  auto untimed = timed_row("1", 0, 0, 0);
  untimed.timing.reset();
  untimed.status = Status::not_supported;
  // Timed in the baseline, untimed now: the measurement is missing (exit 2), not unknown.
  const GateReport untimed_now = run_gate(base, table({untimed}), {});
  EXPECT_EQ(only_verdict(untimed_now), Verdict::missing);
  EXPECT_EQ(untimed_now.exit_code(), kGateInvalid);
  // Untimed in the baseline: nothing to compare against, unknown.
  const GateReport untimed_before =
      run_gate(table({timed_row("2", 5, 5, 5), untimed}),
               table({timed_row("2", 5, 5, 5), timed_row("1", 10, 9.9, 10.1)}), {});
  EXPECT_EQ(untimed_before.counts.at(Verdict::unknown), 1);
  EXPECT_EQ(untimed_before.exit_code(), kGatePass);

  for (Status s : {Status::incorrect, Status::failed, Status::rejected}) {
    auto bad = untimed;
    bad.status = s;
    const GateReport r = run_gate(base, table({bad}), {});
    EXPECT_EQ(only_verdict(r), Verdict::incorrect) << to_string(s);
    EXPECT_EQ(r.exit_code(), kGateInvalid);
  }

  const GateReport added =
      run_gate(base, table({timed_row("1", 10, 9.9, 10.1), timed_row("2", 5, 5, 5)}), {});
  EXPECT_EQ(added.counts.at(Verdict::added), 1);
  EXPECT_EQ(added.exit_code(), kGatePass);

  const GateReport missing =
      run_gate(table({timed_row("1", 10, 9.9, 10.1), timed_row("2", 5, 5, 5)}), base, {});
  EXPECT_EQ(missing.counts.at(Verdict::missing), 1);
  EXPECT_EQ(missing.exit_code(), kGateInvalid);
}

TEST(Gate, ValidationFailureOutranksRegression) {
  auto base = table({timed_row("1", 10, 9.9, 10.1), timed_row("2", 10, 9.9, 10.1)});
  auto bad = timed_row("2", 10, 9.9, 10.1);
  bad.status = Status::incorrect;
  bad.timing.reset();
  const GateReport r = run_gate(base, table({timed_row("1", 20, 19.9, 20.1), bad}), {});
  EXPECT_EQ(r.counts.at(Verdict::slower), 1);
  EXPECT_EQ(r.counts.at(Verdict::incorrect), 1);
  EXPECT_EQ(r.exit_code(), kGateInvalid);
  EXPECT_EQ(r.cases.front().verdict, Verdict::incorrect);  // most severe first
}

TEST(Gate, CurrentWithoutTimedRowFails) {
  auto base = table({timed_row("1", 10, 9.9, 10.1)});
  auto untimed = timed_row("1", 0, 0, 0);
  untimed.timing.reset();
  for (Status s : {Status::not_supported, Status::passed}) {
    untimed.status = s;
    const GateReport r = run_gate(base, table({untimed}), {});
    EXPECT_EQ(r.exit_code(), kGateInvalid) << to_string(s);
    EXPECT_NE(r.summary().find("no timed row"), std::string::npos) << r.summary();
  }
}

TEST(Gate, BaselineWithoutTimedRowIsRefused) {
  auto untimed = timed_row("1", 0, 0, 0);
  untimed.timing.reset();
  untimed.status = Status::not_supported;
  EXPECT_THROW(run_gate(table({untimed}), table({timed_row("1", 10, 9.9, 10.1)}), {}), GateError);
  EXPECT_THROW(check_baseline(table({untimed}), {}), GateError);
}

// A row's own spread widens the band only up to kMaxNoiseBand: 10 -> 100 us with p90 = 100,000
// is a regression, not noise.
TEST(Gate, NoiseAllowanceIsCapped) {
  auto base = table({timed_row("1", 10, 9.9, 10.1)});
  const GateReport r = run_gate(base, table({timed_row("1", 100, 10, 100000)}), {});
  EXPECT_EQ(only_verdict(r), Verdict::slower);
  EXPECT_DOUBLE_EQ(r.cases[0].tolerance, kMaxNoiseBand);
  EXPECT_EQ(r.exit_code(), kGateRegression);
  double tol = 0;
  EXPECT_EQ(judge({10, 5, 14}, {14, 10, 100}, 0.05, &tol), Verdict::same);  // 40% < cap
  EXPECT_DOUBLE_EQ(tol, kMaxNoiseBand);
}

TEST(Gate, EmptyCurrentFailsEmptyBaselineIsRefused) {
  const auto base = table({timed_row("1", 10, 9.9, 10.1)});
  const GateReport r = run_gate(base, table({}), {});
  EXPECT_EQ(r.exit_code(), kGateInvalid);
  EXPECT_NE(r.summary().find("no rows"), std::string::npos);
  EXPECT_THROW(run_gate(table({}), base, {}), GateError);
}

TEST(Gate, DuplicateKeysAreRefusedByName) {
  const auto dup =
      table({timed_row("1", 10, 9.9, 10.1), timed_row("7", 1, 1, 1), timed_row("1", 11, 11, 11)},
            "dup.csv");
  try {
    run_gate(dup, table({timed_row("1", 10, 9.9, 10.1)}), {});
    FAIL() << "expected GateError";
  } catch (const GateError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("dup.csv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lines 2 and 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("T=1 "), std::string::npos) << msg;
  }
}

TEST(Gate, DeviceMismatchRefusedUnlessAllowed) {
  const auto base = table({timed_row("1", 10, 9.9, 10.1, "H200")});
  const auto cur = table({timed_row("1", 10, 9.9, 10.1, "H100")});
  EXPECT_THROW(run_gate(base, cur, {}), GateError);
  GateOptions allow;
  allow.allow_device_mismatch = true;
  EXPECT_EQ(only_verdict(run_gate(base, cur, allow)), Verdict::same);  // matched across devices
}

// Rows of one case timed over other buffer sets or in another mode measure other things: the
// gate refuses them (exit 3) rather than judging one against the other.
TEST(Gate, RowsTimedDifferentlyAreRefused) {
  auto one = timed_row("1", 10, 9.9, 10.1);
  one.mode = "graph";
  auto sets = one, cold = one, untimed = one;
  sets.buffer_sets = 61;
  cold.mode = "cold";
  untimed.timing.reset();
  untimed.status = Status::failed;
  const auto& base = table({one}, "base.csv");
  try {
    run_gate(base, table({sets}, "cur.csv"), {});
    ADD_FAILURE() << "61 sets judged against 1";
  } catch (const GateError& e) {
    EXPECT_STREQ(e.what(),
                 "timing mismatch: cur.csv:2 was timed in graph mode over 61 buffer sets, its "
                 "baseline row base.csv:2 in graph mode over 1 buffer set; rows timed "
                 "differently are not compared (run with the baseline's settings.mode, "
                 "settings.rotate, settings.context and settings.timer)");
  }
  // The context: a row of another is refused, a row of none (schemas 1 and 2) matches any.
  auto after = one, cold_context = one;
  after.context = "after_producer";
  cold_context.context = "cold";
  try {
    run_gate(table({after}, "base.csv"), table({cold_context}, "cur.csv"), {});
    ADD_FAILURE() << "context cold judged against after_producer";
  } catch (const GateError& e) {
    EXPECT_NE(std::string(e.what()).find("cur.csv:2 was timed in graph mode over 1 buffer set in "
                                         "context cold, its baseline row base.csv:2 in graph mode "
                                         "over 1 buffer set in context after_producer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(only_verdict(run_gate(base, table({after}), {})), Verdict::same);
  // The timer: the cupti timer's launch against the event timer's is refused (back to back they
  // differ by the launch's overlap with the one before it); a row of none matches any.
  auto events = one, cupti = one;
  events.timer = "events";
  cupti.timer = "cupti";
  try {
    run_gate(table({events}, "base.csv"), table({cupti}, "cur.csv"), {});
    ADD_FAILURE() << "the cupti timer judged against the event timer";
  } catch (const GateError& e) {
    EXPECT_NE(std::string(e.what()).find("cur.csv:2 was timed in graph mode over 1 buffer set by "
                                         "the cupti timer, its baseline row base.csv:2 in graph "
                                         "mode over 1 buffer set by the events timer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(only_verdict(run_gate(base, table({cupti}), {})), Verdict::same);
  EXPECT_THROW(run_gate(base, table({cold}), {}), GateError);
  // An untimed row is not judged, so it cannot mismatch; a row without a mode matches any.
  EXPECT_EQ(only_verdict(run_gate(base, table({untimed}), {})), Verdict::incorrect);
  auto no_mode = one;
  no_mode.mode = Text();
  EXPECT_EQ(only_verdict(run_gate(base, table({no_mode}), {})), Verdict::same);
  // 61 cold sets at 3x against one graph set, and one set 20% slower than a 61-set baseline
  // (which the band alone would call `faster`): both refused.
  const ResultTable one_set = read_results(kData + "baseline.csv");
  const ResultTable cold_sets = read_results(kData + "cold_61_sets.csv");
  const ResultTable rotated = read_results(kData + "rotated_baseline.csv");
  const ResultTable hot = read_results(kData + "hot_slower.csv");
  EXPECT_THROW(run_gate(one_set, cold_sets, {}), GateError);
  EXPECT_THROW(run_gate(rotated, hot, {}), GateError);
}

TEST(Gate, AnotherBoardOfTheSameModelIsNamed) {
  auto base_row = timed_row("1", 10, 9.9, 10.1, "H200"), cur_row = base_row;
  base_row.device_uuid = "GPU-aaaa";
  cur_row.device_uuid = "GPU-bbbb";
  const GateReport other = run_gate(table({base_row}), table({cur_row}), {});
  EXPECT_EQ(only_verdict(other), Verdict::same);  // a note, not a refusal
  EXPECT_NE(other.board_note.find("GPU-aaaa"), std::string::npos) << other.board_note;
  EXPECT_NE(other.board_note.find("GPU-bbbb"), std::string::npos) << other.board_note;
  EXPECT_NE(markdown_report(other).find("Note: other board"), std::string::npos);
  cur_row.device_uuid = "GPU-aaaa";
  EXPECT_EQ(run_gate(table({base_row}), table({cur_row}), {}).board_note, "");
  cur_row.device_uuid = "";  // CSVs without a UUID say nothing
  EXPECT_EQ(run_gate(table({base_row}), table({cur_row}), {}).board_note, "");
}

// The measured spread of unchanged code across two boards (6.1% at most) is not a regression there:
// a 6% change is same against another board's baseline, slower against the same board's.
TEST(Gate, AnotherBoardIsJudgedAtItsOwnThreshold) {
  const auto base_row = [] {
    auto r = timed_row("1", 10, 9.99, 10.01, "H200");
    r.device_uuid = "GPU-aaaa";
    return r;
  }();
  auto cur_row = timed_row("1", 10.6, 10.59, 10.61, "H200");
  cur_row.device_uuid = "GPU-bbbb";
  const GateReport other = run_gate(table({base_row}), table({cur_row}), {});
  EXPECT_EQ(only_verdict(other), Verdict::same);
  EXPECT_DOUBLE_EQ(other.cases[0].tolerance, kOtherBoardThreshold);
  EXPECT_NE(other.board_note.find("other-board threshold (8%)"), std::string::npos)
      << other.board_note;
  GateOptions strict;
  strict.other_board_threshold = 0.05;
  EXPECT_EQ(only_verdict(run_gate(table({base_row}), table({cur_row}), strict)), Verdict::slower);
  cur_row.device_uuid = "GPU-aaaa";
  EXPECT_EQ(only_verdict(run_gate(table({base_row}), table({cur_row}), {})), Verdict::slower);
  cur_row = timed_row("1", 10.9, 10.89, 10.91, "H200");
  cur_row.device_uuid = "GPU-bbbb";
  EXPECT_EQ(only_verdict(run_gate(table({base_row}), table({cur_row}), {})), Verdict::slower);
}

TEST(Gate, VariantIsPartOfTheKey) {
  auto opt = timed_row("1", 5, 5, 5);
  opt.axes.at(1) = "optimized";
  const GateReport r = run_gate(table({timed_row("1", 10, 9.9, 10.1)}),
                                table({timed_row("1", 10, 9.9, 10.1), opt}), {});
  EXPECT_EQ(r.counts.at(Verdict::same), 1);
  EXPECT_EQ(r.counts.at(Verdict::added), 1);
}

// compare --variants triton,optimized: one CSV's rows of one variant against another's, case by
// case, each current row judged against the baseline's row of the other variant.
TEST(Gate, RowsOfOneVariantAgainstAnother) {
  const auto row = [](const std::string& variant, const std::string& tokens, double median) {
    ResultRow r = timed_row(tokens, median, median * 0.99, median * 1.01);
    r.axes.at(Col::variant) = Text(variant);
    return r;
  };
  const ResultTable& both =
      table({row("triton", "1", 2.0), row("optimized", "1", 1.0), row("triton", "16", 3.0),
             row("optimized", "16", 3.0), row("seed_port", "16", 9.0)});
  const ResultTable base = rows_of_variant(both, "triton", "optimized");
  const ResultTable cur = rows_of_variant(both, "optimized", "optimized");
  ASSERT_EQ(base.rows.size(), 2u);
  EXPECT_EQ(base.rows[0].axes[Col::variant], "optimized");
  EXPECT_EQ(base.rows[1].line, 4u);  // rows keep their lines
  const GateReport r = run_gate(base, cur, {});
  EXPECT_EQ(r.counts.at(Verdict::faster), 1);  // T=1: 2.0 -> 1.0
  EXPECT_EQ(r.counts.at(Verdict::same), 1);    // T=16: 3.0 -> 3.0
  EXPECT_EQ(r.cases.size(), 2u);               // seed_port's row is not among them
  try {
    rows_of_variant(both, "slot_order", "optimized");
    FAIL() << "no rows of the variant";
  } catch (const GateError& e) {
    EXPECT_EQ(std::string(e.what()), "t.csv: no rows of variant 'slot_order' (--variants)");
  }
}

TEST(Gate, ReportsNameEveryCase) {
  const auto base = table({timed_row("1", 10, 9.9, 10.1), timed_row("2", 10, 9.9, 10.1)});
  const GateReport r = run_gate(base, table({timed_row("1", 20, 19.9, 20.1)}), {});
  const std::string md = markdown_report(r);
  EXPECT_NE(md.find("| **slower** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **missing** |"), std::string::npos) << md;
  const std::string xml = junit_report(r);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"slower\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"missing\""), std::string::npos) << xml;
}

// A reason from the CSV reaches the reports as printable, well-formed text: a byte that is not
// UTF-8 is '?', an escape sequence's control characters spaces, and U+FFFE (not XML) '?'.
TEST(Gate, ReportsPrintOnlyWellFormedText) {
  ResultRow bad = timed_row("1", 10, 9.9, 10.1);
  bad.status = Status::incorrect;
  bad.reason = std::string("caf\xe9 \x1b]0;title\x07 x\xef\xbf\xbey");
  const GateReport r = run_gate(table({timed_row("1", 10, 9.9, 10.1)}), table({bad}), {});
  const std::string md = markdown_report(r), xml = junit_report(r);
  EXPECT_NE(md.find("caf?  ]0;title  x\xef\xbf\xbey"), std::string::npos) << md;
  EXPECT_NE(xml.find("caf?  ]0;title  x?y"), std::string::npos) << xml;
  for (const std::string* text : {&md, &xml}) {
    EXPECT_EQ(text->find('\x1b'), std::string::npos);
    EXPECT_EQ(text->find('\xe9'), std::string::npos);
  }
}

// Each operation describes its own rows; a row of an operation this build does not know is
// described by its key's columns, never as another operation's.
TEST(Gate, EachOperationDescribesItsRows) {
  ResultRow r = timed_row("7", 10, 9.9, 10.1);
  EXPECT_EQ(describe_axes(r), "T=7 H=128 NOPE=128 ROPE=64 bf16->bf16 strides=contiguous");
  r.axes = {"reshape_and_cache_flash",
            "optimized",
            "s",
            "9",
            "8",
            "96",
            "0",
            "32",
            "f16",
            "fp8_e4m3",
            "hnd",
            "per_head",
            "true",
            "true",
            "padded",
            "skip"};
  EXPECT_EQ(describe_axes(r),
            "T=9 H=8 D=96 BS=32 hnd f16->fp8_e4m3 strides=padded scale=per_head slots=skip swa "
            "kv_interleaved");
  r.axes.at(Col::kernel) = "mla_future";
  EXPECT_EQ(describe_axes(r),
            "num_tokens=9 num_heads=8 head_dim=96 rope_dim=0 block_size=32 in_dtype=f16 "
            "out_dtype=fp8_e4m3 layout=hnd scale=per_head swa=true kv_interleaved=true "
            "strides=padded slots=skip");
}

// --- The reader, on the committed CSVs ---

TEST(ResultCsv, ReadsByColumnNameWithExtraColumns) {
  const ResultTable base = read_results(kData + "baseline.csv");
  const ResultTable rerun = read_results(kData + "rerun.csv");  // reordered, one extra column
  ASSERT_EQ(base.rows.size(), 5u);
  ASSERT_EQ(rerun.rows.size(), 5u);
  EXPECT_EQ(base.rows[0].axes, rerun.rows[0].axes);
  EXPECT_EQ(base.rows[0].line, 2u);
  ASSERT_TRUE(base.rows[1].timing);
  EXPECT_DOUBLE_EQ(base.rows[1].timing->median_us, 100.0);
  EXPECT_EQ(base.rows[3].status, Status::not_supported);
  EXPECT_FALSE(base.rows[3].timing);
  EXPECT_NE(base.rows[3].reason.str().find("f32, f16"), std::string::npos);  // quoted commas
  EXPECT_EQ(base.rows[0].device, "NVIDIA H200");
}

TEST(ResultCsv, ReadsTheBoardWhenThereIsOne) {
  EXPECT_EQ(read_results(kData + "baseline.csv").rows[0].device_uuid, "");  // no such column
  const ResultTable h200 = read_results(std::string(KVBENCH_SOURCE_DIR) + "/results/h200/perf.csv");
  ASSERT_FALSE(h200.rows.empty());
  EXPECT_EQ(h200.rows[0].device_uuid.str().rfind("GPU-", 0), 0u) << h200.rows[0].device_uuid;
}

TEST(ResultCsv, EmptyFilesHaveNoRows) {
  EXPECT_TRUE(read_results(kData + "empty.csv").rows.empty());
  EXPECT_TRUE(read_results(kData + "header_only.csv").rows.empty());
}

void expect_error(const std::string& file, const std::string& fragment) {
  try {
    read_results(kData + file);
    ADD_FAILURE() << file << ": expected ResultCsvError";
  } catch (const ResultCsvError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ResultCsv, MalformedFilesNameFileLineAndColumn) {
  expect_error("bad_type.csv", "bad_type.csv:4: column 'median_us': 'fast'");
  expect_error("missing_column.csv", "missing_column.csv:1: missing column 'p90_us'");
  expect_error("truncated.csv", "truncated.csv:6: too few columns");
  expect_error("schema5.csv", "schema5.csv:2: column 'schema_version': '5'");
  expect_error("context_bad.csv",
               "context_bad.csv:2: column 'context': unknown context 'warm' (expected one of "
               "back_to_back, cold, after_producer, layer)");
  expect_error("timer_bad.csv",
               "timer_bad.csv:2: column 'timer': unknown timer 'stopwatch' (expected one of "
               "events, cupti)");
  // A timed row says how it was timed, and took time.
  expect_error("context_empty.csv", "context_empty.csv:2: column 'context': empty in a timed row");
  expect_error("timer_empty.csv", "timer_empty.csv:2: column 'timer': empty in a timed row");
  expect_error("zero_median.csv", "zero_median.csv:2: column 'median_us': 0 in a timed row");
  expect_error("timed_not_supported.csv",
               "timed_not_supported.csv:4: column 'median_us': set in a not_supported row "
               "(nothing was launched)");
  expect_error("no_such_file.csv", "no_such_file.csv: cannot open");
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

// A row is read with its schema's meanings, so it must be of the header's: a schema-2 row under
// a schema-4 header (with a timer column) was read as a schema-4 row, and the other way round.
TEST(ResultCsv, RowSchemaIsTheHeaders) {
  std::ifstream in(kData + "schema2_rerun.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto with_rows_of = [&](const std::string& schema) {
    std::string t = text;
    for (std::size_t at; (at = t.find("\n2,")) != std::string::npos;)
      t.replace(at, 3, "\n" + schema + ",");
    return t;
  };
  EXPECT_NO_THROW(parse_results(text, "s.csv"));
  for (const std::string schema : {"1", "4"}) {
    try {
      parse_results(with_rows_of(schema), "s.csv");
      ADD_FAILURE() << "a schema-" << schema << " row under a schema-2 header was read";
    } catch (const ResultCsvError& e) {
      EXPECT_EQ(std::string(e.what()),
                "s.csv:2: column 'schema_version': '" + schema +
                    "', but the header has the columns of schema 2 (a row of another schema "
                    "pasted in?)");
    }
  }
}

}  // namespace
}  // namespace kvbench
