#include "core/outputs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/metadata.hpp"

namespace kvbench {
namespace {

namespace fs = std::filesystem;

struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
};

FileId id_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, st.st_mode};
}

std::string absolute_of(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

// Two names of one file: by device and inode when both exist, by absolute path when neither
// does. A character device (/dev/null, a terminal) holds nothing to lose and never collides.
bool same_file(const std::string& a, const FileId& ia, const std::string& b, const FileId& ib) {
  if (ia.exists && ib.exists) return ia.dev == ib.dev && ia.ino == ib.ino && !S_ISCHR(ia.mode);
  if (ia.exists || ib.exists) return false;
  return absolute_of(a) == absolute_of(b);
}

const char* kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string error_text(int err) { return std::strerror(err); }

}  // namespace

namespace {

// An exclusive flock on `lock` (a file it creates), its pid written in; -1 when the lock file
// cannot be made. Throws std::invalid_argument naming the holder when another process has it.
int take_lock(const std::string& flag, const std::string& path, const std::string& lock) {
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw std::invalid_argument(
        flag + " " + path + ": another kvbench" + (holder.empty() ? "" : " (pid " + holder + ")") +
        " is writing it (" + lock + "); wait for it to end, or write elsewhere");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t written = ::pwrite(fd, me.data(), me.size(), 0);
    (void)written;  // the pid is a courtesy to the next writer's message
  }
  return fd;
}

}  // namespace

// Two locks: by the resolved path (an output that does not exist yet) and, for one that does,
// by its device and inode, so a hard link to it, another name of the same file, is the same
// output too.
OutputLock::OutputLock(const std::string& flag, const std::string& path,
                       const std::string& lock_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return;
  fs::create_directories(lock_dir, ec);
  const auto lock_file = [&](const std::string& key) {
    return (fs::path(lock_dir) / (fnv1a64_hex(key) + ".lock")).string();
  };
  fd_ = take_lock(flag, path, lock_file(resolved.string()));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    try {
      inode_fd_ = take_lock(
          flag, path,
          lock_file("inode " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino)));
    } catch (...) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      throw;
    }
  }
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the locks
  if (inode_fd_ >= 0) ::close(inode_fd_);
}

bool is_special_file(const std::string& path) {
  const FileId id = id_of(path);
  return id.exists && !S_ISREG(id.mode) && !S_ISDIR(id.mode);
}

void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  std::vector<FileId> in_ids;
  for (const InputFile& in : inputs) in_ids.push_back(id_of(in.path));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const OutputFile& out = outputs[k];
    if (out.path.empty()) continue;
    const std::string name = out.flag + " " + out.path;
    const FileId id = id_of(out.path);
    const fs::path p(out.path);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::error_code ec;
    if (!out.creates_folder && !fs::is_directory(dir, ec))
      throw std::invalid_argument(name + ": folder " + dir.string() + " does not exist");
    if (out.creates_folder) {  // the folders it creates need a folder to go in, not a file
      fs::path up = dir;
      while (!fs::exists(up, ec) && up.has_parent_path() && up.parent_path() != up)
        up = up.parent_path();
      if (fs::exists(up, ec) && !fs::is_directory(up, ec))
        throw std::invalid_argument(name + ": " + up.string() +
                                    " is not a folder, so it cannot hold the output");
    }
    if (id.exists && S_ISDIR(id.mode)) throw std::invalid_argument(name + ": is a directory");
    // Writers replace a link's target; a link to nothing has none, and would itself be replaced.
    if (fs::is_symlink(p, ec) && !fs::exists(p, ec))
      throw std::invalid_argument(name + ": a symlink to " + fs::read_symlink(p, ec).string() +
                                  ", which does not exist (kvbench writes a link's target: create "
                                  "it, or remove the link)");
    if (id.exists && !S_ISREG(id.mode) && out.non_regular == NonRegular::refuse)
      throw std::invalid_argument(name + ": is " + kind_of(id.mode) +
                                  ", not a regular file (this output has a sidecar and is read "
                                  "back by --resume; name a file)");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].path.empty()) continue;
      if (same_file(out.path, id, inputs[i].path, in_ids[i]))
        throw std::invalid_argument(name + ": is also an input (" + inputs[i].role + " " +
                                    inputs[i].path + "); it would be overwritten");
    }
    for (std::size_t j = 0; j < k; ++j) {
      const OutputFile& other = outputs[j];
      if (other.path.empty()) continue;
      if (same_file(out.path, id, other.path, id_of(other.path)))
        throw std::invalid_argument(name + ": is also the output " + other.flag + " " + other.path +
                                    "; one would overwrite the other");
    }
  }
}

