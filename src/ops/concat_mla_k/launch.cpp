#include "ops/concat_mla_k/launch.hpp"

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

CasePlan concat_plan(const Case& c, const kernels::DeviceProps& device) {
  const kernels::ConcatArgs a =
      concat_args(c, concat_geometry(c),
                  {plan_allocation<void>(0), plan_allocation<void>(1), plan_allocation<void>(2)});
  const kernels::ConcatPlan p = kernels::plan_concat(a, c.variant, device);
  return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
}

}  // namespace kvbench
