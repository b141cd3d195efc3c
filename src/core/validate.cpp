#include "core/validate.hpp"

#include <cmath>
#include <limits>

namespace kvbench {
namespace {

std::string too_small(const char* what, std::int64_t stride, const char* extent_name,
                      std::int64_t extent) {
  return std::string(what) + " " + std::to_string(stride) + " < " + extent_name + " = " +
         std::to_string(extent) + " (strides must cover the dense extent)";
}

// The token [written tokens] in slot order: tokens whose slot (after SWA) is written.
std::vector<std::size_t> written_tokens(const SlotData& s, const CacheGeometry& g) {
  std::vector<std::size_t> out;
  for (std::size_t t = 0; t < s.slot_mapping.size(); ++t) {
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (!s.swa_table.empty()) {
      slot = s.swa_table[static_cast<std::size_t>(slot)];
      if (slot < 0) continue;
    }
    if (slot != g.skip_slot) out.push_back(t);
  }
  return out;
}

}  // namespace

std::string check_concat_strides(const Case& c, const ConcatGeometry& g) {
  const std::int64_t H = c.num_heads, N = c.head_dim, R = c.rope_dim;
  if (g.nope_s1 < N) return too_small("k_nope head stride", g.nope_s1, "NOPE", N);
  if (g.nope_s0 < (H - 1) * g.nope_s1 + N)
    return too_small("k_nope token stride", g.nope_s0, "(H-1)*head stride + NOPE",
                     (H - 1) * g.nope_s1 + N);
  if (g.rope_s0 < R) return too_small("k_rope token stride", g.rope_s0, "ROPE", R);
  if (g.k_s1 < N + R) return too_small("k head stride", g.k_s1, "NOPE+ROPE", N + R);
  if (g.k_s0 < (H - 1) * g.k_s1 + N + R)
    return too_small("k token stride", g.k_s0, "(H-1)*head stride + NOPE+ROPE",
                     (H - 1) * g.k_s1 + N + R);
  return "";
}

std::string check_cache_strides(const Case& c, const CacheGeometry& g) {
  const std::int64_t H = c.num_heads, D = c.head_dim, BS = c.block_size;
  if (g.key_s1 < D) return too_small("key/value head stride", g.key_s1, "D", D);
  if (g.key_s0 < (H - 1) * g.key_s1 + D)
    return too_small("key/value token stride", g.key_s0, "(H-1)*head stride + D",
                     (H - 1) * g.key_s1 + D);
  const std::int64_t dense_block = BS * H * D;
  // Inside a block the rows of D elements (one per slot and head) must not overlap: the
  // smaller of the slot and head strides steps between rows, the larger between groups of them.
  const bool heads_inner = g.head_stride <= g.slot_stride;
  const std::int64_t inner_s = heads_inner ? g.head_stride : g.slot_stride;
  const std::int64_t inner_n = heads_inner ? H : BS;
  const std::int64_t outer_s = heads_inner ? g.slot_stride : g.head_stride;
  const std::int64_t outer_n = heads_inner ? BS : H;
  if (inner_n > 1 && inner_s < D)
    return too_small(heads_inner ? "cache head stride" : "cache slot stride", inner_s, "D", D);
  if (outer_n > 1 && outer_s < (inner_n - 1) * inner_s + D)
    return too_small(heads_inner ? "cache slot stride" : "cache head stride", outer_s,
                     "the rows it spans", (inner_n - 1) * inner_s + D);
  const std::int64_t in_block = (BS - 1) * g.slot_stride + (H - 1) * g.head_stride + D;
  if (g.block_stride < in_block || g.block_stride < dense_block)
    return too_small("cache block stride", g.block_stride, "BS*H*D", dense_block);
  // K and V: disjoint, either as interleaved halves of each block or as two separate ranges.
  const std::int64_t v = g.value_cache_offset;
  const bool interleaved = v < g.block_stride;
  if (interleaved ? (v < dense_block || g.block_stride - v < dense_block)
                  : v < g.num_blocks * g.block_stride)
    return "value cache at element " + std::to_string(v) +
           " overlaps the key cache (block stride " + std::to_string(g.block_stride) + ")";
  return "";
}

std::string check_scales(const std::vector<float>& k_scale, const std::vector<float>& v_scale) {
  for (const auto* scales : {&k_scale, &v_scale})
    for (std::size_t i = 0; i < scales->size(); ++i) {
      const float s = (*scales)[i];
      if (std::isfinite(s) && s > 0) continue;
      const std::string name =
          std::string(scales == &k_scale ? "k_scale" : "v_scale") + "[" + std::to_string(i) + "]";
      const char* what = std::isnan(s)   ? "NaN"
                         : std::isinf(s) ? "infinite"
                         : s == 0        ? "zero"
                                         : "negative";
      return name + " is " + what + " (" + std::to_string(s) +
             "); scales must be positive and finite";
    }
  return "";
}

std::string inject_concat(const Case& c, ConcatGeometry& g) {
  switch (c.inject) {
    case Inject::none:
      return "";
    case Inject::short_stride:
      if (c.head_dim < 2) return "this injection needs NOPE >= 2";
      g.nope_s1 = c.head_dim - 1;
      return "";
    default:
      return "does not apply to concat_and_cast_mha_k (only short_stride does)";
  }
}

std::string inject_cache(const Case& c, CacheGeometry& g, SlotData& s,
                         std::vector<float>& k_scale) {
  const std::string name = "this injection";
  const std::vector<std::size_t> written = written_tokens(s, g);
  // The token to corrupt: a written one from the middle, so the check must scan to find it.
  const bool have = !written.empty();
  const std::size_t victim = have ? written[written.size() / 2] : 0;
  const bool swa = !s.swa_table.empty();
  switch (c.inject) {
    case Inject::none:
      return "";
    case Inject::slot_out_of_range:
      if (!have) return name + " needs a written token";
      if (swa)
        s.swa_table[static_cast<std::size_t>(s.slot_mapping[victim])] = g.num_slots;
      else
        s.slot_mapping[victim] = g.num_slots;
      return "";
    case Inject::swa_out_of_range:
      if (!swa) return name + " needs swa: true";
      if (!have) return name + " needs a written token";
      s.slot_mapping[victim] = static_cast<std::int64_t>(s.swa_table.size());
      return "";
    case Inject::duplicate_slot: {
      if (written.size() < 2) return name + " needs two written tokens";
      const std::size_t first = written.front();
      if (swa)
        s.swa_table[static_cast<std::size_t>(s.slot_mapping[victim])] =
            s.swa_table[static_cast<std::size_t>(s.slot_mapping[first])];
      else
        s.slot_mapping[victim == first ? written.back() : victim] = s.slot_mapping[first];
      return "";
    }
    case Inject::zero_scale:
    case Inject::negative_scale:
    case Inject::nan_scale:
    case Inject::inf_scale:
      if (k_scale.empty()) return name + " needs scale: per_tensor or per_head";
      k_scale[0] = c.inject == Inject::zero_scale       ? 0.0f
                   : c.inject == Inject::negative_scale ? -k_scale[0]
                   : c.inject == Inject::nan_scale      ? std::numeric_limits<float>::quiet_NaN()
                                                        : std::numeric_limits<float>::infinity();
      return "";
    case Inject::short_stride:
      if (c.head_dim < 2) return name + " needs D >= 2";
      g.key_s1 = c.head_dim - 1;
      return "";
  }
  return name + ": unknown injection";
}

}  // namespace kvbench
