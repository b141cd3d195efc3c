// CSV rows: one column list, every row full width, free text quoted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/csv.hpp"
#include "core/outputs.hpp"
#include "core/result_csv.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

// Quote-aware split (RFC 4180), independent of the writer's code.
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out(1);
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (in_quotes) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        in_quotes = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      in_quotes = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

Row passed_row() {
  Row r;
  r.c = testing_support::cache_case(128, 8, 128);
  r.c.sweep = "llama";
  r.status = Status::passed;
  r.written_tokens = 128;
  r.bytes = 1024;
  r.mode = TimingMode::graph;
  r.timed = true;
  r.stats.samples = 3;
  r.stats.median_us = 1.5;
  r.stats.mean_us = 1.25;
  r.stats.rel_stdev = 0.01;
  r.launches_per_sample = 20;
  r.converged = true;
  r.stats.median_ci_rel = 0.002;
  r.gbps = 682.7;
  r.pct_of_measured_peak = 16.25;
  r.pct_of_theoretical_peak = 14.2;
  r.sm_clock_mhz = 1980.4;
  r.device = "NVIDIA H200";
  r.device_uuid = "GPU-1";
  r.git_sha = "abc";
  return r;
}

std::string field(const std::string& line, const std::string& column) {
  const auto& cols = csv_columns();
  const auto fields = split(line);
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == column) return fields.at(i);
  return "<no column " + column + ">";
}

TEST(Csv, HeaderIsSnakeCaseWithSchemaVersionFirst) {
  const auto cols = split(csv_header());
  EXPECT_EQ(cols.size(), csv_columns().size());
  EXPECT_EQ(cols.front(), "schema_version");
  for (const auto& c : cols)
    for (char ch : c) EXPECT_TRUE(std::islower(ch) || std::isdigit(ch) || ch == '_') << c;
}

TEST(Csv, PassedRowHasEveryColumn) {
  const std::string line = csv_line(passed_row());
  EXPECT_EQ(split(line).size(), csv_columns().size());
  EXPECT_EQ(field(line, "schema_version"), "4");
  EXPECT_EQ(field(line, "buffer_sets"), "1");
  EXPECT_EQ(field(line, "kernel"), "reshape_and_cache_flash");
  EXPECT_EQ(field(line, "status"), "passed");
  EXPECT_EQ(field(line, "median_us"), "1.500");
  EXPECT_EQ(field(line, "gbps"), "682.7");
  EXPECT_EQ(field(line, "swa"), "false");
  EXPECT_EQ(field(line, "device"), "NVIDIA H200");
  EXPECT_EQ(field(line, "launches_per_sample"), "20");
  EXPECT_EQ(field(line, "converged"), "true");
  EXPECT_EQ(field(line, "median_ci_rel"), "0.00200");
  EXPECT_EQ(field(line, "pct_of_measured_peak"), "16.2");
  EXPECT_EQ(field(line, "pct_of_theoretical_peak"), "14.2");
  EXPECT_EQ(field(line, "sm_clock_mhz"), "1980");
  EXPECT_EQ(field(line, "clock_low"), "false");
  EXPECT_EQ(field(line, "device_uuid"), "GPU-1");
  EXPECT_EQ(field(line, "git_dirty"), "false");
}

