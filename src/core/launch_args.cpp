#include "core/launch_args.hpp"

namespace kvbench {

kernels::ConcatArgs concat_args(const Case& c, const ConcatGeometry& g, const ConcatBuffers& b) {
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
  return {b.k_nope,     b.k_rope,    static_cast<unsigned char*>(b.k_buffer) + guard_bytes,
          c.num_tokens, c.num_heads, c.head_dim,
          c.rope_dim,   g.nope_s0,   g.nope_s1,
          g.rope_s0,    g.k_s0,      g.k_s1,
          c.in_dtype,   c.out_dtype};
}

kernels::CacheWriteArgs cache_write_args(const Case& c, const CacheGeometry& g,
                                         const CacheWriteBuffers& b) {
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
  a.head_size = c.head_dim;
  a.block_size = c.block_size;
  a.key_s0 = a.value_s0 = g.key_s0;
  a.key_s1 = a.value_s1 = g.key_s1;
  a.block_stride = g.block_stride;
  a.slot_stride = g.slot_stride;
  a.head_stride = g.head_stride;
  a.skip_slot = g.skip_slot;
  a.num_slots = g.num_slots;
  a.slot_table = b.slot_table;
  a.scale = c.scale;
  a.in_dtype = c.in_dtype;
  a.out_dtype = c.out_dtype;
  return a;
}

namespace {

// The n-th allocation of a case, as cudaMalloc aligns it (256 bytes); only alignment matters.
template <class T>
T* allocation(int n) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(n + 1) << 32);
}

}  // namespace

CasePlan case_plan(const Case& c, const kernels::DeviceProps& device) {
  if (c.kernel == Kernel::concat_mla_k) {
    const kernels::ConcatArgs a = concat_args(
        c, concat_geometry(c), {allocation<void>(0), allocation<void>(1), allocation<void>(2)});
    const kernels::ConcatPlan p = kernels::plan_concat(a, c.variant, device);
    return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
  }
  const CacheGeometry g = cache_geometry(c);
  const bool scaled = c.scale != ScaleMode::none;
  const CacheWriteBuffers b{allocation<void>(0),
                            allocation<void>(1),
                            allocation<void>(2),
                            allocation<std::int64_t>(3),
                            c.swa ? allocation<std::int64_t>(4) + 1 : nullptr,
                            scaled ? allocation<float>(5) : nullptr,
                            scaled ? allocation<float>(6) : nullptr,
                            allocation<std::int32_t>(7)};
  const kernels::CacheWritePlan p =
      kernels::plan_cache_write(cache_write_args(c, g, b), c.variant, device);
  return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
}

}  // namespace kvbench
