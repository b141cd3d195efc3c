#include "ops/launch.hpp"

#include <stdexcept>

#include "core/operation.hpp"
#include "ops/cache_write/launch.hpp"
#include "ops/concat_mla_k/launch.hpp"
#include "ops/mla_cache/launch.hpp"

namespace kvbench {

CasePlan case_plan(const Case& c, const kernels::DeviceProps& device) {
  if (is_external(c.variant)) {  // its launches are its own: kvbench plans none of them
    const std::string refusal = variant_refusal(c);
    return {refusal.empty() ? "none: a variant from " + variant_origin(c.variant)
                            : "not supported: " + refusal,
            ""};
  }
  switch (c.kernel) {
    case Kernel::concat_mla_k:
      return concat_plan(c, device);
    case Kernel::cache_write:
      return cache_write_plan(c, device);
    case Kernel::concat_and_cache_mla:
      return mla_cache_plan(c, device);
  }
  return {};
}

std::set<std::string> reachable_plan_keys(Kernel k) {
  switch (k) {
    case Kernel::concat_mla_k:
      return kernels::reachable_concat_keys();
    case Kernel::cache_write:
      return kernels::reachable_cache_write_keys();
    case Kernel::concat_and_cache_mla:
      return kernels::reachable_mla_cache_keys();
  }
  return {};
}

std::int32_t abi_op(Kernel k) {
  switch (k) {
    case Kernel::concat_mla_k:
      return KVB_OP_CONCAT_MLA_K;
    case Kernel::cache_write:
      return KVB_OP_CACHE_WRITE;
    case Kernel::concat_and_cache_mla:  // not in ABI version 1
      return 0;
  }
  return 0;
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

void to_abi(Kernel k, const void* kernel_args, AbiArgs& out) {
  out.args = {};
  out.args.struct_size = sizeof(kvb_args);
  out.args.op = abi_op(k);
  switch (k) {
    case Kernel::concat_mla_k:
      out.concat_mla_k = concat_abi_args(*static_cast<const kernels::ConcatArgs*>(kernel_args));
      out.args.concat_mla_k = &out.concat_mla_k;
      return;
    case Kernel::cache_write:
      out.cache_write =
          cache_write_abi_args(*static_cast<const kernels::CacheWriteArgs*>(kernel_args));
      out.args.cache_write = &out.cache_write;
      return;
    case Kernel::concat_and_cache_mla:
      break;
  }
  throw std::invalid_argument("the plugin ABI has no operation " + std::string(to_string(k)));
}

void plan_abi_args(const Case& c, AbiArgs& out) {
  switch (c.kernel) {
    case Kernel::concat_mla_k: {
      const kernels::ConcatArgs a = concat_plan_args(c);
      return to_abi(c.kernel, &a, out);
    }
    case Kernel::cache_write: {
      const kernels::CacheWriteArgs a = cache_write_plan_args(c);
      return to_abi(c.kernel, &a, out);
    }
    case Kernel::concat_and_cache_mla:
      break;
  }
  throw std::invalid_argument("the plugin ABI has no operation " +
                              std::string(to_string(c.kernel)));
}

}  // namespace kvbench
