// Sweep expansion against a golden listing, and the config errors a user will make.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/sweep.hpp"
#include "ops/cache_write/params.hpp"

namespace kvbench {
namespace {

std::vector<std::string> listing(const Config& c) {
  std::vector<std::string> out;
  for (const auto& k : c.cases) out.push_back(describe(k));
  return out;
}

std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

// yaml-cpp reads a tagged scalar as its text: `!!str 5` would be the number 5.
TEST(Sweep, TagsAreRefusedNamed) {
  EXPECT_EQ(
      error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {num_tokens: !!str 5}\n"),
      "t.yaml:3:24: sweeps[0].axes.num_tokens: the tag !!str makes '5' a string; a config "
      "takes plain values (remove the tag)");
  EXPECT_EQ(error_of("settings: {warmup: !foo 5}\nsweeps:\n  - kernel: reshape_and_cache_flash\n"),
            "t.yaml:1:20: settings.warmup: unknown tag !foo; a config takes plain values, no tags "
            "(remove it)");
  EXPECT_EQ(
      error_of("sweeps: !!seq\n  - kernel: reshape_and_cache_flash\n"),
      "t.yaml:1:9: sweeps: unknown tag !!seq; a config takes plain values, no tags (remove it)");
  // Quotes and anchors are not tags.
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: &a {num_tokens: 1}\n"
                     "  - kernel: reshape_and_cache_flash\n    name: b\n    axes: *a\n"),
            "<no error>");
}

TEST(Sweep, ExpandsCartesianProductInCanonicalOrder) {
  // Axes written in a different order than the canonical one: expansion must not care.
  const Config c = parse_config(R"(
sweeps:
  - name: s
    kernel: reshape_and_cache_flash
    axes:
      num_tokens: [1, 16]
      swa: [false, true]
      num_heads: 8
      head_size: [128, 80]
)",
                                "t.yaml");
  const std::vector<std::string> golden = {
      "reshape_and_cache_flash seed_port T=1 H=8 D=128 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=off slots=random",
      "reshape_and_cache_flash seed_port T=16 H=8 D=128 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=off slots=random",
      "reshape_and_cache_flash seed_port T=1 H=8 D=80 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=off slots=random",
      "reshape_and_cache_flash seed_port T=16 H=8 D=80 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=off slots=random",
      "reshape_and_cache_flash seed_port T=1 H=8 D=128 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=on slots=random",
      "reshape_and_cache_flash seed_port T=16 H=8 D=128 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=on slots=random",
      "reshape_and_cache_flash seed_port T=1 H=8 D=80 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=on slots=random",
      "reshape_and_cache_flash seed_port T=16 H=8 D=80 BS=16 nhd bf16->bf16 strides=contiguous "
      "scale=none swa=on slots=random",
  };
  EXPECT_EQ(listing(c), golden);
  for (const auto& k : c.cases) EXPECT_EQ(k.sweep, "s");
}

TEST(Sweep, ConcatDefaultsAndSeveralSweeps) {
  const Config c = parse_config(R"(
settings: {seed: 7, min_samples: 3, mode: hot, target_noise: 0.01, timeout_s: 2.5, l2_flush: memset}
sweeps:
  - kernel: concat_and_cast_mha_k
    axes: {num_tokens: 4, out_dtype: [bf16, fp8_e4m3], strides: sglang}
  - kernel: concat_and_cast_mha_k
    axes: {num_heads: 12}
)",
                                "t.yaml");
  const std::vector<std::string> golden = {
      "concat_and_cast_mha_k seed_port T=4 H=128 NOPE=128 ROPE=64 bf16->bf16 strides=sglang",
      "concat_and_cast_mha_k seed_port T=4 H=128 NOPE=128 ROPE=64 bf16->fp8_e4m3 strides=sglang",
      "concat_and_cast_mha_k seed_port T=1 H=12 NOPE=128 ROPE=64 bf16->bf16 strides=contiguous",
  };
  EXPECT_EQ(listing(c), golden);
  EXPECT_EQ(c.cases[0].sweep, "sweep0");
  EXPECT_EQ(c.cases[2].sweep, "sweep1");
  EXPECT_EQ(c.settings.seed, 7u);
  EXPECT_EQ(c.settings.min_samples, 3);
  EXPECT_EQ(c.settings.mode, TimingMode::hot);
  EXPECT_EQ(c.settings.target_noise, 0.01);
  EXPECT_EQ(c.settings.timeout_s, 2.5);
  EXPECT_EQ(c.settings.l2_flush, L2Flush::memset);
  EXPECT_EQ(c.settings.min_time_s, RunSettings{}.min_time_s);
  EXPECT_EQ(c.settings.warmup, RunSettings{}.warmup);
}

