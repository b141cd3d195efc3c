#include "core/footprint.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/operation.hpp"

namespace kvbench {
namespace {

std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

Footprint case_footprint(const Case& c) { return operation(c.kernel).footprint(c); }

std::string format_bytes(std::uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  return buf;
}

std::optional<std::uint64_t> parse_mem_available(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::stringstream text;
  text << in.rdbuf();
  std::optional<std::uint64_t> avail = parse_mem_available(text.str());
  if (!avail) return std::nullopt;
  // A container's limit (cgroup v2) binds before the machine's free memory does.
  const auto limit = read_number("/sys/fs/cgroup/memory.max");
  const auto used = read_number("/sys/fs/cgroup/memory.current");
  if (limit && used) avail = std::min(*avail, *limit > *used ? *limit - *used : 0);
  const std::uint64_t margin = std::max<std::uint64_t>(*avail / 20, std::uint64_t{1} << 30);
  return *avail > margin ? *avail - margin : 0;
}

std::string admission_refusal(const Footprint& f, int sets, std::optional<std::uint64_t> host_free,
                              std::optional<std::uint64_t> device_free) {
  if (host_free && f.host(sets) > *host_free)
    return "needs " + format_bytes(f.host(sets)) + " host memory, " + format_bytes(*host_free) +
           " available";
  if (device_free && f.device(sets) > *device_free)
    return "needs " + format_bytes(f.device(sets)) + " device memory, " +
           format_bytes(*device_free) + " available";
  return "";
}

}  // namespace kvbench
