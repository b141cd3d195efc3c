// Hostile and careless input: every malformed config or result CSV is refused with
// file:line:col and the key or column, never read wrongly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/case.hpp"
#include "core/checked.hpp"
#include "core/file_io.hpp"
#include "core/result_csv.hpp"
#include "core/sweep.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

const std::string kData = std::string(KVBENCH_SOURCE_DIR) + "/tests/data/gate/";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string config_error(const std::string& yaml, std::uint64_t max_cases = kDefaultMaxCases) {
  try {
    parse_config(yaml, "t.yaml", max_cases);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string csv_error(const std::string& text) {
  try {
    parse_results(text, "r.csv");
  } catch (const ResultCsvError& e) {
    return e.what();
  }
  return "no error";
}

const char* kSweep = "sweeps:\n  - kernel: reshape_and_cache_flash\n";

TEST(InputYaml, DuplicateKeysAreErrors) {
  EXPECT_EQ(
      config_error(std::string(kSweep) + "    axes: {num_tokens: 1}\n    axes: {num_tokens: -1}\n"),
      "t.yaml:4:5: sweeps[0].axes: duplicate key (first at line 3)");
  EXPECT_EQ(config_error(std::string(kSweep) + "sweeps: []\n"),
            "t.yaml:3:1: sweeps: duplicate key (first at line 1)");
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes: {num_tokens: 1, num_tokens: 2}\n"),
            "t.yaml:3:27: sweeps[0].axes.num_tokens: duplicate key (first at line 3)");
}

TEST(InputYaml, ASecondDocumentIsAnError) {
  EXPECT_EQ(config_error(std::string(kSweep) + "---\n" + kSweep),
            "t.yaml:3:1: a second YAML document; a config is one document (remove the '---' "
            "or what follows)");
  EXPECT_NE(config_error(std::string(kSweep) + "---\nsweeps: [\n").find("t.yaml:5:1: YAML syntax"),
            std::string::npos);
}

TEST(InputYaml, ListsAndMapsAsKeysAreErrors) {
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes: {[a]: 1}\n"),
            "t.yaml:3:12: sweeps[0].axes: a list used as a key");
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes: {{a: 1}: 1}\n"),
            "t.yaml:3:12: sweeps[0].axes: a mapping used as a key");
  EXPECT_EQ(config_error("? [sweeps]\n: 1\n"), "t.yaml:1:3: a list used as a key");
}

TEST(InputYaml, IntegersAreYaml12) {
  const Config c =
      parse_config(std::string(kSweep) + "    axes: {num_tokens: [010, 0x10, 0o10]}\n", "t.yaml");
  ASSERT_EQ(c.cases.size(), 3u);
  EXPECT_EQ(c.cases[0].num_tokens, 10);
  EXPECT_EQ(c.cases[1].num_tokens, 16);
  EXPECT_EQ(c.cases[2].num_tokens, 8);
  std::uint64_t u = 0;
  EXPECT_FALSE(parse_uint64("-1", u));
  EXPECT_FALSE(parse_uint64("18446744073709551616", u));
  EXPECT_TRUE(parse_uint64("18446744073709551615", u));
  EXPECT_EQ(u, 18446744073709551615ull);
  EXPECT_FALSE(parse_uint64("", u));
  EXPECT_FALSE(parse_uint64("0x", u));
  EXPECT_FALSE(parse_uint64("1e3", u));
  std::int64_t i = 0;
  EXPECT_TRUE(parse_int64("-9223372036854775808", i));
  EXPECT_FALSE(parse_int64("9223372036854775808", i));
  EXPECT_NE(config_error("settings: {seed: -1}\n" + std::string(kSweep)).find("settings.seed"),
            std::string::npos);
}

TEST(InputYaml, DeepNestingAndUnclosedQuotesAreNamed) {
  const std::string deep = std::string(kSweep) +
                           "    axes: {num_tokens: " + std::string(5000, '[') +
                           std::string(5000, ']') + "}\n";
  EXPECT_NE(config_error(deep).find("nested deeper than 64 levels"), std::string::npos)
      << config_error(deep);
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes:\n      in_dtype: \"bf16\n"),
            "t.yaml:4:17: sweeps[0].axes.in_dtype: quoted string not closed (\" opened here, "
            "the file ends first)");
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes:\n      in_dtype: 'bf16\n"),
            "t.yaml:4:17: sweeps[0].axes.in_dtype: quoted string not closed (' opened here, "
            "the file ends first)");
  // Quotes that do close, with escapes, still read.
  EXPECT_EQ(parse_config(std::string(kSweep) + "    name: 'it''s'\n", "t.yaml").cases[0].sweep,
            "it's");
}

