// The launch plans on the CPU: the sm_90 occupancy rule, the reachable key sets (checked both
// ways on a grid of shapes), and the validation sweep taking every path the planners can return.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/sweep.hpp"
#include "offsets64_cases.hpp"
#include "ops/cache_write/launch.hpp"
#include "ops/concat_mha_k/launch.hpp"
#include "ops/launch.hpp"
#include "ops/mla_cache/launch.hpp"

namespace kvbench {
namespace {

using kernels::DeviceProps;

// Register caps the kernels are compiled for, read back through the rule: 5 blocks of 256
// threads allow 48 registers, 6 allow 40, 8 allow 32 (kernels/cache_write/optimized.cu).
TEST(Occupancy, Sm90RegisterRule) {
  EXPECT_EQ(kernels::sm90_resident_blocks(48, 256), 5);
  EXPECT_EQ(kernels::sm90_resident_blocks(49, 256), 4);
  EXPECT_EQ(kernels::sm90_resident_blocks(40, 256), 6);
  EXPECT_EQ(kernels::sm90_resident_blocks(32, 256), 8);
  EXPECT_EQ(kernels::sm90_resident_blocks(24, 128), 16);  // warp limit: 64 / 4
  EXPECT_EQ(kernels::sm90_resident_blocks(16, 32), 32);   // block limit
  EXPECT_EQ(kernels::sm90_resident_blocks(30, 96), 21);   // 30 regs: 1024 per warp, 64 warps / 3
  EXPECT_EQ(kernels::sm90_resident_blocks(128, 512), 1);
}

TEST(Occupancy, ProfilesAreKnownAndOthersNamed) {
  EXPECT_EQ(kernels::device_profile("h200").l2_bytes, 62914560);
  EXPECT_EQ(kernels::device_profile("h100").l2_bytes, 52428800);
  EXPECT_EQ(kernels::device_profile("h100").sm_count, 132);
  try {
    kernels::device_profile("a100");
    FAIL() << "a100 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown device profile 'a100' (expected one of h200, h100)");
  }
}

std::vector<DeviceProps> profiles() {
  std::vector<DeviceProps> v;
  for (const std::string& n : kernels::device_profile_names())
    v.push_back(kernels::device_profile(n));
  return v;
}

// Synthetic pointers: only their alignment matters to a plan.
template <class T = void>
T* at(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

// Every plan key over a grid of shapes, dtype pairs, alignments and strides wider than the
// validation sweep can afford (int64 offsets come from strides past 2^31 elements, which cost
// no memory here).
std::set<std::string> concat_grid_keys(const DeviceProps& d) {
  std::set<std::string> keys;
  const DType ins[] = {DType::f32, DType::f16, DType::bf16};
  const DType outs[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2};
  for (const Variant v : {Variant::seed_port, Variant::optimized})
    for (const DType in : ins)
      for (const DType out : outs)
        for (const std::int64_t T : {1, 37, 1024, 4096, 16384, 131072})
          for (const std::int64_t H : {1, 12, 128})
            for (const auto& [N, R] :
                 std::vector<std::pair<int, int>>{{128, 64}, {100, 28}, {127, 64}, {2048, 64}})
              for (const bool big : {false, true})
                for (const std::uintptr_t misalign : {0, 8}) {
                  const std::int64_t s1 = N, s0 = big ? std::int64_t{1} << 28 : H * N;
                  const kernels::ConcatArgs a{at(0x100000000 + misalign),
                                              at(0x200000000),
                                              at(0x300000000),
                                              T,
                                              H,
                                              N,
                                              R,
                                              s0,
                                              s1,
                                              R,
                                              H * (N + R),
                                              N + R,
                                              in,
                                              out};
                  const kernels::ConcatPlan p = kernels::plan_concat(a, v, d);
                  if (p.error.empty()) keys.insert(plan_key(p, in));
                }
  return keys;
}

std::set<std::string> cache_grid_keys(const DeviceProps& d) {
  std::set<std::string> keys;
  const DType ins[] = {DType::f32, DType::f16, DType::bf16};
  const DType outs[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2};
  for (const Variant v : {Variant::seed_port, Variant::optimized, Variant::slot_order})
    for (const DType in : ins)
      for (const DType out : outs)
        for (const ScaleMode scale : {ScaleMode::none, ScaleMode::per_tensor})
          for (const bool swa : {false, true})
            for (const std::int64_t T : {1, 64, 1000, 3000, 6000, 8192, 40000, 131072})
              for (const std::int64_t H : {1, 8})
                for (const std::int64_t D : {128, 80, 36, 7})
                  for (const bool hnd : {false, true})
                    for (const bool big : {false, true}) {
                      Case c = testing_support::cache_case(T, H, D);
                      CacheWriteParams& p = testing_support::cache_params(c);
                      c.variant = v;
                      c.in_dtype = in;
                      c.out_dtype = out;
                      p.scale = scale;
                      p.swa = swa;
                      p.layout = hnd ? Layout::hnd : Layout::nhd;
                      const CacheGeometry g = cache_geometry(c);
                      kernels::CacheWriteArgs a = cache_write_args(
                          c, g,
                          {at(0x100000000), at(0x200000000), at(0x300000000),
                           at<std::int64_t>(0x400000000),
                           swa ? at<std::int64_t>(0x500000008) : nullptr, at<float>(0x600000000),
                           at<float>(0x700000000), at<std::int32_t>(0x800000000)});
                      if (big) a.key_s0 = a.value_s0 = std::int64_t{1} << 28;
                      const kernels::CacheWritePlan plan = kernels::plan_cache_write(a, v, d);
                      if (plan.error.empty()) keys.insert(plan_key(plan, in));
                    }
  // per_token_head (SPEC.md §7): its own path, 16-bit inputs into e4m3 only.
  for (const Variant v : {Variant::seed_port, Variant::optimized, Variant::slot_order})
    for (const DType in : ins)
      for (const DType out : outs)
        for (const std::int64_t T : {1, 1000})
          for (const std::int64_t D : {4, 36, 80, 128, 256, 512, 576, 1040, 7})
            for (const bool hnd : {false, true}) {
              Case c = testing_support::cache_case(T, 8, D);
              c.variant = v;
              c.in_dtype = in;
              c.out_dtype = out;
              testing_support::cache_params(c).scale = ScaleMode::per_token_head;
              testing_support::cache_params(c).layout = hnd ? Layout::hnd : Layout::nhd;
              const CacheGeometry g = cache_geometry(c);
              const kernels::CacheWriteArgs a = cache_write_args(
                  c, g,
                  {at(0x100000000), at(0x200000000), at(0x300000000), at<std::int64_t>(0x400000000),
                   nullptr, nullptr, nullptr, at<std::int32_t>(0x800000000)});
              const kernels::CacheWritePlan plan = kernels::plan_cache_write(a, v, d);
              if (plan.error.empty()) keys.insert(plan_key(plan, in));
            }
  return keys;
}

std::set<std::string> mla_cache_grid_keys(const DeviceProps& d) {
  std::set<std::string> keys;
  for (const DType in : {DType::f16, DType::bf16})
    for (const DType out : {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2})
      for (const MlaScale scale :
           {MlaScale::none, MlaScale::per_tensor, MlaScale::tile_raw, MlaScale::tile_pow2})
        for (const std::int64_t T : {1, 37, 4096, 32768})
          for (const auto& [L, R] :
               std::vector<std::pair<int, int>>{{512, 64}, {100, 20}, {4096, 64}})
            for (const StrideMode strides : {StrideMode::contiguous, StrideMode::padded})
              for (const std::uintptr_t misalign : {0, 8}) {
                Case c = testing_support::mla_case(T, L, R);
                c.in_dtype = in;
                c.out_dtype = out;
                c.strides = strides;
                testing_support::mla_params(c).scale = scale;
                testing_support::mla_params(c).layout =
                    scale == MlaScale::tile_raw || scale == MlaScale::tile_pow2
                        ? MlaLayout::fp8_ds_mla
                        : MlaLayout::nhd;
                if (!mla_refusal(c).empty()) continue;
                const kernels::MlaCacheArgs a = mla_cache_args(
                    c, mla_cache_geometry(c),
                    {at(0x100000000 + misalign), at(0x200000000), at<std::int64_t>(0x300000000),
                     scale == MlaScale::per_tensor ? at<float>(0x400000000) : nullptr,
                     at(0x500000000 + misalign)});
                const kernels::MlaCachePlan plan = kernels::plan_mla_cache(a, c.variant, d);
                if (plan.error.empty()) keys.insert(plan_key(plan, in));
              }
  return keys;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& k : s) out += "\n  " + k;
  return out;
}

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> d;
  for (const std::string& k : a)
    if (!b.count(k)) d.insert(k);
  return d;
}

