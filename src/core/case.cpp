#include "core/case.hpp"

#include <sstream>

#include "core/checked.hpp"

namespace kvbench {
namespace {

constexpr std::int64_t kPad = 16;          // extra elements per stride in StrideMode::padded
constexpr std::int64_t kSglangV = 128;     // V head size packed after NOPE in kv_b_proj's output
constexpr std::int64_t kSglangLora = 512;  // kv_lora_rank: the latent is 512 + ROPE wide

// Every size below goes through these: axes reach 2^31-1 each, their products do not fit.
std::int64_t mul(std::int64_t a, std::int64_t b) { return checked_mul(a, b); }
std::int64_t add(std::int64_t a, std::int64_t b) { return checked_add(a, b); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return add(a, b - 1) / b; }

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
      g.nope_s0 = mul(H, N);
      g.rope_s0 = R;
      g.k_s1 = add(N, R);
      g.k_s0 = mul(H, g.k_s1);
      break;
    case StrideMode::sglang:
      g.nope_s1 = add(N, kSglangV);
      g.nope_s0 = mul(H, g.nope_s1);
      g.rope_s0 = add(kSglangLora, R);
      g.k_s1 = add(N, R);
      g.k_s0 = mul(H, g.k_s1);
      break;
    case StrideMode::padded:
      g.nope_s1 = add(N, kPad);
      g.nope_s0 = add(mul(H, g.nope_s1), kPad);
      g.rope_s0 = add(R, kPad);
      g.k_s1 = add(add(N, R), kPad);
      g.k_s0 = add(mul(H, g.k_s1), kPad);
      break;
  }
  g.nope_elems = mul(T, g.nope_s0);
  g.rope_elems = mul(T, g.rope_s0);
  g.k_elems = mul(T, g.k_s0);
  g.guard_elems = g.k_s0;
  return g;
}

CacheGeometry cache_geometry(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, D = c.head_dim, BS = c.block_size;
  CacheGeometry g{};
  const bool padded = c.strides == StrideMode::padded;
  g.key_s1 = add(D, padded ? kPad : 0);
  g.key_s0 = add(mul(H, g.key_s1), padded ? kPad : 0);
  g.key_elems = mul(T, g.key_s0);

  // Room for every token plus slack, so some slots stay untouched and their canary is checked.
  g.num_blocks = add(ceil_div(add(add(T, T / 8), 1), BS), 1);
  g.num_slots = mul(g.num_blocks, BS);
  g.logical_slots = c.swa ? mul(2, g.num_slots) : g.num_slots;

  const std::int64_t dense_block = mul(mul(BS, H), D);
  if (c.layout == Layout::nhd) {
    g.head_stride = D;
    g.slot_stride = mul(H, D);
  } else {
    g.slot_stride = D;
    g.head_stride = mul(BS, D);
  }
  const std::int64_t block_extent = add(dense_block, padded ? kPad : 0);
  if (c.kv_interleaved) {
    g.block_stride = mul(2, block_extent);
    g.value_cache_offset = block_extent;
  } else {
    g.block_stride = block_extent;
    g.value_cache_offset = mul(g.num_blocks, block_extent);
  }
  g.cache_elems = mul(mul(2, g.num_blocks), block_extent);
  g.skip_slot = c.slots == SlotPattern::skip ? 0 : -1;
  g.guard_elems = g.block_stride;
  return g;
}

std::int64_t concat_bytes(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, N = c.head_dim, R = c.rope_dim;
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  return add(add(mul(mul(mul(T, H), N), in), mul(mul(T, R), in)),
             mul(mul(mul(T, H), add(N, R)), out));
}

std::int64_t cache_write_bytes(const Case& c, std::int64_t swa_lookups,
                               std::int64_t written_tokens) {
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  const std::int64_t per_token = mul(mul(mul(2, c.num_heads), c.head_dim), in + out);  // K and V
  return add(add(mul(8, c.num_tokens), mul(8, swa_lookups)), mul(written_tokens, per_token));
}

}  // namespace kvbench

namespace kvbench {

void check_sizes(const Case& c) {
  if (c.kernel == Kernel::concat_mla_k) {
    concat_geometry(c);
    concat_bytes(c);
  } else {
    cache_geometry(c);
    cache_write_bytes(c, c.num_tokens, c.num_tokens);  // every token looked up and written
  }
}

}  // namespace kvbench