TEST(Csv, UnknownPeaksAndClockLeaveTheirColumnsEmpty) {
  Row r = passed_row();
  r.pct_of_measured_peak = r.pct_of_theoretical_peak = r.sm_clock_mhz = 0;
  r.stats.median_ci_rel = std::numeric_limits<double>::infinity();
  const std::string line = csv_line(r);
  EXPECT_EQ(field(line, "pct_of_measured_peak"), "");
  EXPECT_EQ(field(line, "pct_of_theoretical_peak"), "");
  EXPECT_EQ(field(line, "sm_clock_mhz"), "");
  EXPECT_EQ(field(line, "median_ci_rel"), "");
  EXPECT_EQ(field(line, "median_us"), "1.500");
  // The event timer gives no gap or span: empty, not 0 (a gap of 0 is a figure).
  r.timer = Timer::events;
  EXPECT_EQ(field(csv_line(r), "timer"), "events");
  EXPECT_EQ(field(csv_line(r), "gap_us"), "");
  EXPECT_EQ(field(csv_line(r), "span_us"), "");
  r.timer = Timer::cupti;
  r.gap_us = -0.512;
  r.span_us = 0;
  EXPECT_EQ(field(csv_line(r), "gap_us"), "-0.512");
  EXPECT_EQ(field(csv_line(r), "span_us"), "0.000");
}

TEST(Csv, KeepsTheColumnsOtherToolsRead) {
  // kvbench compare (the regression gate) and docs/results.md rely on these names.
  for (const char* name : {"schema_version",
                           "kernel",
                           "variant",
                           "sweep",
                           "num_tokens",
                           "num_heads",
                           "head_dim",
                           "rope_dim",
                           "block_size",
                           "in_dtype",
                           "out_dtype",
                           "layout",
                           "scale",
                           "swa",
                           "kv_interleaved",
                           "strides",
                           "slots",
                           "status",
                           "reason",
                           "bytes",
                           "samples",
                           "median_us",
                           "mean_us",
                           "min_us",
                           "max_us",
                           "p10_us",
                           "p90_us",
                           "rel_stdev",
                           "gbps",
                           "device",
                           "pct_of_measured_peak",
                           "pct_of_theoretical_peak",
                           "sm_clock_mhz"}) {
    const auto& cols = csv_columns();
    EXPECT_EQ(std::count(cols.begin(), cols.end(), name), 1) << name;
  }
}

TEST(Csv, FailedRowIsFullWidthAndQuotesItsReason) {
  Row r = passed_row();
  r.timed = false;
  r.mode.reset();
  r.status = Status::incorrect;
  r.mismatches = 3;
  r.reason = "3 of 10 elements differ; first: [1] expected 0x3f80 got \"0x0000\",\nmore";
  const std::string line = csv_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(split(line).size(), csv_columns().size());
  EXPECT_EQ(field(line, "status"), "incorrect");
  EXPECT_EQ(field(line, "reason"),
            "3 of 10 elements differ; first: [1] expected 0x3f80 got \"0x0000\", more");
  EXPECT_EQ(field(line, "median_us"), "");
  EXPECT_EQ(field(line, "gbps"), "");
  EXPECT_EQ(field(line, "git_sha"), "abc");
}

TEST(Csv, WriterFlushesEachRowWhole) {
  const std::string path = ::testing::TempDir() + "/kvbench_writer.csv";
  {
    RowFile w(path, csv_header(), RowFile::Mode::replace);  // as `kvbench run` writes
    w.write(csv_line(passed_row()));
    // Before the writer closes, the file already holds the header and the whole row.
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), csv_header() + "\n" + csv_line(passed_row()) + "\n");
  }
  std::remove(path.c_str());
}

// A run killed mid-sweep (crash, Ctrl-C) leaves a file whose every line is a whole row: a child
// process writes rows and dies by SIGKILL without closing anything; the parent reads the file.
TEST(Csv, KilledWriterLeavesEveryFinishedRowParseable) {
  const std::string path = ::testing::TempDir() + "/kvbench_killed.csv";
  std::remove(path.c_str());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RowFile w(path, csv_header(), RowFile::Mode::replace);  // as `kvbench run` writes
    Row failed = passed_row();
    failed.timed = false;
    failed.status = Status::failed;
    failed.reason = "out of device memory";
    w.write(csv_line(passed_row()));
    w.write(csv_line(failed));
    w.write(csv_line(passed_row()));
    raise(SIGKILL);  // no destructor, no close
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], csv_header());
  for (std::size_t i = 1; i < lines.size(); ++i)
    EXPECT_EQ(split(lines[i]).size(), csv_columns().size()) << lines[i];
  EXPECT_EQ(field(lines[2], "status"), "failed");
  EXPECT_EQ(field(lines[2], "reason"), "out of device memory");
  EXPECT_EQ(field(lines[2], "median_us"), "");
  EXPECT_EQ(field(lines[3], "median_us"), "1.500");
  std::remove(path.c_str());
}