TEST(Sweep, MergeKeysShareAxesBetweenSweeps) {
  const Config c = parse_config(R"(
sweeps:
  - kernel: reshape_and_cache_flash
    axes: &base {num_heads: 4, head_size: 64, num_tokens: [1, 2]}
  - kernel: reshape_and_cache_flash
    axes:
      <<: *base
      num_tokens: 8
      layout: hnd
)",
                                "t.yaml");
  ASSERT_EQ(c.cases.size(), 3u);
  EXPECT_EQ(c.cases[2].num_heads, 4);
  EXPECT_EQ(params_of<CacheWriteParams>(c.cases[2]).head_size, 64);
  EXPECT_EQ(c.cases[2].num_tokens, 8);  // the sweep's own value overrides the merged one
  EXPECT_EQ(params_of<CacheWriteParams>(c.cases[2]).layout, Layout::hnd);
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    name: \"a\\rb\"\n"),
            "t.yaml:3:11: sweeps[0].name: must not contain commas, quotes or control characters (a "
            "newline, a tab)");
  // A list of maps: an earlier map's key wins (the merge-key rule; PyYAML reads it so too).
  const Config listed = parse_config(R"(
sweeps:
  - kernel: reshape_and_cache_flash
    axes: &base {num_tokens: [1, 2]}
  - kernel: reshape_and_cache_flash
    axes:
      <<: [*base, {num_tokens: 3, num_heads: 2}]
)",
                                     "t.yaml");
  ASSERT_EQ(listed.cases.size(), 4u);
  EXPECT_EQ(listed.cases[2].num_tokens, 1);
  EXPECT_EQ(listed.cases[3].num_tokens, 2);
  EXPECT_EQ(listed.cases[3].num_heads, 2);
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {<<: 3}\n"),
            "t.yaml:3:16: sweeps[0].axes.<<: expected a mapping (or list of mappings) to merge");
}

// Booleans as YAML 1.2 reads them: yaml-cpp alone would take YAML 1.1's yes, on and y.
TEST(Sweep, BooleansAreTrueOrFalse) {
  EXPECT_EQ(error_of("settings: {hot_inputs: yes}\nsweeps:\n  - kernel: reshape_and_cache_flash\n"),
            "t.yaml:1:24: settings.hot_inputs: expected true or false, got 'yes'");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {swa: on}\n"),
            "t.yaml:3:17: sweeps[0].axes.swa: expected true or false, got 'on'");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {swa: \"true\"}\n"),
            "t.yaml:3:17: sweeps[0].axes.swa: expected true or false, got 'true'");
  const Config c = parse_config(
      "settings: {hot_inputs: True}\nsweeps:\n  - kernel: reshape_and_cache_flash\n"
      "    axes: {swa: [FALSE, true]}\n",
      "t.yaml");
  EXPECT_TRUE(c.settings.hot_inputs);
  ASSERT_EQ(c.cases.size(), 2u);
}

// A case listed twice would give a CSV with a key twice, which compare, merge and --resume refuse.
TEST(Sweep, EachCaseOnce) {
  const std::string twice_in_a_list =
      "sweeps:\n  - kernel: concat_and_cast_mha_k\n    axes: {num_tokens: [1, 16, 1]}\n";
  EXPECT_EQ(error_of(twice_in_a_list),
            "t.yaml:2:5: sweeps[0]: case 2 is case 0 again (sweep0: concat_and_cast_mha_k "
            "seed_port T=1 H=128 NOPE=128 ROPE=64 bf16->bf16 strides=contiguous): a value listed "
            "twice, or a sweep name used twice");
  const std::string one_name_twice =
      "sweeps:\n  - name: s\n    kernel: reshape_and_cache_flash\n"
      "  - name: s\n    kernel: reshape_and_cache_flash\n    axes: {variant: seed_port}\n";
  EXPECT_NE(error_of(one_name_twice).find("t.yaml:4:5: sweeps[1]: case 1 is case 0 again"),
            std::string::npos);
  // Two names are two cases; two injected inputs (no column of their own) are one key.
  EXPECT_EQ(error_of("sweeps:\n  - name: a\n    kernel: reshape_and_cache_flash\n"
                     "  - name: b\n    kernel: reshape_and_cache_flash\n"),
            "<no error>");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cast_mha_k\n"
                     "    axes: {num_tokens: 1, inject: [none, short_stride]}\n"),
            "t.yaml:2:5: sweeps[0]: case 1 is case 0 again (sweep0: concat_and_cast_mha_k "
            "seed_port T=1 H=128 NOPE=128 ROPE=64 bf16->bf16 strides=contiguous "
            "inject=short_stride): cases that differ only in `inject` (which has no CSV column) "
            "need a sweep each");
  // Two sweeps of one name: the name twice, whatever they inject.
  EXPECT_NE(error_of("sweeps:\n  - {name: a, kernel: reshape_and_cache_flash, "
                     "axes: {inject: duplicate_slot}}\n"
                     "  - {name: a, kernel: reshape_and_cache_flash, "
                     "axes: {inject: slot_out_of_range}}\n")
                .find("): a value listed twice, or a sweep name used twice"),
            std::string::npos);
  EXPECT_EQ(error_of("sweeps:\n  - {name: a, kernel: reshape_and_cache_flash, "
                     "axes: {inject: duplicate_slot}}\n"
                     "  - {name: b, kernel: reshape_and_cache_flash, "
                     "axes: {inject: slot_out_of_range}}\n"),
            "<no error>");
}

