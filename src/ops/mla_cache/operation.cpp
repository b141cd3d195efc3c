// concat_and_cache_mla's Operation (core/operation.hpp) and its pure host functions.
#include "ops/mla_cache/operation.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/inputs.hpp"
#include "ops/cache_write/operation.hpp"
#include "ops/operation_common.hpp"

namespace kvbench {
namespace {

using namespace op_common;

const MlaCacheParams& params(const Case& c) { return params_of<MlaCacheParams>(c); }

constexpr std::int64_t kDsEntry = 656;  // fp8_ds_mla: 512 e4m3 codes, 4 fp32 scales, 64 bf16
constexpr std::int64_t kDsScales = 512, kDsRope = 528;

bool ds(const Case& c) { return params(c).layout == MlaLayout::fp8_ds_mla; }

constexpr std::pair<MlaLayout, std::string_view> kLayouts[] = {
    {MlaLayout::nhd, "nhd"}, {MlaLayout::fp8_ds_mla, "fp8_ds_mla"}};
constexpr std::pair<MlaScale, std::string_view> kScales[] = {{MlaScale::none, "none"},
                                                             {MlaScale::per_tensor, "per_tensor"},
                                                             {MlaScale::tile_raw, "tile_raw"},
                                                             {MlaScale::tile_pow2, "tile_pow2"}};

template <class E, std::size_t N>
std::string names(const std::pair<E, std::string_view> (&table)[N]) {
  std::string out;
  for (const auto& entry : table) out += (out.empty() ? "" : ", ") + std::string(entry.second);
  return out;
}

template <class E, std::size_t N>
E parse(const std::pair<E, std::string_view> (&table)[N], const char* kind, std::string_view text) {
  for (const auto& [value, name] : table)
    if (name == text) return value;
  throw std::invalid_argument("unknown " + std::string(kind) + " '" + std::string(text) +
                              "' (expected one of " + names(table) + ")");
}

// A YAML axis over one of the operation's own enums.
template <class E, std::size_t N>
Axis own_axis(const std::string& name, E MlaCacheParams::*field,
              const std::pair<E, std::string_view> (&table)[N], const char* kind) {
  Axis a;
  a.name = name;
  a.kind = Axis::Kind::enumeration;
  a.set_enum = [field, &table, kind](Case& c, const std::string& v) {
    params_of<MlaCacheParams>(c).*field = parse(table, kind, v);
  };
  a.enum_names = names(table);
  return a;
}

class MlaCache final : public Operation {
 public:
  Kernel kernel() const override { return Kernel::mla_cache; }

  Case default_case() const override {
    Case c;
    c.kernel = Kernel::mla_cache;
    c.variant = Variant::optimized;
    c.num_heads = 1;  // the latent cache has one head
    c.params = MlaCacheParams{};
    return c;
  }

  // num_tokens and variant vary fastest, so that one shape's token counts, and each case's
  // variants, sit together in the output.
  const std::vector<Axis>& axes() const override {
    static const std::vector<Axis> axes = [] {
      std::vector<Axis> a = {
          header_axis("in_dtype", &Case::in_dtype),
          header_axis("out_dtype", &Case::out_dtype),
          own_axis("layout", &MlaCacheParams::layout, kLayouts, "layout"),
          own_axis("scale", &MlaCacheParams::scale, kScales, "scale"),
          header_axis("strides", &Case::strides),
          param_axis("slots", &MlaCacheParams::slots),
          param_axis("lora_rank", &MlaCacheParams::lora_rank),
          param_axis("rope_dim", &MlaCacheParams::rope_dim),
          param_axis("block_size", &MlaCacheParams::block_size),
          header_axis("num_tokens", &Case::num_tokens),
          header_axis("variant", &Case::variant),
          header_axis("inject", &Case::inject),
      };
      a[4].refuse = [](const std::string& v) -> std::string {
        return v == "sglang" ? "'sglang' strides apply to concat_and_cast_mha_k only" : "";
      };
      a[5].refuse = [](const std::string& v) -> std::string {
        return v == "skip" ? "concat_and_cache_mla has no skip slot (slots random, contiguous "
                             "or padded)"
                           : "";
      };
      return a;
    }();
    return axes;
  }

  // The variant (kernels/mla_cache/optimized.cu); the dtype pairs it takes are checked at
  // admission (stages.cpp).
  const std::vector<VariantInfo>& variants() const override {
    static const std::vector<VariantInfo> v = {
        {Variant::optimized,
         "whole latent rows in 16-byte vectors; fp8_ds_mla: a warp per token, 8 lanes per tile",
         nullptr},
    };
    return v;
  }

