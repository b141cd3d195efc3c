#include "core/file_io.hpp"

#include <fcntl.h>
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

void write_file_atomic(const std::string& path, const std::string& text) {
  // A unique temporary in the target's directory (rename is atomic within one file system);
  // concurrent writers never share it, and it is removed on every failure.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
  const auto fail = [&](const char* what, int err) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write" + (what[0] ? std::string(" (") + what + ": " : " (") +
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
    throw std::runtime_error(path + ": cannot write (" + std::strerror(err) + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write (" + std::strerror(err) + ")");
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kvbench