// The declared sets are honest both ways: the grid returns no key outside them, and every key
// in them is returned somewhere on the grid.
TEST(PlanKeys, ConcatReachableSetIsExact) {
  std::set<std::string> found;
  for (const DeviceProps& d : profiles())
    for (const std::string& k : concat_grid_keys(d)) found.insert(k);
  const std::set<std::string> declared = kernels::reachable_concat_keys();
  EXPECT_TRUE(minus(found, declared).empty())
      << "returned, not declared:" << join(minus(found, declared));
  EXPECT_TRUE(minus(declared, found).empty())
      << "declared, never returned:" << join(minus(declared, found));
}

TEST(PlanKeys, CacheWriteReachableSetIsExact) {
  std::set<std::string> found;
  for (const DeviceProps& d : profiles())
    for (const std::string& k : cache_grid_keys(d)) found.insert(k);
  const std::set<std::string> declared = kernels::reachable_cache_write_keys();
  EXPECT_TRUE(minus(found, declared).empty())
      << "returned, not declared:" << join(minus(found, declared));
  EXPECT_TRUE(minus(declared, found).empty())
      << "declared, never returned:" << join(minus(declared, found));
}

TEST(PlanKeys, MlaCacheReachableSetIsExact) {
  std::set<std::string> found;
  for (const DeviceProps& d : profiles())
    for (const std::string& k : mla_cache_grid_keys(d)) found.insert(k);
  const std::set<std::string> declared = kernels::reachable_mla_cache_keys();
  EXPECT_TRUE(minus(found, declared).empty())
      << "returned, not declared:" << join(minus(found, declared));
  EXPECT_TRUE(minus(declared, found).empty())
      << "declared, never returned:" << join(minus(declared, found));
}