TEST(Sweep, ShippedConfigsExpand) {
  // The GPU host runs this binary from another checkout: it names the tree in the environment.
  const char* env = std::getenv("KVBENCH_SOURCE_DIR");
  const std::string root = env ? env : KVBENCH_SOURCE_DIR;
  for (const char* name : {"smoke", "default", "perf", "quick_perf", "bad_input", "studies/scatter",
                           "studies/walk", "studies/slot_order"}) {
    const Config c = load_config(root + "/configs/" + name + ".yaml");
    EXPECT_GE(c.cases.size(), 8u) << name;
  }
  // validation.yaml: at least 200 cases, every variant, decode and prefill sizes; no injected bad
  // input.
  const Config v = load_config(root + "/configs/validation.yaml");
  EXPECT_GE(v.cases.size(), 200u);
  std::size_t prefill = 0, decode = 0;
  for (const Case& c : v.cases) {
    EXPECT_EQ(c.inject, Inject::none) << describe(c);
    prefill += c.num_tokens >= 4096;
    decode += c.num_tokens <= 512;
  }
  EXPECT_GT(prefill, 0u);
  EXPECT_GT(decode, 0u);
  for (Variant variant : all_values<Variant>()) {
    std::size_t n = 0;
    for (const Case& c : v.cases) n += c.variant == variant;
    EXPECT_GT(n, 0u) << to_string(variant);
  }
}

TEST(SweepErrors, NameTheKeyPathAndPosition) {
  EXPECT_EQ(
      error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes:\n      num_tokns: 4\n"),
      "t.yaml:4:7: sweeps[0].axes.num_tokns: unknown key (expected one of in_dtype, "
      "out_dtype, scale, swa, layout, kv_interleaved, strides, slots, num_heads, head_size, "
      "block_size, num_tokens, variant, inject)");
  EXPECT_EQ(
      error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {num_heads: [8, 0]}\n"),
      "t.yaml:3:27: sweeps[0].axes.num_heads[1]: expected a positive integer up to "
      "2147483647, got 0");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cast_mha_k\n    axes: {in_dtype: fp4}\n"),
            "t.yaml:3:22: sweeps[0].axes.in_dtype: unknown dtype 'fp4' (expected one of f32, f16, "
            "bf16, fp8_e4m3, fp8_e5m2)");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: flash_attn\n"),
            "t.yaml:2:13: sweeps[0].kernel: unknown kernel 'flash_attn' (expected one of " +
                joined_names<Kernel>() + ")");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {swa: maybe}\n"),
            "t.yaml:3:17: sweeps[0].axes.swa: expected true or false, got 'maybe'");
}

