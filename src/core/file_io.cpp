#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvbench {

namespace {

void write_all(int fd, const std::string& path, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot write (" + std::strerror(err) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_file_atomic(const std::string& path_in, const std::string& text) {
  struct stat st {};
  if (::stat(path_in.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device node or FIFO (/dev/null, /dev/full, a pipe): written in place; a rename
    // would replace it with a regular file.
    const int fd = ::open(path_in.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw std::runtime_error(path_in + ": cannot write (" + std::strerror(errno) + ")");
    write_all(fd, path_in, text);
    if (::close(fd) != 0)
      throw std::runtime_error(path_in + ": cannot write (" + std::strerror(errno) + ")");
    return;
  }
  // A symlink keeps pointing where it did: its target is replaced.
  std::string path = path_in;
  std::error_code ec;
  if (std::filesystem::is_symlink(path_in, ec) && std::filesystem::exists(path_in, ec))
    path = std::filesystem::canonical(path_in, ec).string();
  if (ec) path = path_in;
  // A unique temporary in the target's directory (rename is atomic within one file system);
  // concurrent writers never share it, and it is removed on every failure.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    throw std::runtime_error(
        path_in + ": cannot write (a temporary file beside it: " + std::strerror(errno) + ")");
  const auto fail = [&](const char* what, int err) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw std::runtime_error(path_in + ": cannot write" +
                             (what[0] ? std::string(" (") + what + ": " : " (") +
                             std::strerror(err) + ")");
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("", errno);
    done += static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; give the file the permissions a plain create would have.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("chmod", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path_in + ": cannot write (" + std::strerror(err) + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path_in + ": cannot write (" + std::strerror(err) + ")");
  }
}

std::string sidecar_path(const std::string& csv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = csv;
  // A chain of links, followed as the kernel would (40 is its limit too); a dangling or looping
  // one is left as given (check_outputs refuses it as an output).
  if (!fs::exists(p, ec)) return csv + ".json";
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return csv + ".json";
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p.lexically_normal().string() + ".json";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

SealedText::SealedText(const std::string& text) {
  fd_ = ::memfd_create("kvbench-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0)
    throw std::runtime_error(std::string("cannot hold the config for the workers (memfd_create: ") +
                             std::strerror(errno) + ")");
  write_all(fd_, "the config's copy for the workers", text);
  ::fcntl(fd_, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
}

SealedText::~SealedText() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace kvbench
