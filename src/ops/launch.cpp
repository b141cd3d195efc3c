// The backends' registry, one line per operation in the order of the Kernel enum, and what every
// backend shares.
#include "ops/launch.hpp"

#include <stdexcept>

#include "core/operation.hpp"
#include "ops/cache_write/launch.hpp"
#include "ops/concat_mha_k/launch.hpp"
#include "ops/mla_cache/launch.hpp"

namespace kvbench {

const std::vector<const Backend*>& backends() {
  static const std::vector<const Backend*> all = [] {
    std::vector<const Backend*> v = {
        &concat_backend(),
        &cache_write_backend(),
        &mla_cache_backend(),
    };
    if (v.size() != all_values<Kernel>().size())
      throw std::logic_error("the backends' registry has " + std::to_string(v.size()) +
                             " operations, the Kernel enum " +
                             std::to_string(all_values<Kernel>().size()));
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i]->kernel() != all_values<Kernel>().at(i))
        throw std::logic_error("the backends' registry's operation " + std::to_string(i) + " is " +
                               std::string(to_string(v[i]->kernel())) + ", not the Kernel enum's");
    return v;
  }();
  return all;
}

const Backend& backend(Kernel k) {
  for (const Backend* b : backends())
    if (b->kernel() == k) return *b;
  throw std::logic_error("no backend registered for " + std::string(to_string(k)));
}

CasePlan case_plan(const Case& c, const kernels::DeviceProps& device) {
  if (is_external(c.variant)) {  // its launches are its own: kvbench plans none of them
    const std::string refusal = variant_refusal(c);
    return {refusal.empty() ? "none: a variant from " + variant_origin(c.variant)
                            : "not supported: " + refusal,
            ""};
  }
  return backend(c.kernel).plan(c, device);
}

std::int32_t abi_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return KVB_DTYPE_F32;
    case DType::f16:
      return KVB_DTYPE_F16;
    case DType::bf16:
      return KVB_DTYPE_BF16;
    case DType::fp8_e4m3:
      return KVB_DTYPE_FP8_E4M3;
    case DType::fp8_e5m2:
      return KVB_DTYPE_FP8_E5M2;
  }
  return -1;
}

void Backend::to_abi(const void* kernel_args, AbiArgs& out) const {
  if (abi_op() == 0)
    throw std::invalid_argument("the plugin ABI has no operation " +
                                std::string(to_string(kernel())));
  out.args = {};
  out.args.struct_size = sizeof(kvb_args);
  out.args.op = abi_op();
  fill_abi(kernel_args, out);
}

}  // namespace kvbench
