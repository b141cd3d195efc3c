// Proof that the validator catches wrong kernels: each planted bug (tests/gpu/planted_kernels.cu)
// runs through run_case exactly as a real kernel does, and must come back `incorrect` with its
// mismatches located. The same planted kernel without its bug must pass, so a failure to pass
// cannot be blamed on the test harness. Also: --check-bounds, and bad input rejected before any
// launch. Skips visibly without a CUDA device.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/runner.hpp"
#include "tests/gpu/planted_kernels.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

using testing_support::cache_params;

using testing::Bug;

class Planted : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_ = open_device();
    } catch (const NoDeviceError& e) {
      GTEST_SKIP() << e.what();
    }
    settings_.warmup = 1;
    settings_.min_samples = 2;
    settings_.min_time_s = 0;
    settings_.timeout_s = 0.05;
    settings_.launches_per_sample = 2;
  }

  Row run(const Case& c, Bug bug, const ValidationOptions& options = {}) {
    LaunchOverride o;
    o.on<kernels::ConcatArgs>(Kernel::concat_mha_k,
                              [bug](const kernels::ConcatArgs& a, cudaStream_t s) {
                                return testing::launch_planted_concat(a, bug, s);
                              });
    o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                  [bug](const kernels::CacheWriteArgs& a, cudaStream_t s) {
                                    return testing::launch_planted_cache_write(a, bug, s);
                                  });
    o.on<kernels::MlaCacheArgs>(Kernel::mla_cache,
                                [bug](const kernels::MlaCacheArgs& a, cudaStream_t s) {
                                  return testing::launch_planted_mla_cache(a, bug, s);
                                });
    return run_case(c, settings_, device_, options, o);
  }

  // The bug is caught, and the control (same kernel, no bug) passes.
  void expect_caught(const Case& c, Bug bug, const std::string& where) {
    const Row control = run(c, Bug::none);
    ASSERT_EQ(control.status, Status::passed) << describe(c) << ": " << control.reason;
    const Row row = run(c, bug);
    EXPECT_EQ(row.status, Status::incorrect) << describe(c);
    EXPECT_GT(row.mismatches, 0);
    EXPECT_FALSE(row.timed);
    EXPECT_NE(row.reason.find(where), std::string::npos) << row.reason;
    std::printf("  caught: %s\n", row.reason.substr(0, 220).c_str());
  }

  DeviceInfo device_;
  RunSettings settings_;
};

Case concat(StrideMode strides, DType in = DType::bf16, DType out = DType::bf16) {
  Case c = testing_support::concat_case(37, 12, 128, 64, strides);
  c.in_dtype = in;
  c.out_dtype = out;
  return c;
}

Case cache(SlotPattern slots, bool swa = false, Layout layout = Layout::nhd) {
  Case c = testing_support::cache_case(100, 8, 128);
  cache_params(c).slots = slots;
  cache_params(c).swa = swa;
  cache_params(c).layout = layout;
  return c;
}

