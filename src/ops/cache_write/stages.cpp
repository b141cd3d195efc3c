// reshape_and_cache_flash's stages (case_sets.hpp): admit (slots, scales, injected input and the
// SPEC.md §2 checks), one set's buffers, build and check, and the slot table after timing.
#include "ops/cache_write/stages.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/inputs.hpp"
#include "core/rotation.hpp"
#include "core/validate.hpp"
#include "kernels/cache_write/cache_write.hpp"
#include "kernels/cache_write/slot_check.hpp"
#include "ops/cache_write/launch.hpp"
#include "ops/stages.hpp"
#include "reference/quantize.hpp"
#include "reference/reference.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench::stages {
namespace {

std::vector<float> make_scales(const Case& c, std::uint64_t seed) {
  const ScaleMode scale = params_of<CacheWriteParams>(c).scale;
  // per_token_head takes no caller scale: the kernel computes each row's.
  if (scale == ScaleMode::none || scale == ScaleMode::per_token_head) return {};
  const std::int64_t n = scale == ScaleMode::per_head ? c.num_heads : 1;
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t state = seed;
  for (auto& x : v)  // positive, finite, not powers of two: the division must round
    x = 0.25f + static_cast<float>(splitmix64(state) % 4096) / 1024.0f + 1.0f / 3.0f;
  return v;
}

// A physical slot that no token writes and that is not the skip slot: what the SWA table's
// guard entry (index -1) names, so a kernel reading swa_slot_mapping[-1] writes a slot whose
// canary the comparison checks. The geometry always leaves such slots (slack after T tokens).
std::int64_t untargeted_slot(const std::vector<std::int64_t>& owners, const CacheGeometry& g) {
  for (std::int64_t s = 0; s < g.num_slots; ++s)
    if (owners[static_cast<std::size_t>(s)] < 0 && s != g.skip_slot) return s;
  return 0;
}

// The host side of one set: slots and scales (small), inputs and the reference (large).
struct Slots {
  SlotData slots;
  std::vector<float> k_scale, v_scale;
};
struct CacheHost {
  Bytes key, value, expected;
  Slots slots;  // sets after the first (set 0's are the case's, made at admission)
};

// Slots and scales of set `set`, with the case's injected bad input. Returns the reason when
// the injection does not apply to the case.
std::string make_set_slots(const Case& c, CacheGeometry& g, std::uint64_t seed, Slots& out) {
  out.slots = make_slots(c, g, seed + 2);
  out.k_scale = make_scales(c, seed + 3);
  out.v_scale = make_scales(c, seed + 4);
  return inject_cache(c, g, out.slots, out.k_scale);
}

// SPEC.md §2's bad-input checks; "" when the set is valid.
std::string check_set(const Case& c, const CacheGeometry& g, const Slots& s) {
  for (std::string bad :
       {check_slots(s.slots, g), check_cache_strides(c, g), check_scales(s.k_scale, s.v_scale)})
    if (!bad.empty()) return bad;
  return "";
}

class CacheWriteSets final
    : public OpSets<kernels::CacheWriteArgs, kernels::CacheWritePlan, CacheHost> {
 public:
  CacheWriteSets(const Case& c, const CacheGeometry& g, Slots first, std::uint64_t seed,
                 const ValidationOptions& options, const LaunchOverride& override_launch)
      : OpSets(c, seed, options, override_launch),
        p_(params_of<CacheWriteParams>(c)),
        g_(g),
        first_slots_(std::move(first)) {
    const std::size_t osize = size_of(c.out_dtype);
    guard_bytes_ = static_cast<std::size_t>(g.guard_elems) * osize;
    v_bytes_ = static_cast<std::size_t>(g.value_cache_offset) * osize;
    const std::size_t input = static_cast<std::size_t>(g.key_elems) * size_of(c.in_dtype);
    key_at_ = layout_.add(input);
    value_at_ = layout_.add(input);
    slots_at_ = layout_.add(first_slots_.slots.slot_mapping.size() * sizeof(std::int64_t));
    swa_at_ =
        layout_.add(p_.swa ? (first_slots_.slots.swa_table.size() + 1) * sizeof(std::int64_t) : 0);
    ks_at_ = layout_.add(first_slots_.k_scale.size() * sizeof(float));
    vs_at_ = layout_.add(first_slots_.v_scale.size() * sizeof(float));
    layout_.end_inputs();
    cache_bytes_ = static_cast<std::size_t>(g.cache_elems + 2 * g.guard_elems) * osize;
    cache_at_ = layout_.add(cache_bytes_);
    table_bytes_ = static_cast<std::size_t>(g.num_slots) * sizeof(std::int32_t);
    table_at_ = layout_.add(table_bytes_);
    first_bad_at_ = layout_.add(sizeof(unsigned long long));
  }

  std::int64_t set_bytes() const override {
    return cache_write_bytes(c_, first_slots_.slots.swa_lookups, first_slots_.slots.written_tokens);
  }

  std::size_t set_host_bytes() const override {  // key, value and the expected caches
    return static_cast<std::size_t>(2 * g_.key_elems) * size_of(c_.in_dtype) + cache_bytes_;
  }

  bool build(int set, int sets, unsigned char* base, cudaStream_t stream, Row& row) override {
    // A later set's slots come with its host data; set 0's host data waits for the checks, as
    // the reference must never see a bad slot.
    const CacheHost* later = set > 0 ? &host_of(set) : nullptr;
    if (later) {
      if (std::string bad = check_set(c_, g_, later->slots); !bad.empty()) {
        row.status = Status::rejected;
        row.reason = set_prefix(set, sets) + bad;
        return false;
      }
    }
    const Slots& sl = later ? later->slots : first_slots_;
    const SlotData& slots = sl.slots;
    const std::vector<std::int64_t> owners = slot_owners(slots, g_);
    // The SWA table travels with one guard entry before it (see untargeted_slot).
    std::vector<std::int64_t> swa_guarded;
    if (p_.swa) {
      swa_guarded.push_back(untargeted_slot(owners, g_));
      swa_guarded.insert(swa_guarded.end(), slots.swa_table.begin(), slots.swa_table.end());
    }
    upload(base + slots_at_, slots.slot_mapping.data(), slots.slot_mapping.size() * 8, stream);
    upload(base + swa_at_, swa_guarded.data(), swa_guarded.size() * 8, stream);
    upload(base + ks_at_, sl.k_scale.data(), sl.k_scale.size() * sizeof(float), stream);
    upload(base + vs_at_, sl.v_scale.data(), sl.v_scale.size() * sizeof(float), stream);
    add_set(args_for(base));
    if (options_.check_bounds) {
      if (!bounds_ok(set, sets, base, slots, stream, row)) return false;
      if (std::string bad = check_set(c_, g_, sl); !bad.empty()) {
        row.status = Status::rejected;
        row.reason = set_prefix(set, sets) + bad;
        return false;
      }
    }
    if (set == 0) {
      row.written_tokens = slots.written_tokens;
      row.bytes = set_bytes();
    }
    const CacheHost& host = later ? *later : host_of(0);

    upload(base + key_at_, host.key.data(), host.key.size(), stream);
    upload(base + value_at_, host.value.data(), host.value.size(), stream);
    KVB_CUDA_CHECK(cudaMemsetAsync(base + cache_at_, kCanary, cache_bytes_, stream));
    // slot_order's inverse slot table: all -1 before each launch, and each launch must leave it so.
    KVB_CUDA_CHECK(cudaMemsetAsync(base + table_at_, 0xFF, table_bytes_, stream));
    const Locate locate = [&](std::int64_t i) {
      const CacheLocation l = locate_cache(c_, g_, i);
      std::string where = to_string(l);
      if (l.where == CacheLocation::Where::element) {
        const std::int64_t owner = owners[static_cast<std::size_t>(l.slot)];
        where += owner >= 0 ? " of token " + std::to_string(owner) : ", which no token writes";
      }
      return where;
    };
    return check(set, sets, host, base + cache_at_, stream, locate, row);
  }

  // Timing relaunches with the same tables: a launch that left an entry set would have timed
  // (and a later validation would write) the wrong slots.
  void recheck(int sets, cudaStream_t stream, Row& row) override {
    std::vector<std::int32_t> table(static_cast<std::size_t>(g_.num_slots));
    for (int set = 0; set < sets && row.status == Status::passed; ++set) {
      KVB_CUDA_CHECK(cudaMemcpyAsync(table.data(),
                                     set_args()[static_cast<std::size_t>(set)].slot_table,
                                     table_bytes_, cudaMemcpyDeviceToHost, stream));
      KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto bad =
          std::find_if(table.begin(), table.end(), [](std::int32_t v) { return v != -1; });
      if (bad == table.end()) continue;
      row.status = Status::incorrect;
      row.reason = set_prefix(set, sets) + "slot table entry " +
                   std::to_string(bad - table.begin()) + " = " + std::to_string(*bad) +
                   " after the launches (each launch must leave it -1)";
    }
  }

 private:
  kernels::CacheWritePlan plan(const kernels::CacheWriteArgs& a) const override {
    return kernels::plan_cache_write(a, c_.variant, kernels::current_device_props());
  }
  cudaError_t launch_plan(const kernels::CacheWriteArgs& a, const kernels::CacheWritePlan& p,
                          cudaStream_t s) const override {
    return kernels::launch_cache_write(a, p, s);
  }

  // Set `set`'s host side: its slots and scales (set 0: the case's), inputs and reference. Later
  // sets carry no injected bad input: a case that has one is rejected at set 0.
  CacheHost make_set(int set) const override {
    const std::uint64_t seed = set_seed(seed_, set);
    if (set == 0) return make_host(seed, first_slots_);
    Slots slots;
    Case clean = c_;
    clean.inject = Inject::none;
    CacheGeometry g = g_;
    make_set_slots(clean, g, seed, slots);
    CacheHost h = make_host(seed, slots);
    h.slots = std::move(slots);
    return h;
  }

  CacheHost make_host(std::uint64_t seed, const Slots& sl) const {
    const Case& c = c_;
    const CacheGeometry& g = g_;
    CacheHost h{host_bytes(g.key_elems, c.in_dtype),
                host_bytes(g.key_elems, c.in_dtype),
                host_bytes(g.cache_elems + 2 * g.guard_elems, c.out_dtype),
                {}};
    fill_random(c.in_dtype, h.key.data(), g.key_elems, seed);
    fill_random(c.in_dtype, h.value.data(), g.key_elems, seed + 1);
    // [guard | K and V caches | guard], all canary; the reference writes cache elements only.
    std::memset(h.expected.data(), kCanary, h.expected.size());
    unsigned char* exp_k = h.expected.data() + guard_bytes_;
    const SlotData& slots = sl.slots;
    if (p_.scale == ScaleMode::per_token_head) {
      ref::reshape_and_cache_flash_per_token_head(
          {c.in_dtype,
           c.num_tokens,
           c.num_heads,
           p_.head_size,
           p_.block_size,
           g.num_blocks,
           h.key.data(),
           h.value.data(),
           g.key_s0,
           g.key_s1,
           g.key_s0,
           g.key_s1,
           slots.slot_mapping.data(),
           p_.swa ? slots.swa_table.data() : nullptr,
           static_cast<std::int64_t>(slots.swa_table.size()),
           g.skip_slot,
           p_.layout,
           exp_k,
           exp_k + v_bytes_,
           g.block_stride});
      return h;
    }
    ref::reshape_and_cache_flash({c.in_dtype,
                                  c.out_dtype,
                                  c.num_tokens,
                                  c.num_heads,
                                  p_.head_size,
                                  p_.block_size,
                                  g.num_blocks,
                                  h.key.data(),
                                  h.value.data(),
                                  g.key_s0,
                                  g.key_s1,
                                  g.key_s0,
                                  g.key_s1,
                                  slots.slot_mapping.data(),
                                  p_.swa ? slots.swa_table.data() : nullptr,
                                  static_cast<std::int64_t>(slots.swa_table.size()),
                                  g.skip_slot,
                                  p_.layout,
                                  exp_k,
                                  exp_k + v_bytes_,
                                  g.block_stride,
                                  p_.scale,
                                  sl.k_scale.empty() ? nullptr : sl.k_scale.data(),
                                  sl.v_scale.empty() ? nullptr : sl.v_scale.data()});
    return h;
  }

  kernels::CacheWriteArgs args_for(unsigned char* base) const {
    const bool scaled = !first_slots_.k_scale.empty();  // nullptr without a scale, as the args say
    return cache_write_args(
        c_, g_,
        {base + key_at_, base + value_at_, base + cache_at_,
         reinterpret_cast<const std::int64_t*>(base + slots_at_),
         p_.swa ? reinterpret_cast<const std::int64_t*>(base + swa_at_) + 1 : nullptr,
         scaled ? reinterpret_cast<const float*>(base + ks_at_) : nullptr,
         scaled ? reinterpret_cast<const float*>(base + vs_at_) : nullptr,
         reinterpret_cast<std::int32_t*>(base + table_at_)});
  }

  // --check-bounds: the slot range pre-pass on the device; false (rejected) at the first bad token.
  bool bounds_ok(int set, int sets, unsigned char* base, const SlotData& slots, cudaStream_t s,
                 Row& row) const {
    auto* d_first = reinterpret_cast<unsigned long long*>(base + first_bad_at_);
    const kernels::SlotCheckArgs a{
        reinterpret_cast<const std::int64_t*>(base + slots_at_),
        p_.swa ? reinterpret_cast<const std::int64_t*>(base + swa_at_) + 1 : nullptr,
        static_cast<std::int64_t>(slots.slot_mapping.size()),
        static_cast<std::int64_t>(slots.swa_table.size()),
        g_.num_slots,
        d_first};
    KVB_CUDA_CHECK(kernels::launch_slot_check(a, s));
    unsigned long long first = 0;
    KVB_CUDA_CHECK(cudaMemcpyAsync(&first, d_first, sizeof first, cudaMemcpyDeviceToHost, s));
    KVB_CUDA_CHECK(cudaStreamSynchronize(s));
    if (first == kernels::kNoBadToken) return true;
    const auto t = static_cast<std::int64_t>(first);
    const std::int64_t logical = slots.slot_mapping[static_cast<std::size_t>(t)];
    std::string what = "slot_mapping[" + std::to_string(t) + "] = " + std::to_string(logical);
    if (p_.swa && logical < static_cast<std::int64_t>(slots.swa_table.size()))
      what += ", swa_slot_mapping[" + std::to_string(logical) +
              "] = " + std::to_string(slots.swa_table[static_cast<std::size_t>(logical)]);
    row.status = Status::rejected;
    row.reason = set_prefix(set, sets) + "token " + std::to_string(t) + ": " + what +
                 " out of range (NB*BS = " + std::to_string(g_.num_slots) +
                 (p_.swa ? ", SWA table size " + std::to_string(slots.swa_table.size()) : "") +
                 "); found on the device by --check-bounds, the cache write was not launched";
    return false;
  }

  void save_set(int set, const CacheHost& host, const Bytes& actual) const override {
    const Slots& sl = set > 0 ? host.slots : first_slots_;
    const Case& c = c_;
    const CacheGeometry& g = g_;
    std::ostringstream geo;
    geo << "key/value [T, H, D] strides (" << g.key_s0 << ", " << g.key_s1
        << ", 1); caches: " << to_string(p_.layout) << ", NB " << g.num_blocks << ", block stride "
        << g.block_stride << ", slot stride " << g.slot_stride << ", head stride " << g.head_stride
        << "; key_cache starts at element " << g.guard_elems
        << " of cache_expected / cache_actual, "
        << "value_cache " << g.value_cache_offset << " elements after it (guards of "
        << g.guard_elems << " canary elements before and after); skip_slot " << g.skip_slot;
    std::vector<SavedTensor> t = {tensor("key", c.in_dtype, host.key),
                                  tensor("value", c.in_dtype, host.value),
                                  i64_tensor("slot_mapping", sl.slots.slot_mapping),
                                  tensor("cache_expected", c.out_dtype, host.expected),
                                  tensor("cache_actual", c.out_dtype, actual)};
    if (p_.swa) t.push_back(i64_tensor("swa_slot_mapping", sl.slots.swa_table));
    if (!sl.k_scale.empty()) {
      t.push_back(f32_tensor("k_scale", sl.k_scale));
      t.push_back(f32_tensor("v_scale", sl.v_scale));
    }
    save_tensors(options_, c, set, geo.str(), t);
  }

  CacheWriteParams p_;  // c_'s
  CacheGeometry g_;
  Slots first_slots_;
  std::size_t guard_bytes_ = 0, v_bytes_ = 0, key_at_ = 0, value_at_ = 0, slots_at_ = 0,
              swa_at_ = 0, ks_at_ = 0, vs_at_ = 0, cache_at_ = 0, cache_bytes_ = 0, table_at_ = 0,
              table_bytes_ = 0, first_bad_at_ = 0;
};

}  // namespace

std::unique_ptr<CaseSets> cache_write_sets(const Case& c, std::uint64_t seed,
                                           const ValidationOptions& options,
                                           const LaunchOverride& override_launch, Row& row) {
  if (!kernels::cache_write_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
                 std::string(to_string(c.out_dtype)) + " not supported (inputs: f32, f16, bf16)";
    return nullptr;
  }
  if (std::string why = token_head_refusal(c); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return nullptr;
  }
  if (!admit_variant(c, row)) return nullptr;
  CacheGeometry g = cache_geometry(c);
  Slots first;
  if (std::string why = make_set_slots(c, g, seed, first); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return nullptr;
  }
  // Without --check-bounds the host checks refuse bad input before anything is allocated; with
  // it, the device pre-pass (in build) must find a bad slot first, so the slot check waits.
  if (!options.check_bounds) {
    if (std::string bad = check_set(c, g, first); !bad.empty()) {
      row.status = Status::rejected;
      row.reason = bad;
      return nullptr;
    }
  }
  return std::make_unique<CacheWriteSets>(c, g, std::move(first), seed, options, override_launch);
}

}  // namespace kvbench::stages
