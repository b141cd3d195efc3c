#include "core/footprint.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kvbench {
namespace {

std::uint64_t u(std::int64_t v) { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }

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

Footprint case_footprint(const Case& c) {
  Footprint f;
  const std::uint64_t in = size_of(c.in_dtype), out = size_of(c.out_dtype);
  if (c.kernel == Kernel::concat_mla_k) {
    const ConcatGeometry g = concat_geometry(c);
    const std::uint64_t inputs = (u(g.nope_elems) + u(g.rope_elems)) * in;
    const std::uint64_t output = (u(g.k_elems) + 2 * u(g.guard_elems)) * out;
    f.host_fixed = inputs + 2 * output;  // inputs, expected, actual
    f.device_per_set = inputs + output;
    return f;
  }
  const CacheGeometry g = cache_geometry(c);
  const std::uint64_t T = u(c.num_tokens), slots = u(g.num_slots);
  const std::uint64_t swa = c.swa ? u(g.logical_slots) : 0;
  const std::uint64_t inputs = 2 * u(g.key_elems) * in;  // key, value
  const std::uint64_t output = (u(g.cache_elems) + 2 * u(g.guard_elems)) * out;
  const std::uint64_t scales = c.scale == ScaleMode::none ? 0 : 2 * 4 * u(c.num_heads);
  // slot_mapping [T], swa_table [S] and its guarded copy [S+1], owners [NB*BS] and check_slots'
  // owner table [NB*BS] (int64), make_slots' draw pool [S or NB*BS], the read-back slot table.
  const std::uint64_t slot_data =
      8 * (T + swa + (c.swa ? swa + 1 : 0) + 2 * slots + std::max(swa, slots)) + 4 * slots;
  f.host_fixed = inputs + 2 * output + slot_data + scales;
  f.device_per_set = inputs + output + 8 * T + (c.swa ? 8 * (swa + 1) : 0) + scales + 4 * slots;
  return f;
}

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
