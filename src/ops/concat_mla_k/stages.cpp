// concat_and_cast_mha_k's stages (case_sets.hpp): admit, one set's buffers, build and check.
#include "ops/concat_mla_k/stages.hpp"

#include <cstring>
#include <sstream>

#include "core/inputs.hpp"
#include "core/rotation.hpp"
#include "kernels/concat_mla_k/concat_mla_k.hpp"
#include "ops/concat_mla_k/launch.hpp"
#include "reference/reference.hpp"
#include "runtime/cuda_check.hpp"

namespace kvbench::stages {
namespace {

struct ConcatHost {
  Bytes nope, rope, expected;
};

class ConcatSets final : public CaseSets {
 public:
  ConcatSets(const Case& c, const ConcatGeometry& g, std::uint64_t seed,
             const ValidationOptions& options, const LaunchOverride& override_launch)
      : c_(c), g_(g), seed_(seed), options_(options), override_(override_launch) {
    guard_bytes_ = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
    const std::size_t in = size_of(c.in_dtype);
    nope_at_ = layout_.add(static_cast<std::size_t>(g.nope_elems) * in);
    rope_at_ = layout_.add(static_cast<std::size_t>(g.rope_elems) * in);
    layout_.end_inputs();
    k_bytes_ = static_cast<std::size_t>(g.k_elems + 2 * g.guard_elems) * size_of(c.out_dtype);
    k_at_ = layout_.add(k_bytes_);
  }

  const SetLayout& layout() const override { return layout_; }
  std::int64_t set_bytes() const override { return concat_bytes(c_); }
  std::size_t set_host_bytes() const override { return layout_.bytes(); }  // inputs + expected k

  void prepare(int sets) override {
    if (sets > 1)
      last().prefetch(c_, seed_, sets, [this](int set) { return make_host(set_seed(seed_, set)); });
  }

  bool build(int set, int sets, unsigned char* base, cudaStream_t stream, Row& row) override {
    const std::uint64_t seed = set_seed(seed_, set);
    const ConcatHost& host = last().get(c_, seed_, set, [&] { return make_host(seed); });
    upload(base + nope_at_, host.nope.data(), host.nope.size(), stream);
    upload(base + rope_at_, host.rope.data(), host.rope.size(), stream);
    KVB_CUDA_CHECK(cudaMemsetAsync(base + k_at_, kCanary, k_bytes_, stream));
    args_.push_back(concat_args(c_, g_, {base + nope_at_, base + rope_at_, base + k_at_}));
    // Planned once per set: every launch of it (validation and timing) executes this plan.
    plans_.push_back(
        kernels::plan_concat(args_.back(), c_.variant, kernels::current_device_props()));
    Bytes actual =
        launch_and_compare([this, set](cudaStream_t s) { return launch(set, s); }, base + k_at_,
                           host.expected, c_.out_dtype, stream, options_,
                           [this](std::int64_t i) { return locate_concat(c_, g_, i); }, row);
    if (set == 0) {
      first_ = &host;
      // Kept for --save-tensors only: the read-back output can be as large as the case.
      if (!options_.save_tensors_dir.empty()) first_actual_ = std::move(actual);
    }
    if (row.status != Status::incorrect) return true;
    row.reason = set_prefix(set, sets) + row.reason;
    if (set > 0 && should_save(options_, row)) save_set(set, host, actual);
    return false;
  }

  cudaError_t launch(int set, cudaStream_t s) const override {
    const auto i = static_cast<std::size_t>(set);
    const LaunchOverride::Launch* replaced = override_.find(c_);
    return replaced ? (*replaced)(&args_[i], s)
                    : kernels::launch_concat_mla_k(args_[i], plans_[i], s);
  }

  void save(const ValidationOptions&, const Row&) override {
    if (first_) save_set(0, *first_, first_actual_);
  }

 private:
  static LastCase<ConcatHost>& last() {
    static LastCase<ConcatHost> cache;
    return cache;
  }

  ConcatHost make_host(std::uint64_t seed) const {
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

  void save_set(int set, const ConcatHost& host, const Bytes& actual) const {
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

  Case c_;
  ConcatGeometry g_;
  std::uint64_t seed_;
  const ValidationOptions& options_;
  const LaunchOverride& override_;
  SetLayout layout_;
  std::size_t guard_bytes_ = 0, nope_at_ = 0, rope_at_ = 0, k_at_ = 0, k_bytes_ = 0;
  std::vector<kernels::ConcatArgs> args_;  // per built set
  std::vector<kernels::ConcatPlan> plans_;
  const ConcatHost* first_ = nullptr;  // set 0's host data (held by the LastCase cache)
  Bytes first_actual_;
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