TEST(InputYaml, MergeKeyErrorsHaveLineAndColumn) {
  EXPECT_EQ(
      config_error("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: &x {num_tokens: 1}\n"
                   "  - kernel: reshape_and_cache_flash\n    axes:\n      <<: *x\n"
                   "      bogus: 1\n")
          .substr(0, 35),
      "t.yaml:7:7: sweeps[1].axes.bogus: u");
  EXPECT_EQ(config_error(std::string(kSweep) + "    axes:\n      <<: [1]\n").substr(0, 30),
            "t.yaml:4:12: sweeps[0].axes.<<");
}

TEST(InputYaml, CaseCountIsLimitedBeforeExpanding) {
  std::string values = "[";
  for (int i = 1; i <= 1000; ++i) values += std::to_string(i) + (i < 1000 ? "," : "]");
  const std::string yaml = std::string(kSweep) + "    axes: {num_tokens: " + values +
                           ", num_heads: " + values + ", head_size: " + values + "}\n";
  EXPECT_EQ(config_error(yaml),
            "t.yaml:2:5: sweeps[0]: expands to 1000000000 cases (num_heads 1000 x head_size "
            "1000 x num_tokens 1000), past the limit of 100000 (--max-cases raises it)");
  const std::string two = std::string(kSweep) + "    axes: {num_tokens: [1, 2, 3]}\n" +
                          "  - kernel: reshape_and_cache_flash\n    axes: {num_heads: [1, 2]}\n";
  EXPECT_EQ(config_error(two, 4),
            "t.yaml:4:5: sweeps[1]: expands to 2 cases (num_heads 2), with 3 cases before it, "
            "past the limit of 4 (--max-cases raises it)");
  EXPECT_EQ(parse_config(two, "t.yaml", 5).cases.size(), 5u);
}

TEST(InputYaml, SizeProductsOverflowingAreRefused) {
  const std::string big = "2147483647";
  EXPECT_NE(config_error(std::string(kSweep) + "    axes: {num_tokens: " + big +
                         ", num_heads: " + big + ", head_size: " + big + "}\n")
                .find("t.yaml:2:5: sweeps[0]: reshape_and_cache_flash"),
            std::string::npos);
  EXPECT_NE(config_error("sweeps:\n  - kernel: concat_and_cast_mha_k\n    axes: {num_tokens: " +
                         big + ", num_heads: " + big + ", nope_dim: " + big + "}\n")
                .find("overflows 64 bits"),
            std::string::npos);
  const Case c = testing_support::cache_case(2147483647, 2147483647, 2147483647);
  EXPECT_THROW(cache_geometry(c), SizeOverflow);
  EXPECT_THROW(check_sizes(c), SizeOverflow);
}

TEST(InputYaml, DirectoriesAndDevicesAreNotConfigs) {
  EXPECT_THROW(load_config("/tmp"), ConfigError);
  EXPECT_THROW(load_config("/dev/zero"), ConfigError);
}

// --- result CSVs ---