// concat_and_cache_mla refuses the shared enums' values it has no use for, naming why.
TEST(SweepErrors, MlaCacheRefusesOtherOperationsValues) {
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cache_mla\n    axes: {scale: per_head}\n"),
            "t.yaml:3:19: sweeps[0].axes.scale: unknown scale 'per_head' (expected one of none, "
            "per_tensor, tile_raw, tile_pow2)");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cache_mla\n    axes: {layout: hnd}\n"),
            "t.yaml:3:20: sweeps[0].axes.layout: unknown layout 'hnd' (expected one of nhd, "
            "fp8_ds_mla)");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cache_mla\n    axes: {slots: skip}\n"),
            "t.yaml:3:19: sweeps[0].axes.slots: concat_and_cache_mla has no skip slot (slots "
            "random, contiguous or padded)");
  EXPECT_EQ(
      error_of("sweeps:\n  - kernel: concat_and_cache_mla\n    axes: {num_heads: 2}\n"),
      "t.yaml:3:12: sweeps[0].axes.num_heads: unknown key (expected one of in_dtype, "
      "out_dtype, layout, scale, strides, slots, lora_rank, rope_dim, block_size, num_tokens, "
      "variant, inject)");
}

TEST(SweepErrors, StructureAndSyntax) {
  EXPECT_EQ(error_of("sweeps: [\n"), error_of("sweeps: [\n"));  // deterministic
  EXPECT_NE(error_of("sweeps: [\n").find("t.yaml:2:1: YAML syntax error"), std::string::npos)
      << error_of("sweeps: [\n");
  EXPECT_EQ(error_of("settings: {}\n"), "t.yaml: sweeps: missing (expected a list of sweeps)");
  EXPECT_EQ(error_of("sweeps: []\n"), "t.yaml:1:9: sweeps: expected a non-empty list of sweeps");
  EXPECT_EQ(
      error_of("sweeps:\n  - axes: {}\n"),
      "t.yaml:2:5: sweeps[0].kernel: missing (expected one of " + joined_names<Kernel>() + ")");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: concat_and_cast_mha_k\n    axes: {num_tokens: []}\n"),
            "t.yaml:3:24: sweeps[0].axes.num_tokens: empty list");
}

TEST(Sweep, ASweepWithoutAxesIsOneCaseOfDefaults) {
  const Config c = parse_config("sweeps:\n  - kernel: concat_and_cast_mha_k\n", "t.yaml");
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].num_heads, 128);
}

