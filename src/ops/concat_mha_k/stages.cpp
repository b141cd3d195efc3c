// concat_and_cast_mha_k's stages (case_sets.hpp): admit, one set's buffers, build and check.
#include "ops/concat_mha_k/stages.hpp"

#include <cstring>
#include <sstream>

#include "core/inputs.hpp"
#include "core/rotation.hpp"
#include "kernels/concat_mha_k/concat_mha_k.hpp"
#include "ops/concat_mha_k/launch.hpp"
#include "ops/stages.hpp"
#include "reference/reference.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench::stages {
namespace {

struct ConcatHost {
  Bytes nope, rope, expected;
};

class ConcatSets final : public OpSets<kernels::ConcatArgs, kernels::ConcatPlan, ConcatHost> {
 public:
  ConcatSets(const Case& c, const ConcatGeometry& g, std::uint64_t seed,
             const ValidationOptions& options, const LaunchOverride& override_launch)
      : OpSets(c, seed, options, override_launch), g_(g) {
    guard_bytes_ = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
    const std::size_t in = size_of(c.in_dtype);
    nope_at_ = layout_.add(static_cast<std::size_t>(g.nope_elems) * in);
    rope_at_ = layout_.add(static_cast<std::size_t>(g.rope_elems) * in);
    layout_.end_inputs();
    k_bytes_ = static_cast<std::size_t>(g.k_elems + 2 * g.guard_elems) * size_of(c.out_dtype);
    k_at_ = layout_.add(k_bytes_);
  }

  std::int64_t set_bytes() const override { return concat_bytes(c_); }
  std::size_t set_host_bytes() const override { return layout_.bytes(); }  // inputs + expected k

  bool build(int set, int sets, unsigned char* base, cudaStream_t stream, Row& row) override {
    const ConcatHost& host = host_of(set);
    upload(base + nope_at_, host.nope.data(), host.nope.size(), stream);
    upload(base + rope_at_, host.rope.data(), host.rope.size(), stream);
    KVB_CUDA_CHECK(cudaMemsetAsync(base + k_at_, kCanary, k_bytes_, stream));
    add_set(concat_args(c_, g_, {base + nope_at_, base + rope_at_, base + k_at_}));
    return check(
        set, sets, host, base + k_at_, stream,
        [this](std::int64_t i) { return locate_concat(c_, g_, i); }, row);
  }

 private:
  kernels::ConcatPlan plan(const kernels::ConcatArgs& a) const override {
    return kernels::plan_concat(a, c_.variant, kernels::current_device_props());
  }
  cudaError_t launch_plan(const kernels::ConcatArgs& a, const kernels::ConcatPlan& p,
                          cudaStream_t s) const override {
    return kernels::launch_concat_mha_k(a, p, s);
  }

  ConcatHost make_set(int set) const override {
    const std::uint64_t seed = set_seed(seed_, set);
    const Case& c = c_;
    ConcatHost h{host_bytes(g_.nope_elems, c.in_dtype), host_bytes(g_.rope_elems, c.in_dtype),
                 host_bytes(g_.k_elems + 2 * g_.guard_elems, c.out_dtype)};
    fill_random(c.in_dtype, h.nope.data(), g_.nope_elems, seed);
    fill_random(c.in_dtype, h.rope.data(), g_.rope_elems, seed + 1);
    // [guard | k | guard], all canary; the reference writes k only.
    std::memset(h.expected.data(), kCanary, h.expected.size());
    const ConcatParams& p = params_of<ConcatParams>(c);
    ref::concat_and_cast_mha_k({c.in_dtype, c.out_dtype, c.num_tokens, c.num_heads, p.nope_dim,
                                p.rope_dim, h.nope.data(), h.rope.data(),
                                h.expected.data() + guard_bytes_, g_.nope_s0, g_.nope_s1,
                                g_.rope_s0, g_.k_s0, g_.k_s1});
    return h;
  }

  void save_set(int set, const ConcatHost& host, const Bytes& actual) const override {
    std::ostringstream geo;
    geo << "k_nope [T, H, NOPE] strides (" << g_.nope_s0 << ", " << g_.nope_s1
        << ", 1); k_rope [T, ROPE] stride (" << g_.rope_s0 << ", 1); k [T, H, NOPE+ROPE] strides ("
        << g_.k_s0 << ", " << g_.k_s1 << ", 1) starting at element " << g_.guard_elems
        << " of k_expected / k_actual (guards of " << g_.guard_elems
        << " canary elements before and after)";
    save_tensors(
        options_, c_, set, geo.str(),
        {tensor("k_nope", c_.in_dtype, host.nope), tensor("k_rope", c_.in_dtype, host.rope),
         tensor("k_expected", c_.out_dtype, host.expected),
         tensor("k_actual", c_.out_dtype, actual)});
  }

  ConcatGeometry g_;
  std::size_t guard_bytes_ = 0, nope_at_ = 0, rope_at_ = 0, k_at_ = 0, k_bytes_ = 0;
};

std::string unsupported_pair(const Case& c) {
  return "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
         std::string(to_string(c.out_dtype)) + " not supported (inputs: f32, f16, bf16)";
}

}  // namespace

std::unique_ptr<CaseSets> concat_sets(const Case& c, std::uint64_t seed,
                                      const ValidationOptions& options,
                                      const LaunchOverride& override_launch, Row& row) {
  if (!kernels::concat_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = unsupported_pair(c);
    return nullptr;
  }
  if (!admit_variant(c, row)) return nullptr;
  ConcatGeometry g = concat_geometry(c);
  if (std::string why = inject_concat(c, g); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return nullptr;
  }
  if (std::string bad = check_concat_strides(c, g); !bad.empty()) {
    row.status = Status::rejected;
    row.reason = bad;
    return nullptr;
  }
  row.written_tokens = c.num_tokens;
  row.bytes = concat_bytes(c);
  return std::make_unique<ConcatSets>(c, g, seed, options, override_launch);
}

}  // namespace kvbench::stages