TEST_F(Planted, ConcatWrongHeadStride) {
  expect_caught(concat(StrideMode::sglang), Bug::wrong_head_stride, "(nope)");
}
TEST_F(Planted, ConcatRopeNotBroadcast) {
  expect_caught(concat(StrideMode::contiguous), Bug::rope_not_broadcast, "(rope ");
}
TEST_F(Planted, ConcatLastElementSkipped) {
  const Row row = run(concat(StrideMode::padded), Bug::last_element_skipped);
  EXPECT_EQ(row.status, Status::incorrect);
  EXPECT_EQ(row.mismatches, 1);
  EXPECT_NE(row.reason.find("k[t=36, h=11, d=191 (rope 63)]"), std::string::npos) << row.reason;
}
TEST_F(Planted, ConcatTruncationInsteadOfRounding) {
  expect_caught(concat(StrideMode::contiguous, DType::f32, DType::bf16), Bug::truncation, "k[t=");
}
TEST_F(Planted, ConcatDoubleRoundingThroughBf16) {
  expect_caught(concat(StrideMode::contiguous, DType::f32, DType::fp8_e4m3), Bug::double_rounding,
                "k[t=");
}
TEST_F(Planted, CacheSlotOffByOne) {
  expect_caught(cache(SlotPattern::random), Bug::slot_off_by_one, "_cache[block");
}
TEST_F(Planted, CachePaddingTokenWritten) {
  expect_caught(cache(SlotPattern::padded), Bug::padding_written, "guard before the caches");
}
TEST_F(Planted, CacheSwaLookupBeforeNegativeCheck) {
  expect_caught(cache(SlotPattern::padded, true), Bug::swa_before_negative,
                "which no token writes");
}
TEST_F(Planted, CacheWrongHeadStrideForHnd) {
  expect_caught(cache(SlotPattern::random, false, Layout::hnd), Bug::cache_head_stride,
                "_cache[block");
}
TEST_F(Planted, CacheSkipSlotWritten) {
  expect_caught(cache(SlotPattern::skip), Bug::skip_slot_written,
                "(slot 0), which no token writes");
}
TEST_F(Planted, CacheReciprocalInsteadOfDivision) {
  Case c = cache(SlotPattern::random);
  c.in_dtype = DType::f32;
  c.out_dtype = DType::f32;
  cache_params(c).scale = ScaleMode::per_head;
  expect_caught(c, Bug::reciprocal_scale, "_cache[block");
}

// per_token_head (SPEC.md §7): each row's scale is checked byte by byte, as its codes are.
Case token_head(SlotPattern slots, bool swa = false, Layout layout = Layout::nhd) {
  Case c = cache(slots, swa, layout);
  c.variant = Variant::optimized;
  c.out_dtype = DType::fp8_e4m3;
  cache_params(c).scale = ScaleMode::per_token_head;
  return c;
}

TEST_F(Planted, TokenHeadWrongRowScale) {
  // One ulp moves the scale's low byte; the codes move only next to a tie.
  expect_caught(token_head(SlotPattern::padded), Bug::row_scale_wrong, ", scale byte 0] (slot ");
}
TEST_F(Planted, TokenHeadScaleStoredBeforeTheRow) {
  expect_caught(token_head(SlotPattern::random, false, Layout::hnd), Bug::row_scale_first,
                ", head 0, dim ");
}
TEST_F(Planted, TokenHeadScaleSharedByTheTokensHeads) {
  expect_caught(token_head(SlotPattern::random), Bug::token_scale_shared, "_cache[block ");
}
TEST_F(Planted, TokenHeadSlotPaddingSwaAndSkipSlot) {
  expect_caught(token_head(SlotPattern::random), Bug::slot_off_by_one, "_cache[block ");
  expect_caught(token_head(SlotPattern::padded), Bug::padding_written, "guard before the caches");
  expect_caught(token_head(SlotPattern::padded, true), Bug::swa_before_negative,
                "which no token writes");
  expect_caught(token_head(SlotPattern::skip, false, Layout::hnd), Bug::skip_slot_written,
                "(slot 0), which no token writes");
}

Case mla(SlotPattern slots, DType out = DType::bf16, MlaScale scale = MlaScale::none) {
  Case c = testing_support::mla_case(100, 512, 64, 16);
  testing_support::mla_params(c).slots = slots;
  testing_support::mla_params(c).scale = scale;
  c.out_dtype = out;
  return c;
}

