// concat_and_cache_mla's stages (case_sets.hpp): admit (slots, scale, injected input and the
// SPEC.md §5 checks), one set's buffers, build and check.
#include "ops/mla_cache/stages.hpp"

#include <cstring>
#include <sstream>

#include "core/inputs.hpp"
#include "core/rotation.hpp"
#include "core/validate.hpp"
#include "kernels/mla_cache/mla_cache.hpp"
#include "ops/mla_cache/launch.hpp"
#include "ops/stages.hpp"
#include "reference/quantize.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench::stages {
namespace {

// The small inputs of one set: its slots and its scale (empty without one).
struct MlaSlots {
  std::vector<std::int64_t> slots;
  std::vector<float> scale;
};

std::vector<float> make_scale(const Case& c, std::uint64_t seed) {
  if (params_of<MlaCacheParams>(c).scale != MlaScale::per_tensor) return {};
  std::uint64_t state = seed;  // positive, finite, not a power of two: the division must round
  return {0.25f + static_cast<float>(splitmix64(state) % 4096) / 1024.0f + 1.0f / 3.0f};
}

// Slots and scale of a set, with the case's injected bad input. Returns the reason when the
// injection does not apply to the case.
std::string make_set_slots(const Case& c, MlaCacheGeometry& g, std::uint64_t seed, MlaSlots& out) {
  out.slots = make_mla_slots(c, g, seed + 2);
  out.scale = make_scale(c, seed + 3);
  return inject_mla(c, g, out.slots, out.scale);
}

// SPEC.md §5's bad-input checks; "" when the set is valid.
std::string check_set(const Case& c, const MlaCacheGeometry& g, const MlaSlots& s) {
  for (std::string bad :
       {check_mla_slots(s.slots, g), check_mla_strides(c, g), check_scales(s.scale, {})})
    if (!bad.empty()) return bad;
  return "";
}

struct MlaHost {
  Bytes kv_c, k_pe, expected;
  MlaSlots slots;  // sets after the first (set 0's are the case's, made at admission)
};

class MlaCacheSets final : public OpSets<kernels::MlaCacheArgs, kernels::MlaCachePlan, MlaHost> {
 public:
  MlaCacheSets(const Case& c, const MlaCacheGeometry& g, MlaSlots first, std::uint64_t seed,
               const ValidationOptions& options, const LaunchOverride& override_launch)
      : OpSets(c, seed, options, override_launch),
        p_(params_of<MlaCacheParams>(c)),
        g_(g),
        first_(std::move(first)) {
    const std::size_t in = size_of(c.in_dtype);
    guard_bytes_ = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
    kv_c_at_ = layout_.add(static_cast<std::size_t>(g.kv_c_elems) * in);
    k_pe_at_ = layout_.add(static_cast<std::size_t>(g.k_pe_elems) * in);
    slots_at_ = layout_.add(first_.slots.size() * sizeof(std::int64_t));
    scale_at_ = layout_.add(first_.scale.size() * sizeof(float));
    layout_.end_inputs();
    cache_bytes_ =
        static_cast<std::size_t>(g.cache_elems + 2 * g.guard_elems) * size_of(c.out_dtype);
    cache_at_ = layout_.add(cache_bytes_);
  }

  std::int64_t set_bytes() const override {
    return mla_cache_bytes(c_, written_tokens(first_.slots));
  }
  std::size_t set_host_bytes() const override {  // inputs and the expected cache
    return static_cast<std::size_t>(g_.kv_c_elems + g_.k_pe_elems) * size_of(c_.in_dtype) +
           cache_bytes_;
  }

  bool build(int set, int sets, unsigned char* base, cudaStream_t stream, Row& row) override {
    const MlaHost& host = host_of(set);
    const MlaSlots& sl = set > 0 ? host.slots : first_;
    if (set > 0) {
      if (std::string bad = check_set(c_, g_, sl); !bad.empty()) {
        row.status = Status::rejected;
        row.reason = set_prefix(set, sets) + bad;
        return false;
      }
    } else {
      row.written_tokens = written_tokens(sl.slots);
      row.bytes = set_bytes();
    }
    upload(base + kv_c_at_, host.kv_c.data(), host.kv_c.size(), stream);
    upload(base + k_pe_at_, host.k_pe.data(), host.k_pe.size(), stream);
    upload(base + slots_at_, sl.slots.data(), sl.slots.size() * sizeof(std::int64_t), stream);
    upload(base + scale_at_, sl.scale.data(), sl.scale.size() * sizeof(float), stream);
    KVB_CUDA_CHECK(cudaMemsetAsync(base + cache_at_, kCanary, cache_bytes_, stream));
    add_set(mla_cache_args(
        c_, g_,
        {base + kv_c_at_, base + k_pe_at_, reinterpret_cast<const std::int64_t*>(base + slots_at_),
         sl.scale.empty() ? nullptr : reinterpret_cast<const float*>(base + scale_at_),
         base + cache_at_}));
    const std::vector<std::int64_t> owners = mla_slot_owners(sl.slots, g_);
    const Locate locate = [&](std::int64_t i) { return locate_mla(c_, g_, owners, i); };
    return check(set, sets, host, base + cache_at_, stream, locate, row);
  }

