// reshape_and_cache_flash's Operation (core/operation.hpp) and its pure host functions.
#include "ops/cache_write/operation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/inputs.hpp"
#include "ops/operation_common.hpp"

namespace kvbench {
namespace {

using namespace op_common;

const CacheWriteParams& params(const Case& c) { return params_of<CacheWriteParams>(c); }

bool token_head(const Case& c) { return params(c).scale == ScaleMode::per_token_head; }

constexpr std::int64_t kScaleBytes = 4;  // per_token_head: the fp32 scale after each row

// seed_port and slot_order take a caller's scale only.
std::string caller_scale_only(const Case& c, const char* variant) {
  return token_head(c) ? std::string(variant) +
                             " has no per_token_head path (it divides by a caller's scale); "
                             "per_token_head runs on optimized"
                       : "";
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

class CacheWrite final : public Operation {
 public:
  Kernel kernel() const override { return Kernel::cache_write; }

  Case default_case() const override {
    Case c;
    c.kernel = Kernel::cache_write;
    c.num_heads = 8;
    c.params = CacheWriteParams{};
    return c;
  }

  // num_tokens and variant vary fastest, so that one shape's token counts, and each case's
  // variants, sit together in the output.
  const std::vector<Axis>& axes() const override {
    static const std::vector<Axis> axes = [] {
      std::vector<Axis> a = {
          header_axis("in_dtype", &Case::in_dtype),
          header_axis("out_dtype", &Case::out_dtype),
          param_axis("scale", &CacheWriteParams::scale),
          param_axis("swa", &CacheWriteParams::swa),
          param_axis("layout", &CacheWriteParams::layout),
          param_axis("kv_interleaved", &CacheWriteParams::kv_interleaved),
          header_axis("strides", &Case::strides),
          param_axis("slots", &CacheWriteParams::slots),
          header_axis("num_heads", &Case::num_heads),
          param_axis("head_size", &CacheWriteParams::head_size),
          param_axis("block_size", &CacheWriteParams::block_size),
          header_axis("num_tokens", &Case::num_tokens),
          header_axis("variant", &Case::variant),
          header_axis("inject", &Case::inject),
      };
      a[6].refuse = [](const std::string& v) -> std::string {
        return v == "sglang" ? "'sglang' strides apply to concat_and_cast_mha_k only" : "";
      };
      return a;
    }();
    return axes;
  }

  // The variants (kernels/cache_write/*.cu); the dtype pairs they take are checked at
  // admission (stages.cpp).
  const std::vector<VariantInfo>& variants() const override {
    static const std::vector<VariantInfo> v = {
        {Variant::seed_port, "the seed's Triton program ported as it is: one block per token",
         [](const Case& c) { return caller_scale_only(c, "seed_port"); }},
        {Variant::optimized,
         "16-byte vectors in token order, or slot order where its plan wins; per_token_head: a "
         "sub-warp per (token, head) row",
         nullptr},
        // The reason another operation's case gets names it: "... variant (it orders slots)".
        {Variant::slot_order, "it orders slots",
         [](const Case& c) { return caller_scale_only(c, "slot_order"); }},
    };
    return v;
  }

  std::string describe(const Case& c) const override {
    const CacheWriteParams& p = params(c);
    std::ostringstream os;
    os << to_string(c.kernel) << ' ' << to_string(c.variant) << " T=" << c.num_tokens
       << " H=" << c.num_heads << " D=" << p.head_size << " BS=" << p.block_size << ' '
       << to_string(p.layout) << ' ' << to_string(c.in_dtype) << "->" << to_string(c.out_dtype)
       << " strides=" << to_string(c.strides) << " scale=" << to_string(p.scale)
       << " swa=" << (p.swa ? "on" : "off") << " slots=" << to_string(p.slots)
       << (p.kv_interleaved ? " kv_interleaved" : "");
    if (c.inject != Inject::none) os << " inject=" << to_string(c.inject);
    return os.str();
  }

  std::string describe_key(const std::function<const std::string&(Col)>& at) const override {
    std::string s = "T=" + at(Col::num_tokens) + " H=" + at(Col::num_heads) +
                    " D=" + at(Col::head_dim) + " BS=" + at(Col::block_size) + " " +
                    at(Col::layout) + " " + at(Col::in_dtype) + "->" + at(Col::out_dtype) +
                    " strides=" + at(Col::strides) + " scale=" + at(Col::scale) +
                    " slots=" + at(Col::slots);
    if (at(Col::swa) == "true") s += " swa";
    if (at(Col::kv_interleaved) == "true") s += " kv_interleaved";
    return s;
  }

  void check_sizes(const Case& c) const override {
    cache_geometry(c);
    cache_write_bytes(c, c.num_tokens, c.num_tokens);  // every token looked up and written
  }

  // K and V of every written token (per_token_head: each row's scale too).
  std::int64_t output_elems(const Case& c, std::int64_t written_tokens) const override {
    return mul(mul(mul(written_tokens, 2), c.num_heads), cache_geometry(c).row);
  }

  // Host: inputs, expected and actual caches with guards, slot data (mapping, SWA table and
  // its guarded copy, owners, the slot-table read-back); device, per set: inputs, caches with
  // guards, slot mapping, SWA table, scales, slot table.
  Footprint footprint(const Case& c) const override {
    const CacheWriteParams& p = params(c);
    Footprint f;
    const std::uint64_t in = size_of(c.in_dtype), out = size_of(c.out_dtype);
    const CacheGeometry g = cache_geometry(c);
    const std::uint64_t T = u(c.num_tokens), slots = u(g.num_slots);
    const std::uint64_t swa = p.swa ? u(g.logical_slots) : 0;
    const std::uint64_t inputs = 2 * u(g.key_elems) * in;  // key, value
    const std::uint64_t output = (u(g.cache_elems) + 2 * u(g.guard_elems)) * out;
    const std::uint64_t scales =
        p.scale == ScaleMode::none || token_head(c) ? 0 : 2 * 4 * u(c.num_heads);
    // slot_mapping [T], swa_table [S] and its guarded copy [S+1], owners [NB*BS] and
    // check_slots' owner table [NB*BS] (int64), make_slots' draw pool [S or NB*BS], the
    // read-back slot table.
    const std::uint64_t slot_data =
        8 * (T + swa + (p.swa ? swa + 1 : 0) + 2 * slots + std::max(swa, slots)) + 4 * slots;
    f.host_fixed = inputs + 2 * output + slot_data + scales;
    f.device_per_set = inputs + output + 8 * T + (p.swa ? 8 * (swa + 1) : 0) + scales + 4 * slots;
    return f;
  }

  // head_dim holds D; rope_dim keeps its filler.
  OpColumns columns(const Case& c) const override {
    const CacheWriteParams& p = params(c);
    OpColumns cols;
    cols.head_dim = p.head_size;
    cols.block_size = p.block_size;
    cols.layout = to_string(p.layout);
    cols.scale = to_string(p.scale);
    cols.swa = p.swa;
    cols.kv_interleaved = p.kv_interleaved;
    cols.slots = p.slots;
    return cols;
  }
  void set_columns(Case& c, const OpColumns& cols) const override {
    CacheWriteParams& p = params_of<CacheWriteParams>(c);
    p.head_size = cols.head_dim;
    p.block_size = cols.block_size;
    p.layout = from_string<Layout>(cols.layout);
    p.scale = from_string<ScaleMode>(cols.scale);
    p.swa = cols.swa;
    p.kv_interleaved = cols.kv_interleaved;
    p.slots = cols.slots;
  }

  // K and V rows to their slots, as the stages draw them (make_set_slots: the set's seed + 2).
  std::optional<ScatterShape> scatter_shape(const Case& c) const override {
    const CacheWriteParams& p = params(c);
    const CacheGeometry g = cache_geometry(c);
    const auto isize = static_cast<std::int64_t>(size_of(c.in_dtype)),
               osize = static_cast<std::int64_t>(size_of(c.out_dtype));
    ScatterShape s;
    s.input_bytes = g.key_elems * isize;
    s.dest_bytes = g.cache_elems * osize;
    s.head_read = p.head_size * isize;
    s.head_write = g.row * osize;
    s.head_stride = g.head_stride * osize;
    s.v_offset = g.value_cache_offset * osize;
    s.dest_strides = {g.slot_stride * osize, g.block_stride * osize};
    s.rows = [c, g, osize, swa = p.swa, block_size = p.block_size](std::uint64_t set_seed) {
      const SlotData slots = make_slots(c, g, set_seed + 2);
      std::vector<std::int64_t> rows(slots.slot_mapping.size(), -1);
      for (std::size_t t = 0; t < rows.size(); ++t) {
        std::int64_t slot = slots.slot_mapping[t];
        if (slot >= 0 && swa) slot = slots.swa_table[static_cast<std::size_t>(slot)];
        if (slot < 0 || slot == g.skip_slot) continue;
        const std::int64_t block = slot / block_size, offset = slot % block_size;
        rows[t] = (block * g.block_stride + offset * g.slot_stride) * osize;
      }
      return rows;
    };
    return s;
  }
};

}  // namespace

const Operation& cache_write_operation() {
  static const CacheWrite op;
  return op;
}

std::string token_head_refusal(const Case& c) {
  if (!token_head(c)) return "";
  if (c.in_dtype != DType::bf16 && c.in_dtype != DType::f16)
    return "scale per_token_head quantizes 16-bit inputs: in_dtype bf16 or f16, not " +
           std::string(to_string(c.in_dtype));
  if (c.out_dtype != DType::fp8_e4m3)
    return "scale per_token_head stores e4m3 codes (the one format SPEC.md §7 defines): out_dtype "
           "fp8_e4m3, not " +
           std::string(to_string(c.out_dtype));
  if (params(c).head_size % 4 != 0)
    return "scale per_token_head needs a head size that is a multiple of 4 (its fp32 scale sits "
           "after the D codes), not " +
           std::to_string(params(c).head_size);
  return "";
}

CacheGeometry cache_geometry(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads, D = params(c).head_size,
                     BS = params(c).block_size;
  CacheGeometry g{};
  const bool padded = c.strides == StrideMode::padded;
  g.key_s1 = add(D, padded ? kPad : 0);
  g.key_s0 = add(mul(H, g.key_s1), padded ? kPad : 0);
  g.key_elems = mul(T, g.key_s0);

  // Room for every token plus slack, so some slots stay untouched and their canary is checked.
  g.num_blocks = add(ceil_div(add(add(T, T / 8), 1), BS), 1);
  g.num_slots = mul(g.num_blocks, BS);
  g.logical_slots = params(c).swa ? mul(2, g.num_slots) : g.num_slots;

  // per_token_head: each row of D codes is followed by its 4-byte scale (SPEC.md §7).
  g.row = token_head(c) ? add(D, kScaleBytes) : D;
  const std::int64_t dense_block = mul(mul(BS, H), g.row);
  if (params(c).layout == Layout::nhd) {
    g.head_stride = g.row;
    g.slot_stride = mul(H, g.row);
  } else {
    g.slot_stride = g.row;
    g.head_stride = mul(BS, g.row);
  }
  const std::int64_t block_extent = add(dense_block, padded ? kPad : 0);
  if (params(c).kv_interleaved) {
    g.block_stride = mul(2, block_extent);
    g.value_cache_offset = block_extent;
  } else {
    g.block_stride = block_extent;
    g.value_cache_offset = mul(g.num_blocks, block_extent);
  }
  g.cache_elems = mul(mul(2, g.num_blocks), block_extent);
  g.skip_slot = params(c).slots == SlotPattern::skip ? 0 : -1;
  g.guard_elems = g.block_stride;
  return g;
}

std::int64_t cache_write_bytes(const Case& c, std::int64_t swa_lookups,
                               std::int64_t written_tokens) {
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  const std::int64_t D = params(c).head_size;
  // K and V: D values read, D (per_token_head: D + 4) cache elements written per head.
  const std::int64_t row = token_head(c) ? add(D, kScaleBytes) : D;
  const std::int64_t per_token = mul(mul(2, c.num_heads), add(mul(D, in), mul(row, out)));
  return add(add(mul(8, c.num_tokens), mul(8, swa_lookups)), mul(written_tokens, per_token));
}

namespace {

// The SWA lookups the slots make and the tokens that write (not padding, not evicted, not the
// skip slot).
void count_writes(SlotData& s, bool swa, const CacheGeometry& g) {
  for (std::int64_t slot : s.slot_mapping) {
    if (slot < 0) continue;
    if (swa) {
      ++s.swa_lookups;
      slot = s.swa_table[slot];
      if (slot < 0) continue;
    }
    if (slot != g.skip_slot) ++s.written_tokens;
  }
}

}  // namespace

SlotData make_slots(const Case& c, const CacheGeometry& g, std::uint64_t seed) {
  const CacheWriteParams& p = params(c);
  std::uint64_t state = seed ^ 0x5107'5107'5107'5107ull;
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(n));
  };
  const std::int64_t T = c.num_tokens;
  const bool skip = p.slots == SlotPattern::skip;
  const std::int64_t first = skip ? 1 : 0;  // slot 0 is the skip slot: never drawn as a target

