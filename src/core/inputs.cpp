#include "core/inputs.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

namespace kvbench {
namespace {

constexpr int kMinExp = -12, kMaxExp = 10;

// Random finite non-zero value as raw bits of a float format with `mant` mantissa bits and
// exponent bias `bias`, stored in `bits` total bits.
std::uint32_t random_bits(std::uint64_t r, int mant, int bias, int bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(r >> 63) & 1u;
  const int e = kMinExp + static_cast<int>((r >> 40) % (kMaxExp - kMinExp + 1));
  const std::uint32_t m = static_cast<std::uint32_t>(r) & ((1u << mant) - 1u);
  return (sign << (bits - 1)) | (static_cast<std::uint32_t>(e + bias) << mant) | m;
}

void fill_range(DType type, void* dst, std::int64_t begin, std::int64_t end, std::uint64_t seed) {
  // One independent stream per 64K-element chunk, so threads can fill chunks in any order.
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(begin) * 0xD1B54A32D192ED03ull);
  for (std::int64_t i = begin; i < end; ++i) {
    const std::uint64_t r = splitmix64(state);
    switch (type) {
      case DType::f32: {
        const std::uint32_t b = random_bits(r, 23, 127, 32);
        std::memcpy(static_cast<char*>(dst) + 4 * i, &b, 4);
        break;
      }
      case DType::bf16: {
        const auto b = static_cast<std::uint16_t>(random_bits(r, 7, 127, 16));
        std::memcpy(static_cast<char*>(dst) + 2 * i, &b, 2);
        break;
      }
      case DType::f16: {
        const auto b = static_cast<std::uint16_t>(random_bits(r, 10, 15, 16));
        std::memcpy(static_cast<char*>(dst) + 2 * i, &b, 2);
        break;
      }
      case DType::fp8_e4m3:
      case DType::fp8_e5m2: {
        // Inputs are never fp8 (SPEC.md); random non-NaN, non-zero bytes suffice for canaries.
        auto b = static_cast<std::uint8_t>(r);
        if ((b & 0x7F) == 0 || (b & 0x7F) == 0x7F) b = 0x3C;
        static_cast<std::uint8_t*>(dst)[i] = b;
        break;
      }
    }
  }
}

}  // namespace

void fill_random(DType type, void* dst, std::int64_t count, std::uint64_t seed) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
  const auto workers = static_cast<std::int64_t>(
      std::min<std::int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency())));
  auto work = [&](std::int64_t w) {
    for (std::int64_t ch = w; ch < chunks; ch += workers)
      fill_range(type, dst, ch * kChunk, std::min(count, (ch + 1) * kChunk), seed);
  };
  if (workers <= 1) {
    if (chunks > 0) work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t w = 0; w < workers; ++w) pool.emplace_back(work, w);
  for (auto& t : pool) t.join();
}

float injected_scale(Inject inject, float scale) {
  switch (inject) {
    case Inject::zero_scale:
      return 0.0f;
    case Inject::negative_scale:
      return -scale;
    case Inject::nan_scale:
      return std::numeric_limits<float>::quiet_NaN();
    case Inject::inf_scale:
      return std::numeric_limits<float>::infinity();
    default:
      return scale;
  }
}

}  // namespace kvbench
