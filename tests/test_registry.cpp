// The registry covers every operation: each Kernel value has one registered operation, and
// every lookup by operation (core/operation.hpp, ops/launch.hpp, and with CUDA ops/stages.cpp)
// answers for each of them. A new Kernel value that the registry or a switch misses fails here
// (or, for a switch, already at build time: -Werror=switch).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/csv.hpp"
#include "core/footprint.hpp"
#include "core/operation.hpp"
#include "kernels/common/device_props.hpp"
#include "ops/launch.hpp"

#ifdef KVBENCH_TEST_STAGES
#include "runtime/case_sets.hpp"
#endif

namespace kvbench {
namespace {

TEST(Registry, OneOperationPerKernelInEnumOrder) {
  const auto& ops = operations();
  ASSERT_EQ(ops.size(), all_values<Kernel>().size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Kernel k = all_values<Kernel>()[i];
    EXPECT_EQ(ops[i]->kernel(), k) << i;
    EXPECT_EQ(&operation(k), ops[i]) << to_string(k);
  }
}

TEST(Registry, EveryOperationMakesItsOwnCases) {
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    const Case c = op->default_case();
    EXPECT_EQ(c.kernel, op->kernel());
    ASSERT_NE(c.params.get(), nullptr);
    EXPECT_EQ(c.params.get()->kernel(), op->kernel());
    const Case copy = c;  // parameters copy with the case
    EXPECT_NE(copy.params.get(), c.params.get());
    EXPECT_EQ(describe(copy), describe(c));
    EXPECT_EQ(describe(c).rfind(std::string(to_string(op->kernel())) + " ", 0), 0u) << describe(c);
    EXPECT_NO_THROW(check_sizes(c));
    EXPECT_GT(case_footprint(c).host(), 0u);
    EXPECT_GT(case_footprint(c).device(), 0u);
    EXPECT_EQ(case_fields(c).size(), case_columns().size());
  }
}

// Another operation's parameters are refused, not misread.
TEST(Registry, ParamsOfAnotherOperationThrow) {
  for (const Operation* op : operations())
    for (const Operation* other : operations()) {
      if (op == other) continue;
      Case c = op->default_case();
      c.kernel = other->kernel();
      EXPECT_THROW(describe(c), std::logic_error) << to_string(op->kernel());
    }
}

TEST(Registry, AxesAreNamedOnceAndSettable) {
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    std::set<std::string> names;
    for (const Axis& a : op->axes()) {
      EXPECT_TRUE(names.insert(a.name).second) << "axis named twice: " << a.name;
      Case c = op->default_case();
      switch (a.kind) {
        case Axis::Kind::integer:
          ASSERT_TRUE(a.set_int) << a.name;
          a.set_int(c, 3);
          break;
        case Axis::Kind::boolean:
          ASSERT_TRUE(a.set_bool) << a.name;
          a.set_bool(c, true);
          break;
        case Axis::Kind::enumeration:
          ASSERT_TRUE(a.set_enum) << a.name;
          EXPECT_FALSE(a.enum_names.empty()) << a.name;
          EXPECT_THROW(a.set_enum(c, "no such value"), std::invalid_argument) << a.name;
          break;
      }
    }
    for (const char* common : {"in_dtype", "out_dtype", "num_tokens", "variant", "inject"})
      EXPECT_EQ(names.count(common), 1u) << common;
  }
}

// The CSV's operation columns carry each operation's parameters there and back.
TEST(Registry, ColumnsRoundTrip) {
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    Case c = op->default_case();
    for (const Axis& a : op->axes())
      if (a.kind == Axis::Kind::integer) a.set_int(c, 5);
    Case back = op->default_case();
    op->set_columns(back, op->columns(c));
    back.num_tokens = c.num_tokens;
    back.num_heads = c.num_heads;
    EXPECT_EQ(describe(back), describe(c));
  }
}

