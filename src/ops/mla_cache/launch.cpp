#include "ops/mla_cache/launch.hpp"

#include "kernels/mla_cache/mla_cache.hpp"

namespace kvbench {

kernels::MlaCacheArgs mla_cache_args(const Case& c, const MlaCacheGeometry& g,
                                     const MlaCacheBuffers& b) {
  const MlaCacheParams& p = params_of<MlaCacheParams>(c);
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
  kernels::MlaCacheArgs a{};
  a.kv_c = b.kv_c;
  a.k_pe = b.k_pe;
  a.slot_mapping = b.slot_mapping;
  a.scale = b.scale;
  a.cache = static_cast<unsigned char*>(b.cache) + guard_bytes;
  a.num_tokens = c.num_tokens;
  a.lora_rank = p.lora_rank;
  a.rope_dim = p.rope_dim;
  a.block_size = p.block_size;
  a.kv_c_s0 = g.kv_c_s0;
  a.k_pe_s0 = g.k_pe_s0;
  a.block_stride = g.block_stride;
  a.entry_stride = g.entry_stride;
  a.in_dtype = c.in_dtype;
  a.out_dtype = c.out_dtype;
  a.entry =
      p.layout == MlaLayout::fp8_ds_mla ? kernels::MlaEntry::fp8_ds_mla : kernels::MlaEntry::plain;
  a.tile_scale =
      p.scale == MlaScale::tile_pow2 ? kernels::TileScale::pow2 : kernels::TileScale::raw;
  return a;
}

std::string mla_unsupported(const Case& c) {
  if (!kernels::mla_cache_supported(c.in_dtype, c.out_dtype))
    return "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
           std::string(to_string(c.out_dtype)) +
           " not supported (inputs: f16, bf16; caches: f16, bf16, fp8_e4m3, fp8_e5m2)";
  return mla_refusal(c);
}

kernels::MlaCacheArgs mla_cache_plan_args(const Case& c) {
  const bool scaled = params_of<MlaCacheParams>(c).scale == MlaScale::per_tensor;
  const MlaCacheBuffers b{plan_allocation<void>(0), plan_allocation<void>(1),
                          plan_allocation<std::int64_t>(2),
                          scaled ? plan_allocation<float>(3) : nullptr, plan_allocation<void>(4)};
  return mla_cache_args(c, mla_cache_geometry(c), b);
}

namespace {

// Not in the plugin ABI (version 1).
class MlaCacheBackend final : public BackendOf<kernels::MlaCacheArgs> {
 public:
  Kernel kernel() const override { return Kernel::mla_cache; }
  CasePlan plan(const Case& c, const kernels::DeviceProps& device) const override {
    if (const std::string why = mla_unsupported(c); !why.empty())
      return {"not supported: " + why, ""};
    const kernels::MlaCachePlan p = kernels::plan_mla_cache(plan_args(c), c.variant, device);
    return {kernels::to_string(p, c.in_dtype), p.error.empty() ? plan_key(p, c.in_dtype) : ""};
  }
  std::set<std::string> plan_keys() const override { return kernels::reachable_mla_cache_keys(); }

 protected:
  kernels::MlaCacheArgs plan_args(const Case& c) const override { return mla_cache_plan_args(c); }
  void* output_of(const kernels::MlaCacheArgs& a) const override { return a.cache; }
};

}  // namespace

const Backend& mla_cache_backend() {
  static const MlaCacheBackend b;
  return b;
}

}  // namespace kvbench