 private:
  kernels::MlaCachePlan plan(const kernels::MlaCacheArgs& a) const override {
    return kernels::plan_mla_cache(a, c_.variant, kernels::current_device_props());
  }
  cudaError_t launch_plan(const kernels::MlaCacheArgs& a, const kernels::MlaCachePlan& p,
                          cudaStream_t s) const override {
    return kernels::launch_mla_cache(a, p, s);
  }

  // Set `set`'s host side: its slots and scale (set 0: the case's, already checked), inputs and
  // reference. Later sets carry no injected bad input: a case that has one is rejected at set 0.
  MlaHost make_set(int set) const override {
    const std::uint64_t seed = set_seed(seed_, set);
    MlaHost h;
    if (set > 0) {
      Case clean = c_;
      clean.inject = Inject::none;
      MlaCacheGeometry g = g_;
      make_set_slots(clean, g, seed, h.slots);
      if (!check_set(c_, g_, h.slots).empty()) return h;  // build() rejects it
    }
    const MlaSlots& sl = set > 0 ? h.slots : first_;
    h.kv_c = host_bytes(g_.kv_c_elems, c_.in_dtype);
    h.k_pe = host_bytes(g_.k_pe_elems, c_.in_dtype);
    h.expected = host_bytes(g_.cache_elems + 2 * g_.guard_elems, c_.out_dtype);
    fill_random(c_.in_dtype, h.kv_c.data(), g_.kv_c_elems, seed);
    fill_random(c_.in_dtype, h.k_pe.data(), g_.k_pe_elems, seed + 1);
    // [guard | cache | guard], all canary; the reference writes the written entries only.
    std::memset(h.expected.data(), kCanary, h.expected.size());
    ref::MlaCacheProblem prob{};
    prob.in_dtype = c_.in_dtype;
    const bool ds = p_.layout == MlaLayout::fp8_ds_mla;
    prob.layout = ds ? ref::MlaCacheLayout::fp8_ds_mla : ref::MlaCacheLayout::plain;
    prob.rule =
        p_.scale == MlaScale::tile_pow2 ? ref::TileScaleRule::pow2 : ref::TileScaleRule::raw;
    prob.cache_dtype = c_.out_dtype;
    prob.num_tokens = c_.num_tokens;
    prob.lora_rank = p_.lora_rank;
    prob.rope_dim = p_.rope_dim;
    prob.block_size = p_.block_size;
    prob.num_blocks = g_.num_blocks;
    prob.kv_c = h.kv_c.data();
    prob.k_pe = h.k_pe.data();
    prob.kv_c_s0 = g_.kv_c_s0;
    prob.k_pe_s0 = g_.k_pe_s0;
    prob.slot_mapping = sl.slots.data();
    prob.cache = h.expected.data() + guard_bytes_;
    prob.block_stride = g_.block_stride;
    prob.entry_stride = g_.entry_stride;
    prob.scale = sl.scale.empty() ? nullptr : sl.scale.data();
    ref::concat_and_cache_mla(prob);
    return h;
  }

  void save_set(int set, const MlaHost& host, const Bytes& actual) const override {
    const MlaSlots& sl = set > 0 ? host.slots : first_;
    std::ostringstream geo;
    geo << "kv_c [T, L] stride (" << g_.kv_c_s0 << ", 1); k_pe [T, R] stride (" << g_.k_pe_s0
        << ", 1); cache [NB, BS, entry] (" << to_string(p_.layout) << ", " << g_.entry_elems
        << " elements an entry): NB " << g_.num_blocks << ", block stride " << g_.block_stride
        << ", entry stride " << g_.entry_stride << ", starting at element " << g_.guard_elems
        << " of cache_expected / cache_actual (guards of " << g_.guard_elems
        << " canary elements before and after)";
    std::vector<SavedTensor> t = {
        tensor("kv_c", c_.in_dtype, host.kv_c), tensor("k_pe", c_.in_dtype, host.k_pe),
        i64_tensor("slot_mapping", sl.slots), tensor("cache_expected", c_.out_dtype, host.expected),
        tensor("cache_actual", c_.out_dtype, actual)};
    if (!sl.scale.empty()) t.push_back(f32_tensor("scale", sl.scale));
    save_tensors(options_, c_, set, geo.str(), t);
  }

  MlaCacheParams p_;  // c_'s
  MlaCacheGeometry g_;
  MlaSlots first_;
  std::size_t guard_bytes_ = 0, kv_c_at_ = 0, k_pe_at_ = 0, slots_at_ = 0, scale_at_ = 0,
              cache_at_ = 0, cache_bytes_ = 0;
};

}  // namespace

std::unique_ptr<CaseSets> mla_cache_sets(const Case& c, std::uint64_t seed,
                                         const ValidationOptions& options,
                                         const LaunchOverride& override_launch, Row& row) {
  if (std::string why = mla_unsupported(c); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return nullptr;
  }
  if (!admit_variant(c, row)) return nullptr;
  MlaCacheGeometry g = mla_cache_geometry(c);
  MlaSlots first;
  if (std::string why = make_set_slots(c, g, seed, first); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return nullptr;
  }
  // Bad input is refused before anything is allocated, the reference never sees it.
  if (std::string bad = check_set(c, g, first); !bad.empty()) {
    row.status = Status::rejected;
    row.reason = bad;
    return nullptr;
  }
  return std::make_unique<MlaCacheSets>(c, g, std::move(first), seed, options, override_launch);
}

}  // namespace kvbench::stages