TEST(SweepErrors, NonsenseTimingSettingsNameTheKey) {
  const auto settings_error = [](const std::string& settings) {
    return error_of("settings: {" + settings + "}\nsweeps:\n  - kernel: concat_and_cast_mha_k\n");
  };
  EXPECT_EQ(settings_error("min_samples: 0"),
            "t.yaml:1:25: settings.min_samples: expected a positive integer up to 1000000, got 0");
  EXPECT_EQ(settings_error("warmup: -1"),
            "t.yaml:1:20: settings.warmup: expected a positive integer up to 100000, got -1");
  EXPECT_EQ(
      settings_error("mode: warm"),
      "t.yaml:1:18: settings.mode: unknown timing mode 'warm' (expected one of cold, hot, graph)");
  EXPECT_EQ(
      settings_error("l2_flush: evict"),
      "t.yaml:1:22: settings.l2_flush: unknown l2 flush 'evict' (expected one of read, memset)");
  EXPECT_EQ(settings_error("timeout_s: -2"),
            "t.yaml:1:23: settings.timeout_s: expected a number in (0, 3600], got -2");
  EXPECT_EQ(settings_error("timeout_s: 0"),
            "t.yaml:1:23: settings.timeout_s: expected a number in (0, 3600], got 0");
  EXPECT_EQ(settings_error("min_time_s: -0.5"),
            "t.yaml:1:24: settings.min_time_s: expected a number in [0, 3600], got -0.5");
  EXPECT_EQ(settings_error("target_noise: 0"),
            "t.yaml:1:26: settings.target_noise: expected a number in (0, 1], got 0");
  EXPECT_EQ(settings_error("target_noise: .nan"),
            "t.yaml:1:26: settings.target_noise: expected a number in (0, 1], got .nan");
  EXPECT_EQ(settings_error("target_noise: lots"),
            "t.yaml:1:26: settings.target_noise: expected a number, got 'lots'");
  EXPECT_EQ(
      settings_error("launches_per_sample: 513"),
      "t.yaml:1:33: settings.launches_per_sample: expected a positive integer up to 512, got 513");
  EXPECT_EQ(settings_error("samples: 3"),
            "t.yaml:1:12: settings.samples: unknown key (expected one of seed, mode, warmup, "
            "min_samples, min_time_s, target_noise, timeout_s, launches_per_sample, l2_flush, "
            "rotate, hot_inputs, timer, context, layer_mib)");
  EXPECT_EQ(settings_error("context: warm"),
            "t.yaml:1:21: settings.context: unknown context 'warm' (expected one of back_to_back, "
            "cold, after_producer, layer)");
  EXPECT_EQ(settings_error("layer_mib: 0"),
            "t.yaml:1:23: settings.layer_mib: expected a positive integer up to 65536, got 0");
  EXPECT_EQ(settings_error("hot_inputs: true, context: cold"),
            "t.yaml:1:24: settings.hot_inputs: hot_inputs is the after_producer context, not cold");
  EXPECT_EQ(settings_error("timer: clock"),
            "t.yaml:1:19: settings.timer: unknown timer 'clock' (expected one of events, cupti)");
  // Only a graph replay's kernels can be told from the engine's own.
  EXPECT_EQ(settings_error("mode: hot, timer: cupti"),
            "t.yaml:1:30: settings.timer: cupti times graph replays only (settings.mode is hot)");
  EXPECT_EQ(settings_error("rotate: 0"),
            "t.yaml:1:20: settings.rotate: expected auto or an integer in [1, 4096], got '0'");
  EXPECT_EQ(settings_error("rotate: some"),
            "t.yaml:1:20: settings.rotate: expected auto or an integer in [1, 4096], got 'some'");
  EXPECT_EQ(settings_error("rotate: 4097"),
            "t.yaml:1:20: settings.rotate: expected auto or an integer in [1, 4096], got '4097'");
  EXPECT_EQ(settings_error("hot_inputs: 3"),
            "t.yaml:1:24: settings.hot_inputs: expected true or false, got '3'");
  EXPECT_EQ(settings_error("min_time_s: 0"), "<no error>");  // zero: no minimum
  // A quoted number is a string, as a quoted "true" is: refused, not read as the number.
  EXPECT_EQ(settings_error("warmup: \"3\""),
            "t.yaml:1:20: settings.warmup: expected a positive integer, got the quoted string '3' "
            "(drop the quotes)");
  EXPECT_EQ(settings_error("seed: '7'"),
            "t.yaml:1:18: settings.seed: expected a non-negative integer, got the quoted string "
            "'7' (drop the quotes)");
  EXPECT_EQ(settings_error("timeout_s: \"1.5\""),
            "t.yaml:1:23: settings.timeout_s: expected a number, got the quoted string '1.5' (drop "
            "the quotes)");
  EXPECT_EQ(settings_error("rotate: '8'"),
            "t.yaml:1:20: settings.rotate: expected auto or an integer, got the quoted string '8' "
            "(drop the quotes)");
  EXPECT_EQ(settings_error("rotate: \"auto\""), "<no error>");  // a word, quoted or not
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {num_tokens: [1, "
                     "\"128\"]}\n"),
            "t.yaml:3:28: sweeps[0].axes.num_tokens[1]: expected a positive integer, got the "
            "quoted string '128' (drop the quotes)");
  EXPECT_EQ(error_of("sweeps:\n  - kernel: reshape_and_cache_flash\n    axes: {strides: sglang}\n"),
            "t.yaml:3:21: sweeps[0].axes.strides: 'sglang' strides apply to "
            "concat_and_cast_mha_k only");
  EXPECT_EQ(error_of("sweepz: []\n"),
            "t.yaml:1:1: sweepz: unknown key (expected one of settings, sweeps)");
}

TEST(SweepErrors, MissingFileNamesThePath) {
  try {
    load_config("/nonexistent/dir/x.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "/nonexistent/dir/x.yaml: cannot open config file (No such file or directory)");
  }
}

// hot_inputs is the after_producer context: either one sets the other.
TEST(Sweep, HotInputsAndTheAfterProducerContextAreOne) {
  const auto settings_of = [](const std::string& settings) {
    return parse_config(
               "settings: {" + settings + "}\nsweeps:\n  - kernel: reshape_and_cache_flash\n",
               "t.yaml")
        .settings;
  };
  EXPECT_EQ(settings_of("hot_inputs: true").context, Context::after_producer);
  EXPECT_TRUE(settings_of("context: after_producer").hot_inputs);
  const RunSettings layer = settings_of("context: layer, layer_mib: 8");
  EXPECT_EQ(layer.context, Context::layer);
  EXPECT_EQ(layer.layer_mib, 8);
  EXPECT_FALSE(layer.hot_inputs);
  EXPECT_EQ(settings_of("").context, Context::back_to_back);
  RunSettings s;
  s.hot_inputs = true;
  s.context = Context::layer;
  EXPECT_THROW(resolve_context(s), std::invalid_argument);
}

}  // namespace
}  // namespace kvbench