TEST_F(Planted, MlaCacheSlotOffByOne) {
  expect_caught(mla(SlotPattern::random), Bug::slot_off_by_one, "cache[block");
}
TEST_F(Planted, MlaCachePaddingTokenWritten) {
  expect_caught(mla(SlotPattern::padded), Bug::padding_written, "guard before the cache");
}
TEST_F(Planted, MlaCacheRopeBoundaryOffByOne) {
  expect_caught(mla(SlotPattern::random, DType::fp8_e4m3), Bug::rope_boundary, " (kv_c 511)]");
}
// No planted reciprocal for concat_and_cache_mla: its inputs are 16-bit, and for 16-bit x the
// product x * RN(1/s), rounded to fp16, bf16 or fp8, equals the rounded quotient for all but a
// handful of x per scale (none for many scales), so random inputs almost never show it. The
// division itself is checked over every 16-bit pattern by test_convert_gpu.

Case ds_mla(MlaScale rule, DType in = DType::bf16) {
  Case c = mla(SlotPattern::padded, DType::fp8_e4m3, rule);
  testing_support::mla_params(c).layout = MlaLayout::fp8_ds_mla;
  c.in_dtype = in;
  return c;
}

// The four ways a port of the 656-byte layout goes wrong, each caught at its bytes.
TEST_F(Planted, DsMlaWrongTileScale) {
  expect_caught(ds_mla(MlaScale::tile_raw), Bug::wrong_tile_scale, " (scale of tile 0, byte ");
}
TEST_F(Planted, DsMlaRopeQuantized) {
  expect_caught(ds_mla(MlaScale::tile_raw, DType::f16), Bug::rope_quantized, " (k_pe 0, byte ");
}
TEST_F(Planted, DsMlaScaleRuleSwapped) {
  expect_caught(ds_mla(MlaScale::tile_raw), Bug::scale_rule_swapped, ", tile 0)] (slot ");
  expect_caught(ds_mla(MlaScale::tile_pow2), Bug::scale_rule_swapped, ", tile 0)] (slot ");
}
TEST_F(Planted, DsMlaTileBoundaryOffByOne) {
  expect_caught(ds_mla(MlaScale::tile_pow2, DType::f16), Bug::tile_boundary, ", tile ");
}

// --save-tensors writes every tensor of the failing case as .npy, and nothing for a passing one.
TEST_F(Planted, SaveTensorsWritesTheFailingCase) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "kvbench_saved";
  fs::remove_all(dir);
  ValidationOptions o;
  o.save_tensors_dir = dir.string();
  o.case_tag = "bad";
  const Row row = run(cache(SlotPattern::padded, true), Bug::swa_before_negative, o);
  ASSERT_EQ(row.status, Status::incorrect);
  for (const char* f :
       {"key.bf16.npy", "value.bf16.npy", "slot_mapping.i64.npy", "swa_slot_mapping.i64.npy",
        "cache_expected.bf16.npy", "cache_actual.bf16.npy", "case.txt"})
    EXPECT_TRUE(fs::exists(dir / "bad" / f)) << f;
  std::ifstream in(dir / "bad" / "cache_actual.bf16.npy", std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, std::string("\x93NUMPY\x01\x00", 8));
  o.case_tag = "good";
  EXPECT_EQ(run_case(cache(SlotPattern::padded, true), settings_, device_, o).status,
            Status::passed);
  EXPECT_FALSE(fs::exists(dir / "good"));
}