  std::string describe(const Case& c) const override {
    const MlaCacheParams& p = params(c);
    std::ostringstream os;
    os << to_string(c.kernel) << ' ' << to_string(c.variant) << " T=" << c.num_tokens
       << " L=" << p.lora_rank << " R=" << p.rope_dim << " BS=" << p.block_size << ' '
       << to_string(p.layout) << ' ' << to_string(c.in_dtype) << "->" << to_string(c.out_dtype)
       << " strides=" << to_string(c.strides) << " scale=" << to_string(p.scale)
       << " slots=" << to_string(p.slots);
    if (c.inject != Inject::none) os << " inject=" << to_string(c.inject);
    return os.str();
  }

  std::string describe_key(const std::function<const std::string&(Col)>& at) const override {
    return "T=" + at(Col::num_tokens) + " L=" + at(Col::head_dim) + " R=" + at(Col::rope_dim) +
           " BS=" + at(Col::block_size) + " " + at(Col::layout) + " " + at(Col::in_dtype) + "->" +
           at(Col::out_dtype) + " strides=" + at(Col::strides) + " scale=" + at(Col::scale) +
           " slots=" + at(Col::slots);
  }

  void check_sizes(const Case& c) const override {
    mla_cache_geometry(c);
    mla_cache_bytes(c, c.num_tokens);  // every token written
  }

  // One entry per written token.
  std::int64_t output_elems(const Case& c, std::int64_t written) const override {
    return mul(written, mla_cache_geometry(c).entry_elems);
  }

  // Host: inputs, expected and actual caches with guards, slots and their owners; device, per
  // set: inputs, cache with guards, slot mapping, scale.
  Footprint footprint(const Case& c) const override {
    Footprint f;
    const std::uint64_t in = size_of(c.in_dtype), out = size_of(c.out_dtype);
    const MlaCacheGeometry g = mla_cache_geometry(c);
    const std::uint64_t inputs = (u(g.kv_c_elems) + u(g.k_pe_elems)) * in;
    const std::uint64_t output = (u(g.cache_elems) + 2 * u(g.guard_elems)) * out;
    // slot_mapping [T], owners and check_slots' table [NB*BS], the draw pool [NB*BS] (int64).
    const std::uint64_t slot_data = 8 * (u(c.num_tokens) + 3 * u(g.num_slots));
    f.host_fixed = inputs + 2 * output + slot_data + 4;
    f.device_per_set = inputs + output + 8 * u(c.num_tokens) + 4;
    return f;
  }

  // head_dim holds L; layout and scale are the operation's own names.
  OpColumns columns(const Case& c) const override {
    const MlaCacheParams& p = params(c);
    OpColumns cols;
    cols.head_dim = p.lora_rank;
    cols.rope_dim = p.rope_dim;
    cols.block_size = p.block_size;
    cols.layout = to_string(p.layout);
    cols.scale = to_string(p.scale);
    cols.slots = p.slots;
    return cols;
  }
  void set_columns(Case& c, const OpColumns& cols) const override {
    MlaCacheParams& p = params_of<MlaCacheParams>(c);
    p.lora_rank = cols.head_dim;
    p.rope_dim = cols.rope_dim;
    p.block_size = cols.block_size;
    p.layout = mla_layout_from(cols.layout);
    p.scale = mla_scale_from(cols.scale);
    p.slots = cols.slots;
  }