RowFile::RowFile(std::string path, std::string header, Mode mode)
    : path_(std::move(path)), header_(std::move(header)), mode_(mode) {}

RowFile::~RowFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RowFile::write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(path_ + ": cannot write: " + error_text(errno));
    done += static_cast<std::size_t>(n);
  }
}

namespace {

// The offset just past the last '\n' of the first `size` bytes of fd (0 when there is none).
off_t end_of_last_line(int fd, off_t size, const std::string& path) {
  char block[4096];
  off_t end = size;
  while (end > 0) {
    const off_t start =
        end > static_cast<off_t>(sizeof block) ? end - static_cast<off_t>(sizeof block) : 0;
    const ssize_t n = ::pread(fd, block, static_cast<std::size_t>(end - start), start);
    if (n != end - start) throw std::runtime_error(path + ": cannot read: " + error_text(errno));
    for (ssize_t i = n; i > 0; --i)
      if (block[i - 1] == '\n') return start + i;
    end = start;
  }
  return 0;
}

}  // namespace

void RowFile::open_with(const std::string& first_line) {
  if (mode_ == Mode::append) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error(path_ + ": cannot write: " + error_text(errno));
    // Cut a last line that lacks its newline (a writer killed mid-row): back to the last '\n'.
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw std::runtime_error(path_ + ": " + error_text(errno));
    const off_t end = end_of_last_line(fd_, st.st_size, path_);
    if (end != st.st_size && ::ftruncate(fd_, end) != 0)
      throw std::runtime_error(path_ +
                               ": cannot cut its unfinished last line: " + error_text(errno));
    if (!first_line.empty()) write_all(first_line + "\n");
    return;
  }
  const std::string text = header_ + "\n" + (first_line.empty() ? "" : first_line + "\n");
  if (is_special_file(path_)) {  // a device or FIFO: written in place, never replaced
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) throw std::runtime_error(path_ + ": cannot write: " + error_text(errno));
    write_all(text);
    return;
  }
  // A symlink keeps pointing where it did: its target is replaced.
  std::string target = path_;
  std::error_code ec;
  if (fs::is_symlink(path_, ec) && fs::exists(path_, ec)) target = fs::canonical(path_).string();
  const fs::path parent = fs::path(target).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::string tmp = target + ".XXXXXX";
  fd_ = ::mkstemp(tmp.data());
  if (fd_ < 0) throw std::runtime_error(path_ + ": cannot write: " + error_text(errno));
  try {
    write_all(text);
    const mode_t mask = ::umask(0);  // mkstemp creates 0600; give what a plain create would
    ::umask(mask);
    if (::fchmod(fd_, 0666 & ~mask) != 0)
      throw std::runtime_error(path_ + ": cannot write (chmod: " + error_text(errno) + ")");
    if (std::rename(tmp.c_str(), target.c_str()) != 0)
      throw std::runtime_error(path_ + ": cannot write (rename: " + error_text(errno) + ")");
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    std::remove(tmp.c_str());
    throw;
  }
}

void RowFile::write(const std::string& line) {
  if (fd_ < 0)
    open_with(line);
  else
    write_all(line + "\n");
}

void RowFile::commit() {
  if (fd_ < 0) open_with("");
}

}  // namespace kvbench