  // Distinct draws from [first, range): a partial Fisher-Yates shuffle.
  auto distinct = [&](std::int64_t range, std::int64_t n) {
    std::vector<std::int64_t> pool(static_cast<std::size_t>(range - first));
    std::iota(pool.begin(), pool.end(), first);
    for (std::int64_t i = 0; i < n; ++i) std::swap(pool[i], pool[i + below(range - first - i)]);
    pool.resize(static_cast<std::size_t>(n));
    return pool;
  };

  SlotData s;
  const std::int64_t range = p.swa ? g.logical_slots : g.num_slots;
  if (p.slots == SlotPattern::contiguous) {
    s.slot_mapping.resize(static_cast<std::size_t>(T));
    const std::int64_t start = std::min<std::int64_t>(3, range - T);  // starts mid-block
    std::iota(s.slot_mapping.begin(), s.slot_mapping.end(), start);
  } else {
    s.slot_mapping = distinct(range, T);
  }
  for (std::int64_t t = 7; t < T; t += 8) {
    if (p.slots == SlotPattern::padded) s.slot_mapping[t] = -1;
    if (skip && !p.swa) s.slot_mapping[t] = g.skip_slot;
  }

  if (p.swa) {
    s.swa_table.assign(static_cast<std::size_t>(g.logical_slots), -1);
    std::int64_t used = 0;
    for (auto v : s.slot_mapping) used += v >= 0;
    const std::vector<std::int64_t> phys = distinct(g.num_slots, used);
    std::int64_t k = 0;
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t logical = s.slot_mapping[t];
      if (logical < 0) continue;
      const std::int64_t physical = phys[k];
      if (skip && t % 8 == 7) {
        s.swa_table[logical] = g.skip_slot;  // SGLang maps unused SWA slots to its reserved 0
      } else if (k % 16 != 15) {
        s.swa_table[logical] = physical;
      }  // else stays -1: evicted from the window, skipped
      ++k;
    }
  }

  count_writes(s, p.swa, g);
  return s;
}

