// The output rules of src/core/outputs.hpp and file_io.hpp, on files in a private folder.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/file_io.hpp"
#include "core/outputs.hpp"

namespace kvbench {
namespace {

namespace fs = std::filesystem;

class Outputs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvbench_outputs_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  static void put(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  std::string dir_;
};

std::string refusal(const std::vector<OutputFile>& outs, const std::vector<InputFile>& ins) {
  try {
    check_outputs(outs, ins);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST_F(Outputs, AnInputUnderAnyNameIsRefused) {
  put(at("r.csv"), "rows\n");
  fs::create_hard_link(at("r.csv"), at("hard.csv"));
  fs::create_symlink("r.csv", at("sym.csv"));
  const std::vector<InputFile> in = {{"the result CSV", at("r.csv")}};
  for (const char* name : {"r.csv", "hard.csv", "sym.csv"})
    EXPECT_NE(refusal({{"--output", at(name)}}, in).find("is also an input (the result CSV "),
              std::string::npos)
        << name;
  EXPECT_EQ(refusal({{"--output", at("other.csv")}}, in), "");
  EXPECT_EQ(read_file(at("r.csv")), "rows\n");
}

TEST_F(Outputs, TwoOutputsOfOneNameAreRefusedBeforeEitherExists) {
  const std::string why =
      refusal({{"--output's sidecar", at("x.json")}, {"--junit", at("./x.json")}}, {});
  EXPECT_NE(why.find("--junit " + at("./x.json") + ": is also the output --output's sidecar"),
            std::string::npos)
      << why;
}

TEST_F(Outputs, NonRegularOutputsAreRefusedOnlyWhereTheCommandSaysSo) {
  ASSERT_EQ(::mkfifo(at("f").c_str(), 0600), 0);
  EXPECT_NE(refusal({{"--output", at("f"), NonRegular::refuse}}, {}).find("is a FIFO"),
            std::string::npos);
  EXPECT_EQ(refusal({{"--junit", at("f")}}, {}), "");
  // /dev/null as input and output: a character device holds nothing to lose.
  EXPECT_EQ(refusal({{"--junit", "/dev/null"}}, {{"the baseline", "/dev/null"}}), "");
  EXPECT_NE(refusal({{"--output", "/dev/null", NonRegular::refuse}}, {}).find("character device"),
            std::string::npos);
  EXPECT_NE(refusal({{"--junit", at("none/j.xml")}}, {}).find("does not exist"), std::string::npos);
  EXPECT_EQ(refusal({{"--output", at("none/x.csv"), NonRegular::refuse, true}}, {}), "");
  EXPECT_NE(refusal({{"--junit", dir_}}, {}).find("is a directory"), std::string::npos);
  // A link to nothing: refused, not replaced by the file.
  fs::create_symlink("gone/real.csv", at("to_nothing.csv"));
  EXPECT_EQ(refusal({{"--output", at("to_nothing.csv"), NonRegular::refuse}}, {}),
            "--output " + at("to_nothing.csv") +
                ": a symlink to gone/real.csv, which does not exist (kvbench writes a link's "
                "target: create it, or remove the link)");
  put(at("file"), "");
  EXPECT_NE(refusal({{"--output", at("file/sub/x.csv"), NonRegular::refuse, true}}, {})
                .find("file is not a folder"),
            std::string::npos);
}

TEST_F(Outputs, AtomicWritesLeaveDevicesAndSymlinksInPlace) {
  write_file_atomic("/dev/null", "text");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  if (fs::exists("/dev/full")) {
    EXPECT_THROW(write_file_atomic("/dev/full", "text"), std::runtime_error);
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  put(at("target.json"), "old");
  fs::create_symlink("target.json", at("link.json"));
  write_file_atomic(at("link.json"), "new");
  EXPECT_TRUE(fs::is_symlink(at("link.json")));
  EXPECT_EQ(read_file(at("target.json")), "new");
}

// A CSV reached through a link has the one sidecar beside its target, wherever the link is; a
// link with no target, or a plain file, has <csv>.json.
TEST_F(Outputs, TheSidecarOfALinkedCsvIsBesideItsTarget) {
  EXPECT_EQ(sidecar_path(at("none.csv")), at("none.csv") + ".json");
  put(at("real.csv"), "rows\n");
  EXPECT_EQ(sidecar_path(at("real.csv")), at("real.csv") + ".json");
  fs::create_symlink("real.csv", at("latest.csv"));
  EXPECT_EQ(sidecar_path(at("latest.csv")), at("real.csv") + ".json");
  fs::create_directory(at("sub"));
  fs::create_symlink("../latest.csv", at("sub/again.csv"));  // a chain, relative to each link
  EXPECT_EQ(sidecar_path(at("sub/again.csv")), at("real.csv") + ".json");
  fs::create_symlink(at("real.csv"), at("absolute.csv"));
  EXPECT_EQ(sidecar_path(at("absolute.csv")), at("real.csv") + ".json");
  fs::create_symlink("gone.csv", at("dangling.csv"));  // refused as an output (check_outputs)
  EXPECT_EQ(sidecar_path(at("dangling.csv")), at("dangling.csv") + ".json");
}

// One writer per output: a second lock of the same file, under any spelling or hard link, is
// refused naming the holder; the lock ends with its holder; other outputs are free.
TEST_F(Outputs, OneWriterPerOutput) {
  const std::string locks = at("locks");
  put(at("real.csv"), "rows\n");
  fs::create_symlink("real.csv", at("latest.csv"));
  fs::create_hard_link(at("real.csv"), at("hard.csv"));  // the same file under another name
  {
    const OutputLock first("--output", at("real.csv"), locks);
    for (const std::string& same :
         {at("real.csv"), at("latest.csv"), dir_ + "/./real.csv", at("hard.csv")}) {
      try {
        const OutputLock second("--output", same, locks);
        ADD_FAILURE() << same << ": a second writer was let in";
      } catch (const std::invalid_argument& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.rfind("--output " + same + ": another kvbench (pid " +
                              std::to_string(::getpid()) + ") is writing it",
                          0),
                  0u)
            << m;
      }
    }
    EXPECT_NO_THROW(OutputLock("OUT", at("other.csv"), locks));  // not written yet: free too
  }
  EXPECT_NO_THROW(OutputLock("--output", at("real.csv"), locks));  // released with its holder
  EXPECT_NO_THROW(OutputLock("--output", at("real.csv"), at("real.csv") + "/no"));  // unlocked
}

TEST_F(Outputs, RowFileTouchesNothingBeforeItsFirstRow) {
  put(at("x.csv"), "old header\nold row\n");
  {
    RowFile f(at("x.csv"), "header", RowFile::Mode::replace);
    EXPECT_FALSE(f.committed());
  }
  EXPECT_EQ(read_file(at("x.csv")), "old header\nold row\n");
  EXPECT_EQ(entries(), 1u);  // no temporary left
  {
    RowFile f(at("x.csv"), "header", RowFile::Mode::replace);
    f.write("row 1");
    EXPECT_EQ(read_file(at("x.csv")), "header\nrow 1\n");
    f.write("row 2");
  }
  EXPECT_EQ(read_file(at("x.csv")), "header\nrow 1\nrow 2\n");
  EXPECT_EQ(entries(), 1u);
  {
    RowFile f(at("sub/y.csv"), "header", RowFile::Mode::replace);
    EXPECT_FALSE(fs::exists(at("sub")));
    f.commit();
  }
  EXPECT_EQ(read_file(at("sub/y.csv")), "header\n");
}

TEST_F(Outputs, RowFileAppendCutsAnUnfinishedRowOnlyWhenItWrites) {
  put(at("x.csv"), "header\nrow 1\nrow 2 cut sh");
  { RowFile f(at("x.csv"), "header", RowFile::Mode::append); }
  EXPECT_EQ(read_file(at("x.csv")), "header\nrow 1\nrow 2 cut sh");
  {
    RowFile f(at("x.csv"), "header", RowFile::Mode::append);
    f.write("row 2");
  }
  EXPECT_EQ(read_file(at("x.csv")), "header\nrow 1\nrow 2\n");
}

TEST_F(Outputs, SealedTextIsReadByPathAndCannotChange) {
  const SealedText copy("sweeps: []\n");
  EXPECT_EQ(read_file(copy.path()), "sweeps: []\n");
  std::ofstream out(copy.path(), std::ios::app);
  out << "more";
  out.flush();
  EXPECT_EQ(read_file(copy.path()), "sweeps: []\n");
}

}  // namespace
}  // namespace kvbench