// --check-bounds finds the injected token on the device and the write never runs; the planted
// kernel would otherwise write out of range.
TEST_F(Planted, CheckBoundsReportsTheFirstBadTokenFromTheDevice) {
  for (bool swa : {false, true}) {
    Case c = cache(SlotPattern::padded, swa);
    c.inject = Inject::slot_out_of_range;
    ValidationOptions checked;
    checked.check_bounds = true;
    const Row row = run(c, Bug::slot_off_by_one, checked);
    EXPECT_EQ(row.status, Status::rejected);
    EXPECT_NE(row.reason.find("found on the device by --check-bounds"), std::string::npos)
        << row.reason;
    // The host check names the same token.
    const Row host = run_case(c, settings_, device_);
    EXPECT_EQ(host.status, Status::rejected);
    auto token_of = [](const std::string& reason) {
      const std::size_t at = reason.find("token ");
      return at == std::string::npos ? reason : reason.substr(at, reason.find(':', at) - at);
    };
    EXPECT_NE(token_of(host.reason), host.reason) << host.reason;
    EXPECT_EQ(token_of(row.reason), token_of(host.reason)) << row.reason << " vs " << host.reason;
  }
  Case c = cache(SlotPattern::padded, true);
  c.inject = Inject::swa_out_of_range;
  ValidationOptions checked;
  checked.check_bounds = true;
  const Row row = run_case(c, settings_, device_, checked);
  EXPECT_EQ(row.status, Status::rejected);
  EXPECT_NE(row.reason.find("SWA table size"), std::string::npos) << row.reason;
  // Valid slots pass the pre-pass and the case runs normally.
  const Row ok = run_case(cache(SlotPattern::padded, true), settings_, device_, checked);
  EXPECT_EQ(ok.status, Status::passed) << ok.reason;
}

// Bad input is rejected before any launch: the planted kernel would fail the test if it ran.
TEST_F(Planted, BadInputIsRejectedBeforeAnyLaunch) {
  struct Bad {
    Inject inject;
    bool swa;
    ScaleMode scale;
    const char* reason;
  };
  for (const Bad& b : {Bad{Inject::slot_out_of_range, false, ScaleMode::none, ">= NB*BS"},
                       Bad{Inject::swa_out_of_range, true, ScaleMode::none, "SWA index"},
                       Bad{Inject::duplicate_slot, true, ScaleMode::none, "already written"},
                       Bad{Inject::zero_scale, false, ScaleMode::per_tensor, "is zero"},
                       Bad{Inject::negative_scale, false, ScaleMode::per_head, "negative"},
                       Bad{Inject::nan_scale, false, ScaleMode::per_tensor, "NaN"},
                       Bad{Inject::inf_scale, false, ScaleMode::per_head, "infinite"},
                       Bad{Inject::short_stride, false, ScaleMode::none, "head stride"}}) {
    Case c = cache(SlotPattern::padded, b.swa);
    cache_params(c).scale = b.scale;
    c.inject = b.inject;
    bool launched = false;
    LaunchOverride o;
    o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                  [&launched](const kernels::CacheWriteArgs&, cudaStream_t) {
                                    launched = true;
                                    return cudaSuccess;
                                  });
    const Row row = run_case(c, settings_, device_, {}, o);
    EXPECT_EQ(row.status, Status::rejected) << to_string(b.inject);
    EXPECT_NE(row.reason.find(b.reason), std::string::npos) << row.reason;
    EXPECT_FALSE(launched) << to_string(b.inject);
  }
  for (const Bad& b : {Bad{Inject::slot_out_of_range, false, ScaleMode::none, ">= NB*BS"},
                       Bad{Inject::duplicate_slot, false, ScaleMode::none, "already written"},
                       Bad{Inject::zero_scale, false, ScaleMode::per_tensor, "is zero"},
                       Bad{Inject::negative_scale, false, ScaleMode::per_tensor, "negative"},
                       Bad{Inject::nan_scale, false, ScaleMode::per_tensor, "NaN"},
                       Bad{Inject::inf_scale, false, ScaleMode::per_tensor, "infinite"},
                       Bad{Inject::short_stride, false, ScaleMode::none, "kv_c token stride"}}) {
    Case c = mla(SlotPattern::padded, DType::fp8_e4m3,
                 b.scale == ScaleMode::none ? MlaScale::none : MlaScale::per_tensor);
    c.inject = b.inject;
    bool launched = false;
    LaunchOverride o;
    o.on<kernels::MlaCacheArgs>(Kernel::mla_cache,
                                [&launched](const kernels::MlaCacheArgs&, cudaStream_t) {
                                  launched = true;
                                  return cudaSuccess;
                                });
    const Row row = run_case(c, settings_, device_, {}, o);
    EXPECT_EQ(row.status, Status::rejected) << to_string(b.inject);
    EXPECT_NE(row.reason.find(b.reason), std::string::npos) << row.reason;
    EXPECT_FALSE(launched) << to_string(b.inject);
  }
  // fp8_ds_mla: a slot out of range, and entries off their 16-byte alignment.
  for (const auto& [inject, reason] :
       {std::pair{Inject::slot_out_of_range, ">= NB*BS"},
        std::pair{Inject::misaligned_cache, "fp8_ds_mla cache misaligned: entry stride 664"}}) {
    Case c = ds_mla(MlaScale::tile_raw);
    c.inject = inject;
    bool launched = false;
    LaunchOverride o;
    o.on<kernels::MlaCacheArgs>(Kernel::mla_cache,
                                [&launched](const kernels::MlaCacheArgs&, cudaStream_t) {
                                  launched = true;
                                  return cudaSuccess;
                                });
    const Row row = run_case(c, settings_, device_, {}, o);
    EXPECT_EQ(row.status, Status::rejected) << to_string(inject);
    EXPECT_NE(row.reason.find(reason), std::string::npos) << row.reason;
    EXPECT_FALSE(launched) << to_string(inject);
  }
  // per_token_head: a slot out of range, and blocks (with their scales) off 4-byte alignment.
  for (const auto& [inject, reason] :
       {std::pair{Inject::slot_out_of_range, ">= NB*BS"},
        std::pair{Inject::misaligned_cache, "per_token_head cache misaligned: block stride"}}) {
    Case c = token_head(SlotPattern::padded);
    c.inject = inject;
    bool launched = false;
    LaunchOverride o;
    o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                  [&launched](const kernels::CacheWriteArgs&, cudaStream_t) {
                                    launched = true;
                                    return cudaSuccess;
                                  });
    const Row row = run_case(c, settings_, device_, {}, o);
    EXPECT_EQ(row.status, Status::rejected) << to_string(inject);
    EXPECT_NE(row.reason.find(reason), std::string::npos) << row.reason;
    EXPECT_FALSE(launched) << to_string(inject);
  }
  Case c = concat(StrideMode::contiguous);
  c.inject = Inject::short_stride;
  const Row row = run_case(c, settings_, device_);
  EXPECT_EQ(row.status, Status::rejected);
  EXPECT_NE(row.reason.find("k_nope head stride 127 < NOPE = 128"), std::string::npos)
      << row.reason;
}