std::string check_slots(const SlotData& s, const CacheGeometry& g) {
  const bool swa = !s.swa_table.empty();
  const auto S = static_cast<std::int64_t>(s.swa_table.size());
  std::vector<std::int64_t> owner(static_cast<std::size_t>(g.num_slots), -1);
  for (std::size_t t = 0; t < s.slot_mapping.size(); ++t) {
    const std::string tok = "token " + std::to_string(t) + ": ";
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (swa) {
      if (slot >= S)
        return tok + "SWA index " + std::to_string(slot) + " >= table size " + std::to_string(S);
      slot = s.swa_table[static_cast<std::size_t>(slot)];
      if (slot < 0) continue;
    }
    if (slot >= g.num_slots)
      return tok + "slot " + std::to_string(slot) + " >= NB*BS = " + std::to_string(g.num_slots);
    if (slot == g.skip_slot) continue;
    auto& o = owner[static_cast<std::size_t>(slot)];
    if (o >= 0)
      return tok + "physical slot " + std::to_string(slot) + " already written by token " +
             std::to_string(o);
    o = static_cast<std::int64_t>(t);
  }
  return "";
}

std::string check_cache_strides(const Case& c, const CacheGeometry& g) {
  const std::int64_t H = c.num_heads, D = params(c).head_size, BS = params(c).block_size;
  if (g.key_s1 < D) return too_small("key/value head stride", g.key_s1, "D", D);
  if (g.key_s0 < (H - 1) * g.key_s1 + D)
    return too_small("key/value token stride", g.key_s0, "(H-1)*head stride + D",
                     (H - 1) * g.key_s1 + D);
  const std::int64_t R = g.row;  // a cache row: D elements, or D + 4 bytes (per_token_head)
  const std::int64_t dense_block = BS * H * R;
  // Inside a block the rows of R elements (one per slot and head) must not overlap: the
  // smaller of the slot and head strides steps between rows, the larger between groups of them.
  const bool heads_inner = g.head_stride <= g.slot_stride;
  const std::int64_t inner_s = heads_inner ? g.head_stride : g.slot_stride;
  const std::int64_t inner_n = heads_inner ? H : BS;
  const std::int64_t outer_s = heads_inner ? g.slot_stride : g.head_stride;
  const std::int64_t outer_n = heads_inner ? BS : H;
  const char* row = token_head(c) ? "D+4" : "D";
  if (inner_n > 1 && inner_s < R)
    return too_small(heads_inner ? "cache head stride" : "cache slot stride", inner_s, row, R);
  if (outer_n > 1 && outer_s < (inner_n - 1) * inner_s + R)
    return too_small(heads_inner ? "cache slot stride" : "cache head stride", outer_s,
                     "the rows it spans", (inner_n - 1) * inner_s + R);
  const std::int64_t in_block = (BS - 1) * g.slot_stride + (H - 1) * g.head_stride + R;
  if (g.block_stride < in_block || g.block_stride < dense_block)
    return too_small("cache block stride", g.block_stride, token_head(c) ? "BS*H*(D+4)" : "BS*H*D",
                     dense_block);
  // K and V: disjoint, either as interleaved halves of each block or as two separate ranges.
  const std::int64_t v = g.value_cache_offset;
  const bool interleaved = v < g.block_stride;
  if (interleaved ? (v < dense_block || g.block_stride - v < dense_block)
                  : v < g.num_blocks * g.block_stride)
    return "value cache at element " + std::to_string(v) +
           " overlaps the key cache (block stride " + std::to_string(g.block_stride) + ")";
  // Rows start at multiples of D + 4 within a block: aligned blocks keep every scale aligned.
  if (token_head(c) && (g.block_stride % kScaleBytes != 0 || v % kScaleBytes != 0))
    return "per_token_head cache misaligned: block stride " + std::to_string(g.block_stride) +
           " and value cache offset " + std::to_string(v) +
           " bytes must be multiples of 4 (every fp32 scale 4-byte aligned)";
  return "";
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
      k_scale[0] = injected_scale(c.inject, k_scale[0]);
      return "";
    case Inject::short_stride:
      if (params(c).head_size < 2) return name + " needs D >= 2";
      g.key_s1 = params(c).head_size - 1;
      return "";
    case Inject::misaligned_cache:
      if (!token_head(c))
        return name + " needs scale per_token_head (the other scales take any alignment)";
      // Every other block starts 2 bytes off a 4-byte boundary, and its scales with it.
      g.block_stride = add(g.block_stride, 2);
      if (params(c).kv_interleaved) {
        g.cache_elems = mul(g.num_blocks, g.block_stride);
      } else {
        g.value_cache_offset = mul(g.num_blocks, g.block_stride);
        g.cache_elems = mul(2, g.value_cache_offset);
      }
      g.guard_elems = g.block_stride;
      return "";
  }
  return name + ": unknown injection";
}

