// concat_and_cast_mha_k's Operation (core/operation.hpp) and its pure host functions.
#include "ops/concat_mha_k/operation.hpp"

#include <sstream>

#include "ops/operation_common.hpp"

namespace kvbench {
namespace {

using namespace op_common;

constexpr std::int64_t kSglangV = 128;     // V head size packed after NOPE in kv_b_proj's output
constexpr std::int64_t kSglangLora = 512;  // kv_lora_rank: the latent is 512 + ROPE wide

const ConcatParams& params(const Case& c) { return params_of<ConcatParams>(c); }

class Concat final : public Operation {
 public:
  Kernel kernel() const override { return Kernel::concat_mha_k; }

  Case default_case() const override {
    Case c;
    c.kernel = Kernel::concat_mha_k;
    c.num_heads = 128;
    c.params = ConcatParams{};
    return c;
  }

  // num_tokens and variant vary fastest, so that one shape's token counts, and each case's
  // variants, sit together in the output.
  const std::vector<Axis>& axes() const override {
    static const std::vector<Axis> axes = {
        header_axis("in_dtype", &Case::in_dtype),
        header_axis("out_dtype", &Case::out_dtype),
        header_axis("strides", &Case::strides),
        header_axis("num_heads", &Case::num_heads),
        param_axis("nope_dim", &ConcatParams::nope_dim),
        param_axis("rope_dim", &ConcatParams::rope_dim),
        header_axis("num_tokens", &Case::num_tokens),
        header_axis("variant", &Case::variant),
        header_axis("inject", &Case::inject),
    };
    return axes;
  }

  // The variants (kernels/concat_mha_k/*.cu); the dtype pairs both take are checked at
  // admission (stages.cpp).
  const std::vector<VariantInfo>& variants() const override {
    static const std::vector<VariantInfo> v = {
        {Variant::seed_port, "the seed's Triton program ported as it is: one block per token",
         nullptr},
        {Variant::optimized, "16-byte vectors, tiled over (token, vector) as its plan picks",
         nullptr},
    };
    return v;
  }

  std::string describe(const Case& c) const override {
    std::ostringstream os;
    os << to_string(c.kernel) << ' ' << to_string(c.variant) << " T=" << c.num_tokens
       << " H=" << c.num_heads << " NOPE=" << params(c).nope_dim << " ROPE=" << params(c).rope_dim
       << ' ' << to_string(c.in_dtype) << "->" << to_string(c.out_dtype)
       << " strides=" << to_string(c.strides);
    if (c.inject != Inject::none) os << " inject=" << to_string(c.inject);
    return os.str();
  }

  std::string describe_key(const std::function<const std::string&(Col)>& at) const override {
    return "T=" + at(Col::num_tokens) + " H=" + at(Col::num_heads) + " NOPE=" + at(Col::head_dim) +
           " ROPE=" + at(Col::rope_dim) + " " + at(Col::in_dtype) + "->" + at(Col::out_dtype) +
           " strides=" + at(Col::strides);
  }

  void check_sizes(const Case& c) const override {
    concat_geometry(c);
    concat_bytes(c);
  }

  // k: every token writes every head (written_tokens is T).
  std::int64_t output_elems(const Case& c, std::int64_t) const override {
    const ConcatParams& p = params(c);
    return mul(mul(c.num_tokens, c.num_heads), add(p.nope_dim, p.rope_dim));
  }

  // Host: inputs, expected and actual k with guards; device, per set: inputs and k.
  Footprint footprint(const Case& c) const override {
    Footprint f;
    const std::uint64_t in = size_of(c.in_dtype), out = size_of(c.out_dtype);
    const ConcatGeometry g = concat_geometry(c);
    const std::uint64_t inputs = (u(g.nope_elems) + u(g.rope_elems)) * in;
    const std::uint64_t output = (u(g.k_elems) + 2 * u(g.guard_elems)) * out;
    f.host_fixed = inputs + 2 * output;  // inputs, expected, actual
    f.device_per_set = inputs + output;
    return f;
  }

  // head_dim holds NOPE.
  OpColumns columns(const Case& c) const override {
    OpColumns cols;
    cols.head_dim = params(c).nope_dim;
    cols.rope_dim = params(c).rope_dim;
    return cols;
  }
  void set_columns(Case& c, const OpColumns& cols) const override {
    params_of<ConcatParams>(c).nope_dim = cols.head_dim;
    params_of<ConcatParams>(c).rope_dim = cols.rope_dim;
    from_string<Layout>(cols.layout);  // names it has no use for, still refused when unknown
    from_string<ScaleMode>(cols.scale);
  }

  // Its output is one dense tensor: the contiguous move of its bytes is its bound.
  std::optional<ScatterShape> scatter_shape(const Case&) const override { return std::nullopt; }
};

}  // namespace

const Operation& concat_operation() {
  static const Concat op;
  return op;
}

ConcatGeometry concat_geometry(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads;
  const std::int64_t N = params(c).nope_dim, R = params(c).rope_dim;
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

std::int64_t concat_bytes(const Case& c) {
  const std::int64_t T = c.num_tokens, H = c.num_heads;
  const std::int64_t N = params(c).nope_dim, R = params(c).rope_dim;
  const auto in = static_cast<std::int64_t>(size_of(c.in_dtype));
  const auto out = static_cast<std::int64_t>(size_of(c.out_dtype));
  return add(add(mul(mul(mul(T, H), N), in), mul(mul(T, R), in)),
             mul(mul(mul(T, H), add(N, R)), out));
}

std::string check_concat_strides(const Case& c, const ConcatGeometry& g) {
  const std::int64_t H = c.num_heads, N = params(c).nope_dim, R = params(c).rope_dim;
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

std::string inject_concat(const Case& c, ConcatGeometry& g) {
  switch (c.inject) {
    case Inject::none:
      return "";
    case Inject::short_stride:
      if (params(c).nope_dim < 2) return "this injection needs NOPE >= 2";
      g.nope_s1 = params(c).nope_dim - 1;
      return "";
    default:
      return "does not apply to concat_and_cast_mha_k (only short_stride does)";
  }
}

std::string locate_concat(const Case& c, const ConcatGeometry& g, std::int64_t index) {
  const std::int64_t j = index - g.guard_elems;
  if (j < 0) return rel("guard before k", index);
  if (j >= g.k_elems) return rel("guard after k", j - g.k_elems);
  const std::int64_t t = j / g.k_s0, r = j % g.k_s0;
  const std::int64_t h = r / g.k_s1, d = r % g.k_s1;
  const std::string tok = "t=" + std::to_string(t);
  if (h >= c.num_heads)
    return rel(("padding after k[" + tok + "]").c_str(), r - c.num_heads * g.k_s1);
  const std::string th = tok + ", h=" + std::to_string(h);
  const std::int64_t nope = params(c).nope_dim, width = nope + params(c).rope_dim;
  if (d >= width) return rel(("padding after k[" + th + "]").c_str(), d - width);
  const std::string part = d < nope ? " (nope)" : " (rope " + std::to_string(d - nope) + ")";
  return "k[" + th + ", d=" + std::to_string(d) + part + "]";
}

}  // namespace kvbench
