#include "ops/cache_write/launch.hpp"

#include <stdexcept>

namespace kvbench {

kernels::CacheWriteArgs cache_write_args(const Case& c, const CacheGeometry& g,
                                         const CacheWriteBuffers& b) {
  const CacheWriteParams& p = params_of<CacheWriteParams>(c);
  const std::size_t osize = size_of(c.out_dtype);
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * osize;
  const std::size_t v_bytes = static_cast<std::size_t>(g.value_cache_offset) * osize;
  kernels::CacheWriteArgs a{};
  a.key = b.key;
  a.value = b.value;
  a.key_cache = static_cast<unsigned char*>(b.cache) + guard_bytes;
  a.value_cache = static_cast<unsigned char*>(b.cache) + guard_bytes + v_bytes;
  a.slot_mapping = b.slot_mapping;
  a.swa_slot_mapping = b.swa_slot_mapping;
  a.k_scale = b.k_scale;
  a.v_scale = b.v_scale;
  a.num_tokens = c.num_tokens;
  a.num_heads = c.num_heads;
  a.head_size = p.head_size;
  a.block_size = p.block_size;
  a.key_s0 = a.value_s0 = g.key_s0;
  a.key_s1 = a.value_s1 = g.key_s1;
  a.block_stride = g.block_stride;
  a.slot_stride = g.slot_stride;
  a.head_stride = g.head_stride;
  a.skip_slot = g.skip_slot;
  a.num_slots = g.num_slots;
  a.slot_table = b.slot_table;
  a.scale = p.scale;
  a.in_dtype = c.in_dtype;
  a.out_dtype = c.out_dtype;
  return a;
}

kernels::CacheWriteArgs cache_write_plan_args(const Case& c) {
  const CacheWriteParams& p = params_of<CacheWriteParams>(c);
  // A caller's scales; per_token_head computes its own.
  const bool scaled = p.scale == ScaleMode::per_tensor || p.scale == ScaleMode::per_head;
  const CacheWriteBuffers b{plan_allocation<void>(0),
                            plan_allocation<void>(1),
                            plan_allocation<void>(2),
                            plan_allocation<std::int64_t>(3),
                            p.swa ? plan_allocation<std::int64_t>(4) + 1 : nullptr,
                            scaled ? plan_allocation<float>(5) : nullptr,
                            scaled ? plan_allocation<float>(6) : nullptr,
                            plan_allocation<std::int32_t>(7)};
  return cache_write_args(c, cache_geometry(c), b);
}

kvb_cache_write_args cache_write_abi_args(const kernels::CacheWriteArgs& a) {
  kvb_cache_write_args o{};
  o.key = a.key;
  o.value = a.value;
  o.key_cache = a.key_cache;
  o.value_cache = a.value_cache;
  o.slot_mapping = a.slot_mapping;
  o.swa_slot_mapping = a.swa_slot_mapping;
  o.k_scale = a.k_scale;
  o.v_scale = a.v_scale;
  o.num_tokens = a.num_tokens;
  o.num_heads = a.num_heads;
  o.head_size = a.head_size;
  o.block_size = a.block_size;
  o.key_s0 = a.key_s0;
  o.key_s1 = a.key_s1;
  o.value_s0 = a.value_s0;
  o.value_s1 = a.value_s1;
  o.block_stride = a.block_stride;
  o.slot_stride = a.slot_stride;
  o.head_stride = a.head_stride;
  o.num_slots = a.num_slots;
  o.skip_slot = a.skip_slot;
  switch (a.scale) {
    case ScaleMode::none:
      o.scale_mode = KVB_SCALE_NONE;
      break;
    case ScaleMode::per_tensor:
      o.scale_mode = KVB_SCALE_PER_TENSOR;
      break;
    case ScaleMode::per_head:
      o.scale_mode = KVB_SCALE_PER_HEAD;
      break;
    case ScaleMode::per_token_head:  // a plugin's `supports` is asked first and gets this reason
      throw std::invalid_argument("the plugin ABI (version 1) has no per_token_head scale");
  }
  o.in_dtype = abi_dtype(a.in_dtype);
  o.out_dtype = abi_dtype(a.out_dtype);
  return o;
}

namespace {

class CacheWriteBackend final : public BackendOf<kernels::CacheWriteArgs> {
 public:
  Kernel kernel() const override { return Kernel::cache_write; }
  CasePlan plan(const Case& c, const kernels::DeviceProps& device) const override {
    const kernels::CacheWritePlan p = kernels::plan_cache_write(plan_args(c), c.variant, device);
    return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
  }
  std::set<std::string> plan_keys() const override { return kernels::reachable_cache_write_keys(); }
  std::int32_t abi_op() const override { return KVB_OP_CACHE_WRITE; }

 protected:
  kernels::CacheWriteArgs plan_args(const Case& c) const override {
    return cache_write_plan_args(c);
  }
  void* output_of(const kernels::CacheWriteArgs& a) const override { return a.key_cache; }
  void fill_abi_of(const kernels::CacheWriteArgs& a, AbiArgs& out) const override {
    out.cache_write = cache_write_abi_args(a);
    out.args.cache_write = &out.cache_write;
  }
};

}  // namespace

const Backend& cache_write_backend() {
  static const CacheWriteBackend b;
  return b;
}

}  // namespace kvbench