CacheLocation locate_cache(const Case& c, const CacheGeometry& g, std::int64_t index) {
  CacheLocation l;
  const std::int64_t j = index - g.guard_elems;
  if (j < 0) {
    l.where = CacheLocation::Where::guard_before;
    l.rel = index;
    return l;
  }
  if (j >= g.cache_elems) {
    l.where = CacheLocation::Where::guard_after;
    l.rel = j - g.cache_elems;
    return l;
  }
  const std::int64_t H = c.num_heads, D = params(c).head_size, BS = params(c).block_size;
  const std::int64_t R = g.row;
  const std::int64_t dense_block = BS * H * R;
  for (const bool value : {false, true}) {
    const std::int64_t jj = j - (value ? g.value_cache_offset : 0);
    if (jj < 0) continue;
    const std::int64_t b = jj / g.block_stride, r = jj % g.block_stride;
    if (b >= g.num_blocks || r >= dense_block) continue;
    l.where = CacheLocation::Where::element;
    l.value_cache = value;
    l.block = b;
    l.dim = r % R;
    if (l.dim >= D) {  // per_token_head: the row's scale
      l.scale_byte = l.dim - D;
      l.dim = 0;
    }
    if (params(c).layout == Layout::nhd) {
      l.offset = r / (H * R);
      l.head = (r / R) % H;
    } else {
      l.head = r / (BS * R);
      l.offset = (r / R) % BS;
    }
    l.slot = b * BS + l.offset;
    return l;
  }
  l.where = CacheLocation::Where::padding;
  return l;
}