// Rotated buffers: every set is validated, not only the first. The planted kernel is right on
// the first set it sees and writes slot s + 1 on every other, so only a validator that checks
// each set catches it, naming the set.
TEST_F(Planted, RotationValidatesEverySet) {
  settings_.rotate = 3;
  const Case c = cache(SlotPattern::random);
  const Row control = run(c, Bug::none);
  ASSERT_EQ(control.status, Status::passed) << control.reason;
  EXPECT_EQ(control.buffer_sets, 3);
  EXPECT_TRUE(control.timed);
  EXPECT_EQ(control.launches_per_sample, 3);  // graph: 2 launches rounded up to whole rotations

  const void* first_key = nullptr;
  LaunchOverride o;
  o.on<kernels::CacheWriteArgs>(Kernel::cache_write,
                                [&first_key](const kernels::CacheWriteArgs& a, cudaStream_t s) {
                                  if (!first_key) first_key = a.key;
                                  return testing::launch_planted_cache_write(
                                      a, a.key == first_key ? Bug::none : Bug::slot_off_by_one, s);
                                });
  const Row row = run_case(c, settings_, device_, {}, o);
  EXPECT_EQ(row.status, Status::incorrect);
  EXPECT_FALSE(row.timed);
  EXPECT_EQ(row.reason.rfind("set 1 of 3: ", 0), 0u) << row.reason;
}

