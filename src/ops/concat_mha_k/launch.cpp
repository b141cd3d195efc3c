#include "ops/concat_mha_k/launch.hpp"

namespace kvbench {

kernels::ConcatArgs concat_args(const Case& c, const ConcatGeometry& g, const ConcatBuffers& b) {
  const ConcatParams& p = params_of<ConcatParams>(c);
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
  return {b.k_nope,     b.k_rope,    static_cast<unsigned char*>(b.k_buffer) + guard_bytes,
          c.num_tokens, c.num_heads, p.nope_dim,
          p.rope_dim,   g.nope_s0,   g.nope_s1,
          g.rope_s0,    g.k_s0,      g.k_s1,
          c.in_dtype,   c.out_dtype};
}

kernels::ConcatArgs concat_plan_args(const Case& c) {
  return concat_args(
      c, concat_geometry(c),
      {plan_allocation<void>(0), plan_allocation<void>(1), plan_allocation<void>(2)});
}

kvb_concat_mla_k_args concat_abi_args(const kernels::ConcatArgs& a) {
  kvb_concat_mla_k_args o{};
  o.k_nope = a.k_nope;
  o.k_rope = a.k_rope;
  o.k = a.k;
  o.num_tokens = a.num_tokens;
  o.num_heads = a.num_heads;
  o.nope_dim = a.nope_dim;
  o.rope_dim = a.rope_dim;
  o.nope_s0 = a.nope_s0;
  o.nope_s1 = a.nope_s1;
  o.rope_s0 = a.rope_s0;
  o.k_s0 = a.k_s0;
  o.k_s1 = a.k_s1;
  o.in_dtype = abi_dtype(a.in_dtype);
  o.out_dtype = abi_dtype(a.out_dtype);
  return o;
}

namespace {

class ConcatBackend final : public BackendOf<kernels::ConcatArgs> {
 public:
  Kernel kernel() const override { return Kernel::concat_mha_k; }
  CasePlan plan(const Case& c, const kernels::DeviceProps& device) const override {
    const kernels::ConcatPlan p = kernels::plan_concat(plan_args(c), c.variant, device);
    return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
  }
  std::set<std::string> plan_keys() const override { return kernels::reachable_concat_keys(); }
  std::int32_t abi_op() const override { return KVB_OP_CONCAT_MLA_K; }

 protected:
  kernels::ConcatArgs plan_args(const Case& c) const override { return concat_plan_args(c); }
  void* output_of(const kernels::ConcatArgs& a) const override { return a.k; }
  void fill_abi_of(const kernels::ConcatArgs& a, AbiArgs& out) const override {
    out.concat_mla_k = concat_abi_args(a);
    out.args.concat_mla_k = &out.concat_mla_k;
  }
};

}  // namespace

const Backend& concat_backend() {
  static const ConcatBackend b;
  return b;
}

}  // namespace kvbench