std::string to_string(const CacheLocation& l) {
  switch (l.where) {
    case CacheLocation::Where::guard_before:
      return rel("guard before the caches", l.rel);
    case CacheLocation::Where::guard_after:
      return rel("guard after the caches", l.rel);
    case CacheLocation::Where::padding:
      return "padding (outside any K/V element)";
    case CacheLocation::Where::element:
      break;
  }
  const std::string part = l.scale_byte >= 0 ? "scale byte " + std::to_string(l.scale_byte)
                                             : "dim " + std::to_string(l.dim);
  return std::string(l.value_cache ? "value_cache" : "key_cache") + "[block " +
         std::to_string(l.block) + ", offset " + std::to_string(l.offset) + ", head " +
         std::to_string(l.head) + ", " + part + "] (slot " + std::to_string(l.slot) + ")";
}

std::vector<std::int64_t> slot_owners(const SlotData& s, const CacheGeometry& g) {
  std::vector<std::int64_t> owner(static_cast<std::size_t>(g.num_slots), -1);
  const bool swa = !s.swa_table.empty();
  for (std::size_t t = 0; t < s.slot_mapping.size(); ++t) {
    std::int64_t slot = s.slot_mapping[t];
    if (slot < 0) continue;
    if (swa) {
      if (slot >= static_cast<std::int64_t>(s.swa_table.size())) continue;
      slot = s.swa_table[static_cast<std::size_t>(slot)];
      if (slot < 0) continue;
    }
    if (slot == g.skip_slot || slot >= g.num_slots) continue;
    owner[static_cast<std::size_t>(slot)] = static_cast<std::int64_t>(t);
  }
  return owner;
}

}  // namespace kvbench