// Each operation lists its variants once, each with a why; a variant no operation lists is
// refused with the operations that have it named.
TEST(Registry, VariantsListedOnceWithAWhy) {
  std::set<Variant> anywhere;
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    std::set<Variant> listed;
    EXPECT_FALSE(op->variants().empty());
    for (const VariantInfo& v : op->variants()) {
      EXPECT_TRUE(listed.insert(v.variant).second) << to_string(v.variant);
      EXPECT_FALSE(v.why.empty()) << to_string(v.variant);
      anywhere.insert(v.variant);
    }
    for (Variant v : all_values<Variant>()) {
      Case c = op->default_case();
      c.variant = v;
      EXPECT_EQ(variant_refusal(c).empty(), listed.count(v) == 1) << to_string(v);
    }
  }
  EXPECT_EQ(anywhere.size(), all_values<Variant>().size());  // every variant belongs somewhere
  Case c = operation(Kernel::concat_mha_k).default_case();
  c.variant = Variant::slot_order;
  EXPECT_EQ(variant_refusal(c),
            "variant slot_order is a reshape_and_cache_flash variant (it orders slots)");
}

TEST(Registry, OneBackendPerKernelInEnumOrder) {
  const auto& all = backends();
  ASSERT_EQ(all.size(), all_values<Kernel>().size());
  std::set<std::int32_t> abi_ops;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Kernel k = all_values<Kernel>()[i];
    EXPECT_EQ(all[i]->kernel(), k) << i;
    EXPECT_EQ(&backend(k), all[i]) << to_string(k);
    if (all[i]->abi_op() != 0) EXPECT_TRUE(abi_ops.insert(all[i]->abi_op()).second) << to_string(k);
  }
}

// Each backend's plugin ABI: an operation in it gives ABI arguments of its own op value; one
// outside it refuses them in words naming it.
TEST(Registry, EveryBackendAnswersForItsAbi) {
  for (const Operation* op : operations()) {
    const Backend& b = backend(op->kernel());
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    AbiArgs a;
    if (b.abi_op() == 0) {
      try {
        b.plan_abi_args(op->default_case(), a);
        ADD_FAILURE() << "ABI arguments for an operation outside the ABI";
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()),
                  "the plugin ABI has no operation " + std::string(to_string(op->kernel())));
      }
      continue;
    }
    b.plan_abi_args(op->default_case(), a);
    EXPECT_EQ(a.args.op, b.abi_op());
    EXPECT_EQ(a.args.struct_size, sizeof(kvb_args));
  }
}

// The launch lookup (ops/launch.cpp) plans every operation's default case.
TEST(Registry, EveryOperationPlans) {
  const kernels::DeviceProps d = kernels::device_profile("h200");
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    const CasePlan p = case_plan(op->default_case(), d);
    EXPECT_FALSE(p.text.empty());
    EXPECT_FALSE(p.key.empty()) << p.text;
    EXPECT_FALSE(backend(op->kernel()).plan_keys().empty());
    EXPECT_EQ(backend(op->kernel()).plan_keys().count(p.key), 1u) << p.key;
  }
}

#ifdef KVBENCH_TEST_STAGES
// The stages lookup (ops/stages.cpp) reaches every operation's admission: an input dtype no
// kernel takes is refused there, before any device memory (so this runs without a GPU).
TEST(Registry, EveryOperationHasStages) {
  for (const Operation* op : operations()) {
    SCOPED_TRACE(std::string(to_string(op->kernel())));
    Case c = op->default_case();
    c.in_dtype = DType::fp8_e4m3;
    Row row;
    const ValidationOptions options;
    const LaunchOverride no_override;
    EXPECT_EQ(stages::make_case_sets(c, 1, options, no_override, row), nullptr);
    EXPECT_EQ(row.status, Status::not_supported);
    EXPECT_NE(row.reason.find("dtype pair fp8_e4m3->bf16 not supported"), std::string::npos)
        << row.reason;
  }
}
#endif

}  // namespace
}  // namespace kvbench