TEST(Csv, WriterNamesAnUnwritablePath) {
  RowFile w("/dev/null/out.csv", csv_header(), RowFile::Mode::replace);
  EXPECT_THROW(
      {
        try {
          w.write(csv_line(passed_row()));
        } catch (const std::runtime_error& e) {
          EXPECT_EQ(std::string(e.what()).rfind("/dev/null/out.csv: cannot write: ", 0), 0u)
              << e.what();
          throw;
        }
      },
      std::runtime_error);
}

}  // namespace
// The one line splitter (what `kvbench run` reads its rows back with) inverts csv_quoted fields
// joined by commas: quotes, doubled quotes, commas and empty fields included.
TEST(Csv, SplitInvertsJoin) {
  const std::vector<std::string> fields = {"a", "", "b,c", "say \"hi\"", "", "x\"y,z\"", ""};
  std::vector<std::string> quoted;
  for (const std::string& f : fields) quoted.push_back(csv_quoted(f));
  EXPECT_EQ(split_csv(join_csv(quoted)), fields);
  const std::string line = csv_line(passed_row());
  EXPECT_EQ(split_csv(line).size(), csv_columns().size());
  EXPECT_EQ(join_csv(split_csv(line)), line);
}

namespace {

// Two rows, one of each operation, timed, with every field away from its default and from the
// other row's: together they give every column a value that a reader leaving the column alone
// would not write back.
Row concat_row() {
  Row r;
  r.c = testing_support::concat_case(77, 3, 96, 32, StrideMode::sglang);
  r.c.variant = Variant::optimized;
  r.c.sweep = "mla, \"quoted\"";
  r.c.in_dtype = DType::f16;
  r.c.out_dtype = DType::bf16;
  r.status = Status::passed;
  r.written_tokens = 77;
  r.bytes = 4096;
  r.mode = TimingMode::graph;
  r.buffer_sets = 2;
  r.timed = true;
  r.stats = {5, 2.5, 2.75, 2.25, 3.5, 2.375, 3.125, 0.0125, 0.004};
  r.launches_per_sample = 20;
  r.converged = true;
  r.gbps = 1638.4;
  r.pct_of_measured_peak = 40.5;
  r.pct_of_theoretical_peak = 35.5;
  r.sm_clock_mhz = 1980;
  r.device = "NVIDIA H200, test";
  r.device_uuid = "GPU-1";
  r.git_sha = "abc";
  return r;
}

Row cache_row() {
  Row r;
  r.c = testing_support::cache_case(9, 5, 80, 32);
  CacheWriteParams& p = testing_support::cache_params(r.c);
  p.layout = Layout::hnd;
  p.scale = ScaleMode::per_head;
  p.swa = true;
  p.kv_interleaved = true;
  p.slots = SlotPattern::skip;
  r.c.variant = Variant::slot_order;
  r.c.sweep = "paged";
  r.c.in_dtype = DType::f32;
  r.c.out_dtype = DType::fp8_e4m3;
  r.c.strides = StrideMode::padded;
  r.status = Status::incorrect;
  r.reason = "3 mismatches, first at (0, 1)";
  r.mismatches = 3;
  r.written_tokens = 8;
  r.bytes = 8192;
  r.mode = TimingMode::cold;
  r.buffer_sets = 3;
  r.context = Context::layer;
  r.timer = Timer::cupti;
  r.gap_us = -0.512;  // a launch that started before its predecessor ended
  r.span_us = 35.84;
  r.timed = true;
  r.stats = {7, 1.5, 1.75, 1.25, 2.5, 1.375, 2.125, 0.0225, 0.008};
  r.launches_per_sample = 1;
  r.converged = false;
  r.gbps = 5461.3;
  r.pct_of_measured_peak = 120.5;
  r.pct_of_theoretical_peak = 110.5;
  r.sm_clock_mhz = 1500;
  r.clock_low = true;
  r.device = "NVIDIA H100";
  r.device_uuid = "GPU-2";
  r.git_sha = "def";
  r.git_dirty = true;
  return r;
}

// The fields of a row of `kernel` with every field at its default.
std::vector<std::string> default_fields(Kernel kernel) {
  Row r;
  r.c = operation(kernel).default_case();
  return split_csv(csv_line(r));
}

std::string refusal(const std::vector<std::string>& fields) {
  try {
    row_of_fields(fields);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

// A column the writer writes but the reader does not read back (or reads wrongly) fails here.
TEST(Csv, EveryColumnIsReadBackAsWritten) {
  const Row rows[] = {concat_row(), cache_row()};
  std::vector<std::string> fields[2], defaults[2];
  for (int k = 0; k < 2; ++k) {
    fields[k] = split_csv(csv_line(rows[k]));
    defaults[k] = default_fields(rows[k].c.kernel);
    ASSERT_EQ(fields[k].size(), kColumnCount);
    ASSERT_EQ(defaults[k].size(), kColumnCount);
  }
  for (std::size_t i = 0; i < kColumnCount; ++i) {
    // The same in every row this build writes; and the kernel, which the reader must read
    // before any other key column (its operation makes the case they fill).
    if (i == index(Col::schema_version) || i == index(Col::kernel)) continue;
    EXPECT_TRUE(fields[0][i] != defaults[0][i] || fields[1][i] != defaults[1][i])
        << "column '" << kColumns[i].name << "': both test rows hold its default";
  }
  for (int k = 0; k < 2; ++k) {
    const std::vector<std::string> back = split_csv(csv_line(row_of_fields(fields[k])));
    ASSERT_EQ(back.size(), kColumnCount);
    for (std::size_t i = 0; i < kColumnCount; ++i)
      EXPECT_EQ(back[i], fields[k][i]) << "column '" << kColumns[i].name << "' of row " << k;
  }
}

// The case key: the case_key columns of the table, adjacent, and read back into the same case.
TEST(Csv, CaseKeyIsTheTablesCaseKeyColumns) {
  std::vector<std::string> key;
  for (const ColumnInfo& c : kColumns)
    if (c.role == ColumnRole::case_key) key.emplace_back(c.name);
  EXPECT_EQ(case_columns(), key);
  EXPECT_EQ(result_axis_columns(), key);
  for (const Row& r : {concat_row(), cache_row()}) {
    EXPECT_EQ(case_fields(case_of_key(case_key(r.c))), case_fields(r.c));
    EXPECT_EQ(case_key(r.c)[key_index(Col::sweep)], r.c.sweep);  // unquoted
  }
}

TEST(Csv, ReaderNamesTheColumnAndValueItRefuses) {
  std::vector<std::string> f = split_csv(csv_line(cache_row()));
  f[index(Col::swa)] = "maybe";
  EXPECT_EQ(refusal(f), "swa 'maybe' is not true or false");
  f = split_csv(csv_line(cache_row()));
  f[index(Col::mismatches)] = "-1";
  EXPECT_EQ(refusal(f), "mismatches '-1' is not an integer");
  f = split_csv(csv_line(cache_row()));
  f[index(Col::schema_version)] = "5";
  EXPECT_EQ(refusal(f), "schema_version '5' is not 4 (this build's rows)");
  f.pop_back();
  EXPECT_EQ(refusal(f), "a row of " + std::to_string(kColumnCount - 1) + " fields, not " +
                            std::to_string(kColumnCount));
}

}  // namespace kvbench