  // `kvbench bounds`: the contiguous move of its bytes (the scatter floor copies rows of K and
  // of V; the latent cache has one row per token).
  std::optional<ScatterShape> scatter_shape(const Case&) const override { return std::nullopt; }
};

}  // namespace

std::string_view to_string(MlaLayout v) {
  for (const auto& [value, name] : kLayouts)
    if (value == v) return name;
  return "?";
}
std::string_view to_string(MlaScale v) {
  for (const auto& [value, name] : kScales)
    if (value == v) return name;
  return "?";
}
MlaLayout mla_layout_from(std::string_view text) { return parse(kLayouts, "layout", text); }
MlaScale mla_scale_from(std::string_view text) { return parse(kScales, "scale", text); }

std::string mla_refusal(const Case& c) {
  const MlaCacheParams& p = params(c);
  const std::string scale(to_string(p.scale));
  const bool tile = p.scale == MlaScale::tile_raw || p.scale == MlaScale::tile_pow2;
  if (!ds(c))
    return tile ? "scale " + scale +
                      " is a tile rule of layout fp8_ds_mla (layout nhd takes none or per_tensor)"
                : "";
  if (c.out_dtype != DType::fp8_e4m3)
    return "layout fp8_ds_mla stores e4m3 codes: out_dtype fp8_e4m3, not " +
           std::string(to_string(c.out_dtype));
  if (!tile) return "layout fp8_ds_mla scales each tile: scale tile_raw or tile_pow2, not " + scale;
  if (p.lora_rank != 512 || p.rope_dim != 64)
    return "layout fp8_ds_mla holds L = 512 and R = 64, not L = " + std::to_string(p.lora_rank) +
           ", R = " + std::to_string(p.rope_dim);
  return "";
}

const Operation& mla_cache_operation() {
  static const MlaCache op;
  return op;
}

MlaCacheGeometry mla_cache_geometry(const Case& c) {
  const MlaCacheParams& p = params(c);
  const std::int64_t T = c.num_tokens, L = p.lora_rank, R = p.rope_dim, BS = p.block_size;
  const std::int64_t pad = c.strides == StrideMode::padded ? kPad : 0;
  MlaCacheGeometry g{};
  g.kv_c_s0 = add(L, pad);
  g.k_pe_s0 = add(R, pad);
  g.kv_c_elems = mul(T, g.kv_c_s0);
  g.k_pe_elems = mul(T, g.k_pe_s0);
  g.entry_elems = ds(c) ? kDsEntry : add(L, R);
  g.entry_stride = add(g.entry_elems, pad);
  g.block_stride = add(mul(BS, g.entry_stride), pad);
  // Room for every token plus slack, so some slots stay untouched and their canary is checked.
  g.num_blocks = add(ceil_div(add(add(T, T / 8), 1), BS), 1);
  g.num_slots = mul(g.num_blocks, BS);
  g.cache_elems = mul(g.num_blocks, g.block_stride);
  g.guard_elems = g.block_stride;
  return g;
}

std::int64_t mla_cache_bytes(const Case& c, std::int64_t written) {
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  const std::int64_t values = add(params(c).lora_rank, params(c).rope_dim);
  const std::int64_t entry = ds(c) ? kDsEntry : mul(values, out);  // bytes written per token
  return add(mul(8, c.num_tokens), mul(written, add(mul(values, in), entry)));
}

std::vector<std::int64_t> make_mla_slots(const Case& c, const MlaCacheGeometry& g,
                                         std::uint64_t seed) {
  const std::int64_t T = c.num_tokens;
  std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
  if (params(c).slots == SlotPattern::contiguous) {
    const std::int64_t start = std::min<std::int64_t>(3, g.num_slots - T);  // starts mid-block
    std::iota(slots.begin(), slots.end(), start);
    return slots;
  }
  // Distinct draws from [0, NB*BS): a partial Fisher-Yates shuffle.
  std::uint64_t state = seed ^ 0x3ca1'3ca1'3ca1'3ca1ull;
  std::vector<std::int64_t> pool(static_cast<std::size_t>(g.num_slots));
  std::iota(pool.begin(), pool.end(), 0);
  for (std::int64_t i = 0; i < T; ++i) {
    const auto left = static_cast<std::uint64_t>(g.num_slots - i);
    std::swap(pool[i], pool[i + static_cast<std::int64_t>(splitmix64(state) % left)]);
    slots[static_cast<std::size_t>(i)] = pool[i];
  }
  if (params(c).slots == SlotPattern::padded)
    for (std::int64_t t = 7; t < T; t += 8) slots[static_cast<std::size_t>(t)] = -1;
  return slots;
}

std::int64_t written_tokens(const std::vector<std::int64_t>& slots) {
  return std::count_if(slots.begin(), slots.end(), [](std::int64_t s) { return s >= 0; });
}

std::string check_mla_slots(const std::vector<std::int64_t>& slots, const MlaCacheGeometry& g) {
  SlotData s;
  s.slot_mapping = slots;
  CacheGeometry cache{};
  cache.num_slots = g.num_slots;
  cache.skip_slot = -1;
  return check_slots(s, cache);
}

std::string check_mla_strides(const Case& c, const MlaCacheGeometry& g) {
  const MlaCacheParams& p = params(c);
  const std::int64_t L = p.lora_rank, R = p.rope_dim, BS = p.block_size;
  if (g.kv_c_s0 < L) return too_small("kv_c token stride", g.kv_c_s0, "L", L);
  if (g.k_pe_s0 < R) return too_small("k_pe token stride", g.k_pe_s0, "R", R);
  const std::int64_t E = g.entry_elems;
  if (g.entry_stride < E)
    return too_small("cache entry stride", g.entry_stride, ds(c) ? "656 bytes" : "L+R", E);
  if (g.block_stride < (BS - 1) * g.entry_stride + E)
    return too_small("cache block stride", g.block_stride, "(BS-1)*entry stride + entry",
                     (BS - 1) * g.entry_stride + E);
  // fp8_ds_mla entries hold fp32 scales and are written in 16-byte stores (SPEC.md §6).
  if (ds(c) && (g.entry_stride % 16 != 0 || g.block_stride % 16 != 0))
    return "fp8_ds_mla cache misaligned: entry stride " + std::to_string(g.entry_stride) +
           " and block stride " + std::to_string(g.block_stride) +
           " bytes must be multiples of 16 (every entry 16-byte aligned)";
  return "";
}

std::string inject_mla(const Case& c, MlaCacheGeometry& g, std::vector<std::int64_t>& slots,
                       std::vector<float>& scale) {
  const std::string name = "this injection";
  std::vector<std::size_t> written;
  for (std::size_t t = 0; t < slots.size(); ++t)
    if (slots[t] >= 0) written.push_back(t);
  // The token to corrupt: a written one from the middle, so the check must scan to find it.
  const std::size_t victim = written.empty() ? 0 : written[written.size() / 2];
  switch (c.inject) {
    case Inject::none:
      return "";
    case Inject::slot_out_of_range:
      if (written.empty()) return name + " needs a written token";
      slots[victim] = g.num_slots;
      return "";
    case Inject::duplicate_slot:
      if (written.size() < 2) return name + " needs two written tokens";
      slots[victim == written.front() ? written.back() : victim] = slots[written.front()];
      return "";
    case Inject::zero_scale:
    case Inject::negative_scale:
    case Inject::nan_scale:
    case Inject::inf_scale:
      if (scale.empty()) return name + " needs scale: per_tensor";
      scale[0] = injected_scale(c.inject, scale[0]);
      return "";
    case Inject::short_stride:
      if (params(c).lora_rank < 2) return name + " needs L >= 2";
      g.kv_c_s0 = params(c).lora_rank - 1;
      return "";
    case Inject::swa_out_of_range:
      return "does not apply to concat_and_cache_mla (it has no SWA table)";
    case Inject::misaligned_cache:
      if (!ds(c)) return name + " needs layout fp8_ds_mla (layout nhd takes any alignment)";
      g.entry_stride += 8;  // every other entry starts 8 bytes off a 16-byte boundary
      g.block_stride = mul(params(c).block_size, g.entry_stride);
      g.cache_elems = mul(g.num_blocks, g.block_stride);
      return "";
  }
  return name + ": unknown injection";
}

std::string locate_mla(const Case& c, const MlaCacheGeometry& g,
                       const std::vector<std::int64_t>& owners, std::int64_t index) {
  const std::int64_t j = index - g.guard_elems;
  if (j < 0) return rel("guard before the cache", index);
  if (j >= g.cache_elems) return rel("guard after the cache", j - g.cache_elems);
  const std::int64_t BS = params(c).block_size, L = params(c).lora_rank;
  const std::int64_t b = j / g.block_stride, r = j % g.block_stride;
  const std::int64_t o = r / g.entry_stride, e = r % g.entry_stride;
  const std::string block = "cache[block " + std::to_string(b);
  if (o >= BS) return rel("padding after " + block + "]", r - BS * g.entry_stride);
  const std::string entry = block + ", entry " + std::to_string(o);
  if (e >= g.entry_elems) return rel("padding after " + entry + "]", e - g.entry_elems);
  const std::int64_t slot = b * BS + o;
  const std::int64_t owner = owners[static_cast<std::size_t>(slot)];
  std::string part;
  if (!ds(c))
    part = e < L ? " (kv_c " + std::to_string(e) + ")" : " (k_pe " + std::to_string(e - L) + ")";
  else if (e < kDsScales)
    part = " (kv_c " + std::to_string(e) + ", tile " + std::to_string(e / 128) + ")";
  else if (e < kDsRope)
    part = " (scale of tile " + std::to_string((e - kDsScales) / 4) + ", byte " +
           std::to_string((e - kDsScales) % 4) + ")";
  else
    part = " (k_pe " + std::to_string((e - kDsRope) / 2) + ", byte " +
           std::to_string((e - kDsRope) % 2) + ")";
  return entry + ", " + std::to_string(e) + part + "] (slot " + std::to_string(slot) + ")" +
         (owner >= 0 ? " of token " + std::to_string(owner) : ", which no token writes");
}

std::vector<std::int64_t> mla_slot_owners(const std::vector<std::int64_t>& slots,
                                          const MlaCacheGeometry& g) {
  std::vector<std::int64_t> owner(static_cast<std::size_t>(g.num_slots), -1);
  for (std::size_t t = 0; t < slots.size(); ++t)
    if (slots[t] >= 0 && slots[t] < g.num_slots)
      owner[static_cast<std::size_t>(slots[t])] = static_cast<std::int64_t>(t);
  return owner;
}

}  // namespace kvbench