// A key with its offset type removed: int64 offsets need tensors past 2^31 elements, too large
// for the validation sweep; the 64-bit offset GPU tests take them (next test).
std::string without_index(std::string k) {
  for (const std::string i : {" int32", " int64"})
    if (const auto p = k.find(i); p != std::string::npos) k.erase(p, i.size());
  return k;
}

std::set<std::string> without_index(const std::set<std::string>& keys) {
  std::set<std::string> out;
  for (const std::string& k : keys) out.insert(without_index(k));
  return out;
}

TEST(PlanCoverage, Offsets64TestsTakeInt64Offsets) {
  for (const DeviceProps& d : profiles()) {
    for (const Case& c : offsets64_cases()) {
      const std::string key = case_plan(c, d).key;
      EXPECT_NE(key.find("int64"), std::string::npos)
          << d.name << ": " << describe(c) << ": " << key;
    }
  }
}

// Every path each planner can return (offset type aside, above) is taken by some case of
// configs/validation.yaml, under every shipped device profile.
TEST(PlanCoverage, ValidationSweepTakesEveryPath) {
  const Config config = load_config(std::string(KVBENCH_SOURCE_DIR) + "/configs/validation.yaml");
  for (const DeviceProps& d : profiles()) {
    std::map<Kernel, std::set<std::string>> taken;  // per operation
    for (const Case& c : config.cases) {
      const CasePlan p = case_plan(c, d);
      ASSERT_FALSE(p.key.empty()) << describe(c) << ": " << p.text;
      taken[c.kernel].insert(without_index(p.key));
    }
    for (const Operation* op : operations()) {
      const auto missing =
          minus(without_index(backend(op->kernel()).plan_keys()), taken[op->kernel()]);
      EXPECT_TRUE(missing.empty()) << d.name << ": " << to_string(op->kernel())
                                   << " paths no case of validation.yaml takes:" << join(missing);
    }
  }
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

// `list --plan` and `run` refuse a concat_and_cache_mla case in the same words: a layout and a
// scale that do not go together were planned although `run` called them not_supported.
TEST(Plan, MlaCasesRunRefusesAreNotPlanned) {
  const Config config = parse_config(R"(
sweeps:
  - kernel: concat_and_cache_mla
    axes: {layout: fp8_ds_mla, scale: none, out_dtype: fp8_e4m3, num_tokens: 1}
  - kernel: concat_and_cache_mla
    name: b
    axes: {layout: nhd, scale: tile_raw, num_tokens: 1}
  - kernel: concat_and_cache_mla
    name: c
    axes: {layout: fp8_ds_mla, scale: tile_pow2, out_dtype: fp8_e4m3, num_tokens: 1}
)",
                                     "t.yaml");
  const kernels::DeviceProps h100 = kernels::device_profile("h100");
  ASSERT_EQ(config.cases.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    const CasePlan p = case_plan(config.cases[i], h100);
    EXPECT_EQ(p.text, "not supported: " + mla_unsupported(config.cases[i])) << i;
    EXPECT_FALSE(mla_unsupported(config.cases[i]).empty()) << i;
    EXPECT_EQ(p.key, "") << i;
  }
  EXPECT_EQ(mla_unsupported(config.cases[2]), "");
  EXPECT_EQ(case_plan(config.cases[2], h100).text.rfind("not supported", 0), std::string::npos);
}

}  // namespace
}  // namespace kvbench
