#include "core/compare.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace kvbench {
namespace {

std::uint64_t load_bits(const unsigned char* p, std::size_t size) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, size);  // little-endian host
  return v;
}

}  // namespace

CompareResult compare_bitwise(const void* expected, const void* actual, std::int64_t elems,
                              std::size_t elem_size, std::size_t max_report) {
  CompareResult r;
  const auto* e = static_cast<const unsigned char*>(expected);
  const auto* a = static_cast<const unsigned char*>(actual);
  const std::size_t total = static_cast<std::size_t>(elems) * elem_size;
  constexpr std::size_t kBlock = 1 << 16;  // memcmp whole blocks; walk elements only on a miss
  for (std::size_t off = 0; off < total; off += kBlock) {
    const std::size_t len = std::min(kBlock, total - off);
    if (std::memcmp(e + off, a + off, len) == 0) continue;
    for (std::size_t i = off; i < off + len; i += elem_size) {
      const std::uint64_t ev = load_bits(e + i, elem_size), av = load_bits(a + i, elem_size);
      if (ev == av) continue;
      if (r.first.size() < max_report)
        r.first.push_back({static_cast<std::int64_t>(i / elem_size), ev, av});
      ++r.count;
    }
  }
  return r;
}

}  // namespace kvbench
