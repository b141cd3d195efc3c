#include "core/case.hpp"

#include <sstream>

namespace kvbench {
namespace {

constexpr std::int64_t kPad = 16;          // extra elements per stride in StrideMode::padded
constexpr std::int64_t kSglangV = 128;     // V head size packed after NOPE in kv_b_proj's output
constexpr std::int64_t kSglangLora = 512;  // kv_lora_rank: the latent is 512 + ROPE wide

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string describe(const Case& c) {
  std::ostringstream os;
  os << to_string(c.kernel) << ' ' << to_string(c.variant) << " T=" << c.num_tokens
     << " H=" << c.num_heads;
  if (c.kernel == Kernel::concat_mla_k) {
    os << " NOPE=" << c.head_dim << " ROPE=" << c.rope_dim;
  } else {
    os << " D=" << c.head_dim << " BS=" << c.block_size << ' ' << to_string(c.layout);
  }
  os << ' ' << to_string(c.in_dtype) << "->" << to_string(c.out_dtype)
     << " strides=" << to_string(c.strides);
  if (c.kernel == Kernel::cache_write) {
    os << " scale=" << to_string(c.scale) << " swa=" << (c.swa ? "on" : "off")
       << " slots=" << to_string(c.slots) << (c.kv_interleaved ? " kv_interleaved" : "");
  }
  if (c.inject != Inject::none) os << " inject=" << to_string(c.inject);
  return os.str();
}

ConcatGeometry concat_geometry(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, N = c.head_dim, R = c.rope_dim;
  ConcatGeometry g{};
  switch (c.strides) {
    case StrideMode::contiguous:
      g.nope_s1 = N;
      g.nope_s0 = H * N;
      g.rope_s0 = R;
      g.k_s1 = N + R;
      g.k_s0 = H * (N + R);
      break;
    case StrideMode::sglang:
      g.nope_s1 = N + kSglangV;
      g.nope_s0 = H * g.nope_s1;
      g.rope_s0 = kSglangLora + R;
      g.k_s1 = N + R;
      g.k_s0 = H * (N + R);
      break;
    case StrideMode::padded:
      g.nope_s1 = N + kPad;
      g.nope_s0 = H * g.nope_s1 + kPad;
      g.rope_s0 = R + kPad;
      g.k_s1 = N + R + kPad;
      g.k_s0 = H * g.k_s1 + kPad;
      break;
  }
  g.nope_elems = T * g.nope_s0;
  g.rope_elems = T * g.rope_s0;
  g.k_elems = T * g.k_s0;
  g.guard_elems = g.k_s0;
  return g;
}

CacheGeometry cache_geometry(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, D = c.head_dim, BS = c.block_size;
  CacheGeometry g{};
  const bool padded = c.strides == StrideMode::padded;
  g.key_s1 = D + (padded ? kPad : 0);
  g.key_s0 = H * g.key_s1 + (padded ? kPad : 0);
  g.key_elems = T * g.key_s0;

  // Room for every token plus slack, so some slots stay untouched and their canary is checked.
  g.num_blocks = ceil_div(T + T / 8 + 1, BS) + 1;
  g.num_slots = g.num_blocks * BS;
  g.logical_slots = c.swa ? 2 * g.num_slots : g.num_slots;

  const std::int64_t dense_block = BS * H * D;
  if (c.layout == Layout::nhd) {
    g.head_stride = D;
    g.slot_stride = H * D;
  } else {
    g.slot_stride = D;
    g.head_stride = BS * D;
  }
  const std::int64_t block_extent = dense_block + (padded ? kPad : 0);
  if (c.kv_interleaved) {
    g.block_stride = 2 * block_extent;
    g.value_cache_offset = block_extent;
  } else {
    g.block_stride = block_extent;
    g.value_cache_offset = g.num_blocks * block_extent;
  }
  g.cache_elems = 2 * g.num_blocks * block_extent;
  g.skip_slot = c.slots == SlotPattern::skip ? 0 : -1;
  g.guard_elems = g.block_stride;
  return g;
}

std::int64_t concat_bytes(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, N = c.head_dim, R = c.rope_dim;
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  return T * H * N * in + T * R * in + T * H * (N + R) * out;
}

std::int64_t cache_write_bytes(const Case& c, std::int64_t swa_lookups,
                               std::int64_t written_tokens) {
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  const std::int64_t per_token = 2 * c.num_heads * c.head_dim * (in + out);  // K and V
  return 8 * c.num_tokens + 8 * swa_lookups + written_tokens * per_token;
}

}  // namespace kvbench