std::string header() {
  const std::string text = slurp(kData + "baseline.csv");
  return text.substr(0, text.find('\n') + 1);
}
// Line 3 of baseline.csv is a timed row; `edit` rewrites one of its fields.
std::string baseline_with(const std::string& column, const std::string& value) {
  const std::string text = slurp(kData + "baseline.csv");
  ResultTable t = parse_results(text, "b.csv");
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  // Column index in the header.
  std::size_t index = 0, start = 0;
  const std::string& h = lines[0];
  while (true) {
    const std::size_t comma = h.find(',', start);
    if (h.substr(start, comma - start) == column) break;
    ++index;
    start = comma + 1;
  }
  std::string& row = lines[2];
  std::size_t field = 0, b = 0;
  while (field < index) b = row.find(',', b) + 1, ++field;
  const std::size_t e = row.find(',', b);
  row = row.substr(0, b) + value + row.substr(e);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(InputCsv, InconsistentTimesAreBadInput) {
  EXPECT_EQ(csv_error(baseline_with("p10_us", "200")),
            "r.csv:3: column 'p10_us': 200.000 is above p90_us 100.500");
  EXPECT_EQ(csv_error(baseline_with("median_us", "-1")),
            "r.csv:3: column 'median_us': '-1' is not a non-negative number");
  EXPECT_EQ(csv_error(baseline_with("p90_us", "nan")),
            "r.csv:3: column 'p90_us': 'nan' is not a non-negative number");
  EXPECT_EQ(csv_error(baseline_with("p90_us", "inf")),
            "r.csv:3: column 'p90_us': 'inf' is not a non-negative number");
  EXPECT_EQ(csv_error(baseline_with("p90_us", "1e999")),
            "r.csv:3: column 'p90_us': '1e999' is not a non-negative number");
  EXPECT_EQ(csv_error(baseline_with("median_us", "99")),
            "r.csv:3: column 'median_us': 99.000 is outside p10_us..p90_us [99.500, 100.500]");
  EXPECT_EQ(csv_error(baseline_with("median_us", "")),
            "r.csv:3: column 'median_us': empty, but p10_us is set");
  EXPECT_EQ(csv_error(baseline_with("num_heads", "1" + std::string(19, '0'))),
            "r.csv:3: column 'num_heads': '10000000000000000000' is not an integer (up to 18 "
            "digits)");
}

TEST(InputCsv, BomCrlfAndBlankLinesRead) {
  std::string text = slurp(kData + "baseline.csv");
  std::string crlf = "\xEF\xBB\xBF";
  for (char ch : text) crlf += ch == '\n' ? std::string("\r\n\r\n") : std::string(1, ch);
  const ResultTable t = parse_results(crlf, "r.csv");
  ASSERT_EQ(t.rows.size(), 5u);
  EXPECT_EQ(t.rows[4].line, 11u);
  EXPECT_EQ(t.rows[4].device, parse_results(text, "x").rows[4].device);
}

TEST(InputCsv, RaggedAndOverlongLinesAreNamed) {
  EXPECT_EQ(csv_error(header() + "1,2\n"), "r.csv:2: too few columns (truncated line?)");
  EXPECT_EQ(csv_error(header().substr(0, header().size() - 1) + ",x\n" + "1\n").substr(0, 18),
            "r.csv:2: too few c");
  EXPECT_EQ(csv_error(header() + "\"1,\n"), "r.csv:2: quoted field not closed (truncated line?)");
  EXPECT_EQ(csv_error(header() + std::string(kMaxResultLine + 10, 'x')),
            "r.csv:2: line longer than 1048576 bytes (is this a result CSV?)");
  EXPECT_EQ(csv_error("schema_version,status\n"),
            "r.csv:1: missing column 'kernel' in the "
            "header (is this a kvbench result CSV?)");
  EXPECT_EQ(csv_error("kernel,kernel,schema_version\n"),
            "r.csv:1: column 'kernel' appears twice in the header");
}

std::string read_error(const std::string& path) {
  try {
    read_results(path);
  } catch (const ResultCsvError& e) {
    return e.what();
  }
  return "no error";
}

TEST(InputCsv, DirectoriesAndDevicesAreRefused) {
  EXPECT_EQ(read_error("/tmp"), "/tmp: is a directory, not a result CSV");
  EXPECT_EQ(read_error("/dev/zero"),
            "/dev/zero: not a regular file or a pipe; refusing to read a device");
}

// A FIFO written once is read once: the reader does not reopen it (it would block forever).
// A NUL byte would end fccp's C-string line early; it is refused, from memory and from a file.
TEST(InputCsv, ANulByteIsRefused) {
  std::string text = slurp(kData + "baseline.csv");
  const std::size_t at = text.size() - 3;
  text[at] = '\0';
  EXPECT_EQ(csv_error(text),
            "r.csv: a NUL byte at offset " + std::to_string(at) + " (a result CSV is text)");
  char path[] = "/tmp/kvbench_nul_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  try {
    read_results(path);
    ADD_FAILURE() << "no error";
  } catch (const ResultCsvError& e) {
    EXPECT_NE(std::string(e.what()).find("a NUL byte at offset " + std::to_string(at)),
              std::string::npos)
        << e.what();
  }
  std::remove(path);
}

TEST(InputCsv, AFifoIsReadInOnePass) {
  char dir[] = "/tmp/kvbench_fifo_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/r.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string text = slurp(kData + "baseline.csv");
  std::thread writer([&] {
    std::ofstream out(fifo);
    out << text;
  });
  const ResultTable t = read_results(fifo);
  writer.join();
  EXPECT_EQ(t.rows.size(), 5u);
  std::remove(fifo.c_str());
  rmdir(dir);
}

// write_file_atomic: a unique temporary beside the target, renamed into place, removed when the
// rename fails (here: the target is a non-empty directory).
TEST(InputFiles, AtomicWritesLeaveNoTemporary) {
  namespace fs = std::filesystem;
  char dir[] = "/tmp/kvbench_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/out.txt";
  write_file_atomic(file, "one\n");
  write_file_atomic(file, "two\n");
  EXPECT_EQ(slurp(file), "two\n");
  const std::string blocked = std::string(dir) + "/blocked";
  fs::create_directories(blocked + "/inside");
  EXPECT_THROW(write_file_atomic(blocked, "x"), std::runtime_error);
  EXPECT_THROW(write_file_atomic(std::string(dir) + "/missing/x.txt", "x"), std::runtime_error);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"blocked", "out.txt"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvbench
