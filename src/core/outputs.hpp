// The files a command writes, checked against the files it reads before anything is written,
// and written so that nothing of the user's is lost (docs/cli.md, "Output files").
//
// - An output is never one of the command's inputs, nor another of its outputs: the same file
//   by device and inode (st_dev, st_ino), so another name, a symlink or a hard link counts; an
//   output that does not exist yet is compared by its absolute path.
// - An output that exists and is not a regular file (a device node such as /dev/null or
//   /dev/full, a FIFO or pipe) is never replaced by a rename: it is written in place, or,
//   where the command also keeps a sidecar or reads the file back (`run -o`, `merge OUT`),
//   refused.
// - A CSV written row by row (`run`, `bounds`) leaves its path untouched until the first row
//   exists: a run that cannot start (no device, a worker that fails, an interrupt before any
//   case ends) leaves an existing file, its sidecar and its folder as they were.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvbench {

// A file the command reads: `role` names it in messages ("the config", "a shard").
struct InputFile {
  std::string role;
  std::string path;
};

// What a command does with an output that exists and is not a regular file.
enum class NonRegular {
  write_in_place,  // written through open(2) without O_CREAT or a rename (/dev/null, a FIFO)
  refuse,          // exit 3: the command keeps a sidecar beside it or reads it back
};

struct OutputFile {
  std::string flag;  // "--junit", "--output", "OUT": names it in messages
  std::string path;
  NonRegular non_regular = NonRegular::write_in_place;
  bool creates_folder = false;  // its folder is created when missing (`run -o`, `merge OUT`)
};

// Checks every output of a command before it writes any: the folder exists (unless the output
// creates it), the output is not a directory, not a non-regular file where that is refused, and
// none of `inputs` or of the other outputs. Empty paths are skipped. Throws
// std::invalid_argument naming the flag, the path and the input or output it collides with.
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs);

// One writer per output on this host: an exclusive flock(2) on a file in `lock_dir` named by the
// output's resolved path (a symlink's target; another spelling of a path is the same output),
// held while this object lives and released by the kernel when the process ends, however it
// ends. A second kvbench writing the same output would interleave or replace the first one's
// rows and leave a sidecar describing only one of them; it is refused instead, with
// std::invalid_argument naming the flag, the path and the holder's pid. A lock folder that
// cannot be made leaves the output unlocked (a read-only home): the lock is a guard, not a need.
class OutputLock {
 public:
  OutputLock(const std::string& flag, const std::string& path, const std::string& lock_dir);
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept : fd_(other.fd_), inode_fd_(other.inode_fd_) {
    other.fd_ = other.inode_fd_ = -1;
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;        // the lock of the resolved path
  int inode_fd_ = -1;  // of the file's device and inode, when it exists
};

// True when `path` exists (following symlinks) and is not a regular file or a directory.
bool is_special_file(const std::string& path);

// A CSV written one whole line per write(2), whose path is not touched before its first line.
// `replace`: the first line goes into a temporary sibling with the header, which is then
// renamed over the path (a special file is written in place instead). `append`: the path keeps
// its rows; a last line without its newline (a writer killed mid-row) is cut off first.
class RowFile {
 public:
  enum class Mode { replace, append };
  RowFile(std::string path, std::string header, Mode mode);
  ~RowFile();
  RowFile(const RowFile&) = delete;
  RowFile& operator=(const RowFile&) = delete;

  // Appends `line` and a newline, creating the file first when this is the first line.
  void write(const std::string& line);
  // Creates the file (its folder too) with the header only, when no line has done so yet.
  void commit();
  bool committed() const { return fd_ >= 0; }

 private:
  void open_with(const std::string& first_line);
  void write_all(const std::string& text);

  std::string path_, header_;
  Mode mode_;
  int fd_ = -1;
};

}  // namespace kvbench