// Each set has its own random slots and inputs: two sets' slot mappings differ.
TEST_F(Planted, RotatedSetsHaveTheirOwnSlots) {
  settings_.rotate = 2;
  std::vector<std::vector<std::int64_t>> seen;
  LaunchOverride o;
  o.on<kernels::CacheWriteArgs>(
      Kernel::cache_write, [&seen](const kernels::CacheWriteArgs& a, cudaStream_t s) {
        if (seen.size() < 2) {  // the validation launches, before any capture
          std::vector<std::int64_t> slots(static_cast<std::size_t>(a.num_tokens));
          cudaStreamSynchronize(s);  // the slots were uploaded on `s`, a non-blocking stream
          cudaMemcpy(slots.data(), a.slot_mapping, slots.size() * 8, cudaMemcpyDeviceToHost);
          seen.push_back(slots);
        }
        return testing::launch_planted_cache_write(a, Bug::none, s);
      });
  const Row row = run_case(cache(SlotPattern::random), settings_, device_, {}, o);
  ASSERT_EQ(row.status, Status::passed) << row.reason;
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0], seen[1]);
}

// auto and hot inputs end to end, in every mode, on both kernels; rotate 1 keeps today's counts.
TEST_F(Planted, RotateAutoAndHotInputsInEveryMode) {
  for (TimingMode mode : {TimingMode::cold, TimingMode::hot, TimingMode::graph})
    for (bool hot_inputs : {false, true})
      for (const Case& c : {concat(StrideMode::contiguous), cache(SlotPattern::padded)}) {
        settings_.mode = mode;
        settings_.rotate = kRotateAuto;
        settings_.hot_inputs = hot_inputs;
        const Row row = run(c, Bug::none);
        ASSERT_EQ(row.status, Status::passed) << describe(c) << ": " << row.reason;
        if (mode == TimingMode::cold)
          EXPECT_EQ(row.buffer_sets, 1);
        else  // a few hundred kB a set: hundreds of sets to exceed 3x L2
          EXPECT_GT(static_cast<double>(row.buffer_sets) * static_cast<double>(row.bytes),
                    3.0 * static_cast<double>(device_.l2_bytes))
              << describe(c);
        if (hot_inputs)  // the producer's median subtracted: clamped at 0, never negative
          EXPECT_GE(row.stats.median_us, 0.0) << describe(c);
        else
          EXPECT_GT(row.stats.median_us, 0.0) << describe(c);
      }
  // One token writes 4 kB: 4096 sets cannot exceed 3x L2. Back to back the case is timed on one
  // set in the cold context; after a producer over the 4096 sets that fit.
  Case tiny = testing_support::cache_case(1, 8, 128);
  settings_.mode = TimingMode::graph;
  settings_.hot_inputs = false;
  settings_.context = Context::back_to_back;
  const Row flushed = run(tiny, Bug::none);
  ASSERT_EQ(flushed.status, Status::passed) << flushed.reason;
  EXPECT_EQ(flushed.buffer_sets, 1);
  ASSERT_TRUE(flushed.context.has_value());
  EXPECT_EQ(*flushed.context, Context::cold);
  EXPECT_GE(flushed.stats.median_us, 0.0);
  settings_.hot_inputs = true;
  settings_.context = Context::after_producer;
  const Row capped = run(tiny, Bug::none);
  ASSERT_EQ(capped.status, Status::passed) << capped.reason;
  EXPECT_EQ(capped.buffer_sets, kMaxBufferSets);
  EXPECT_EQ(*capped.context, Context::after_producer);
  settings_.context = Context::back_to_back;
  settings_.rotate = 1;
  settings_.hot_inputs = false;
  settings_.mode = TimingMode::graph;
  const Row one = run(cache(SlotPattern::random), Bug::none);
  EXPECT_EQ(one.buffer_sets, 1);
  EXPECT_EQ(one.launches_per_sample, 2);
}

}  // namespace
}  // namespace kvbench
