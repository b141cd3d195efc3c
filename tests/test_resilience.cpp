// Memory admission, sharding and sidecar checks: the pure parts of resilient sweeps.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/csv.hpp"
#include "core/footprint.hpp"
#include "core/metadata.hpp"
#include "core/result_csv.hpp"
#include "core/shard.hpp"
#include "core/sidecar.hpp"
#include "tests/support.hpp"

namespace kvbench {
namespace {

Case cache_case(std::int64_t T, std::int64_t H, std::int64_t D) {
  return testing_support::cache_case(T, H, D);
}

TEST(Footprint, ConcatCountsInputsOutputsAndGuards) {
  // T=4 H=1 NOPE=128 ROPE=0 bf16->bf16, contiguous: k_s0 = 128
  const Case c = testing_support::concat_case(4, 1, 128, 0);
  const Footprint f = case_footprint(c);
  const std::uint64_t inputs = 4 * 128 * 2, output = (4 * 128 + 2 * 128) * 2;
  EXPECT_EQ(f.host(), inputs + 2 * output);  // inputs, expected, actual
  EXPECT_EQ(f.device(), inputs + output);
  EXPECT_EQ(f.device(3), 3 * (inputs + output));  // every buffer set repeats inputs and output
}

TEST(Footprint, SixteenMillionTokensNeedMoreThanTheirKeysAndValues) {
  // T=16,777,216 H=32 D=128 bf16: keys alone are 137.4 GB, keys and values 274.9 GB.
  const Footprint f = case_footprint(cache_case(16777216, 32, 128));
  EXPECT_GT(f.host(), 274877906944ull + 2 * 274877906944ull);  // inputs, caches expected + actual
  EXPECT_GT(f.device(), 2 * 274877906944ull);
  EXPECT_LT(f.device(), f.host());
  EXPECT_EQ(format_bytes(f.host()), "894.0 GB");  // tests/configs/too_big.yaml's first case
  EXPECT_EQ(format_bytes(274877906944ull), "274.9 GB");
}

TEST(Footprint, GrowsWithEveryAxis) {
  const std::uint64_t base = case_footprint(cache_case(1024, 8, 128)).host();
  EXPECT_GT(case_footprint(cache_case(2048, 8, 128)).host(), base);
  EXPECT_GT(case_footprint(cache_case(1024, 16, 128)).host(), base);
  Case swa = cache_case(1024, 8, 128);
  testing_support::cache_params(swa).swa = true;
  EXPECT_GT(case_footprint(swa).host(), base);
  Case f32 = cache_case(1024, 8, 128);
  f32.in_dtype = DType::f32;
  EXPECT_GT(case_footprint(f32).device(), case_footprint(cache_case(1024, 8, 128)).device());
}

TEST(Admission, RefusesWithTheNumbers) {
  Footprint f;
  f.host_fixed = 274900000000ull;
  f.device_per_set = 1000;
  EXPECT_EQ(admission_refusal(f, 1, 131200000000ull, 1ull << 40),
            "needs 274.9 GB host memory, 131.2 GB available");
  EXPECT_EQ(admission_refusal(f, 1, 1ull << 40, 500),
            "needs 0.0 MB device memory, 0.0 MB available");
  EXPECT_EQ(admission_refusal(f, 1, std::nullopt, std::nullopt), "");  // unknown: admitted
  EXPECT_EQ(admission_refusal(f, 1, 1ull << 40, 1ull << 40), "");
}

TEST(Admission, ReadsMemAvailable) {
  EXPECT_EQ(parse_mem_available("MemTotal: 100 kB\nMemAvailable:    2048 kB\n"), 2048u * 1024);
  EXPECT_FALSE(parse_mem_available("MemTotal: 100 kB\n"));
  EXPECT_TRUE(host_available_bytes().has_value());  // this machine has /proc/meminfo
}

const char* no_env(const char*) { return nullptr; }

TEST(Shard, SplitIsDisjointAndCovers) {
  std::vector<std::size_t> all(103);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::multiset<std::size_t> seen;
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t k : shard_cases(all, parse_shard(std::to_string(i) + "/4", no_env)))
      seen.insert(k);
  EXPECT_EQ(seen, std::multiset<std::size_t>(all.begin(), all.end()));
  EXPECT_EQ(shard_cases({0, 1, 2, 3, 4, 5}, parse_shard("1/3", no_env)),
            (std::vector<std::size_t>{1, 4}));
}

TEST(Shard, RefusesBadValuesNamingThem) {
  for (const char* bad : {"2/2", "1", "a/2", "0/0", "-1/2", ""}) {
    try {
      parse_shard(bad, no_env);
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << e.what();
    }
  }
}

TEST(Shard, Slurm) {
  std::map<std::string, std::string> env = {{"SLURM_ARRAY_TASK_ID", "3"},
                                            {"SLURM_ARRAY_TASK_COUNT", "4"}};
  auto get = [&](const char* k) { return env.count(k) ? env[k].c_str() : nullptr; };
  EXPECT_EQ(parse_shard("slurm", get).text(), "3/4");
  env["SLURM_ARRAY_TASK_ID"] = "4";
  env["SLURM_ARRAY_TASK_MIN"] = "1";  // --array=1-4
  EXPECT_EQ(parse_shard("slurm", get).text(), "3/4");
  env["SLURM_ARRAY_TASK_ID"] = "0000000003";  // leading zeros are no size
  EXPECT_EQ(parse_shard("slurm", get).text(), "2/4");
  env["SLURM_ARRAY_TASK_ID"] =
      "99999999999999999999999";  // past 64 bits: too large, not "no integer"
  try {
    parse_shard("slurm", get);
    ADD_FAILURE() << "a 23-digit task id accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "--shard slurm: SLURM_ARRAY_TASK_ID: '99999999999999999999999' is more than 999999999");
  }
  env.erase("SLURM_ARRAY_TASK_ID");
  EXPECT_THROW(
      try { parse_shard("slurm", get); } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("SLURM_ARRAY_TASK_ID is not set"), std::string::npos);
        throw;
      },
      std::invalid_argument);
}

// --array=0-6:2: tasks 0, 2, 4, 6 are shards 0-3 of 4; a task off the step, below the first
// task, or of an array that is not one range with one step is refused.
TEST(Shard, SlurmArraySteps) {
  std::map<std::string, std::string> env = {{"SLURM_ARRAY_TASK_COUNT", "4"},
                                            {"SLURM_ARRAY_TASK_MIN", "0"},
                                            {"SLURM_ARRAY_TASK_MAX", "6"},
                                            {"SLURM_ARRAY_TASK_STEP", "2"}};
  auto get = [&](const char* k) { return env.count(k) ? env[k].c_str() : nullptr; };
  std::set<std::string> shards;
  for (const char* task : {"0", "2", "4", "6"}) {
    env["SLURM_ARRAY_TASK_ID"] = task;
    shards.insert(parse_shard("slurm", get).text());
  }
  EXPECT_EQ(shards, (std::set<std::string>{"0/4", "1/4", "2/4", "3/4"}));
  const auto refused = [&](const std::string& id, const std::string& words) {
    env["SLURM_ARRAY_TASK_ID"] = id;
    try {
      parse_shard("slurm", get);
      ADD_FAILURE() << id << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused("3", "not SLURM_ARRAY_TASK_MIN 0 plus a multiple of SLURM_ARRAY_TASK_STEP 2");
  env["SLURM_ARRAY_TASK_MIN"] = "2";
  env["SLURM_ARRAY_TASK_MAX"] = "8";
  refused("0", "SLURM_ARRAY_TASK_ID 0 is below SLURM_ARRAY_TASK_MIN 2");
  // --array=1,3,8: three tasks, no one step.
  env = {{"SLURM_ARRAY_TASK_COUNT", "3"},
         {"SLURM_ARRAY_TASK_MIN", "1"},
         {"SLURM_ARRAY_TASK_MAX", "8"},
         {"SLURM_ARRAY_TASK_STEP", "1"}};
  refused("3", "the array is not one range with one step");
  env = {{"SLURM_ARRAY_TASK_COUNT", "2000000"}};
  refused("0", "2000000 shards, more than 1000000");
}

TEST(Shard, DeviceListIsReadWhole) {
  EXPECT_EQ(parse_device_list("0,2,5"), (std::vector<std::size_t>{0, 2, 5}));
  for (const char* bad : {"1,abc", "abc,1", "", "1,", ",1", "12345", "1,-2"})
    EXPECT_THROW(parse_device_list(bad), std::invalid_argument) << bad;
}

TEST(Shard, CountIsBoundedAndMissingShardsAreRanges) {
  EXPECT_EQ(parse_shard("5/1000000", no_env).count, 1000000u);
  EXPECT_THROW(parse_shard("5/999999999", no_env), std::invalid_argument);
  EXPECT_EQ(missing_shards_text({5}, 1000000), "0-4, 6-999999");
  EXPECT_EQ(missing_shards_text({0, 1, 2}, 3), "");
  EXPECT_EQ(missing_shards_text({2, 0, 0}, 4), "1, 3");
  std::vector<std::size_t> every_other;
  for (std::size_t i = 0; i < 40; i += 2) every_other.push_back(i);
  EXPECT_EQ(missing_shards_text(every_other, 40, 3), "1, 3, 5, and 17 more ranges");
}

std::string sidecar(std::uint64_t seed, const std::string& shard, const std::string& uuid) {
  RunMetadata m;
  m.config_path = "c.yaml";
  m.config_fnv1a64 = "abc";
  m.settings.seed = seed;
  m.shard = shard;
  m.started_at = "2026-01-01T00:00:0" + std::to_string(seed) + "Z";
  m.finished_at = "2026-01-01T01:00:00Z";
  m.cases_done = 2;
  DeviceDetails d;
  d.name = "GPU";
  d.uuid = uuid;
  m.devices = {device_entry_json(d, {}, {})};
  return metadata_to_json(m);
}

TEST(Sidecar, ResumeNamesTheFirstDifference) {
  EXPECT_EQ(resume_mismatch(sidecar(1, "", "u"), sidecar(1, "", "v"), "x.json"), "");
  EXPECT_EQ(resume_mismatch(sidecar(1, "", "u"), sidecar(2, "", "u"), "x.json"),
            "settings.seed is 1 in x.json, 2 now");
  EXPECT_EQ(resume_mismatch(sidecar(1, "0/2", "u"), sidecar(1, "1/2", "u"), "x.json"),
            "--shard (shard) is \"0/2\" in x.json, \"1/2\" now");
  EXPECT_NE(resume_mismatch("{}", sidecar(1, "", "u"), "x.json").find("the config differs"),
            std::string::npos);
  // Another build: its rows are not appended to this one's.
  auto built = [](const std::string& sha, bool dirty) {
    auto j = nlohmann::json::parse(sidecar(1, "", "u"));
    j["git_sha"] = sha;
    j["git_dirty"] = dirty;
    return j.dump();
  };
  EXPECT_EQ(resume_mismatch(built("0ldc0mm1t000", false), built("277f42058ba7", false), "x.json"),
            "git_sha is \"0ldc0mm1t000\" in x.json, \"277f42058ba7\" now (rows of two builds are "
            "not mixed into one CSV)");
  EXPECT_EQ(resume_mismatch(built("277f42058ba7", false), built("277f42058ba7", true), "x.json"),
            "git_dirty is false in x.json, true now (rows of two builds are not mixed into one "
            "CSV)");
  EXPECT_EQ(resume_mismatch(built("277f42058ba7", true), built("277f42058ba7", true), "x.json"),
            "");
}

TEST(Sidecar, DevicesAndShardRecord) {
  const std::string s = sidecar(1, "0/2", "GPU-1");
  EXPECT_EQ(device_identity(sidecar_devices(s).at(0)).uuid, "GPU-1");
  const ShardRecord r = read_shard_record(s, "s.json");
  EXPECT_EQ(r.shard, "0/2");
  EXPECT_EQ(r.config_hash, "abc");
  const auto merged = nlohmann::json::parse(
      merge_sidecars({s, sidecar(2, "1/2", "GPU-2"), sidecar(3, "1/2", "GPU-2")},
                     {"a.json", "b.json", "c.json"}, "m.csv", 6));
  EXPECT_EQ(merged["devices"].size(), 2u);  // one entry per device and host
  EXPECT_EQ(merged["cases_done"], 6);
  EXPECT_EQ(merged["started_at"], "2026-01-01T00:00:01Z");
  EXPECT_TRUE(merged["shard"].is_null());
  EXPECT_EQ(merged["device"]["uuid"], "GPU-1");
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

std::string edited(const std::string& sidecar_text, const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json j = nlohmann::json::parse(sidecar_text);
  f(j);
  return j.dump();
}

std::string refusal(const std::string& text) {
  try {
    check_sidecar(text, "s.json");
  } catch (const SidecarError& e) {
    return e.what();
  }
  return "";
}

// Every key merge and --resume read is checked, the message naming the file and the key.
TEST(Sidecar, EveryKeyReadIsChecked) {
  const std::string s = sidecar(1, "0/2", "GPU-1");
  EXPECT_EQ(refusal(s), "");
  using J = nlohmann::json;
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["shard"] = "abc"; })),
            "s.json: key 'shard': expected \"I/N\" with 0 <= I < N <= 1000000, got \"abc\"");
  EXPECT_EQ(refusal(edited(s,
                           [](J& j) {
                             j["devices"] = {1, 2};
                           })),
            "s.json: key 'devices[0]': expected an object, got 1");
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["selected_cases"] = {-1}; })),
            "s.json: key 'selected_cases[0]': expected a case number (0 or more), got -1");
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["cases_done"] = "x"; })),
            "s.json: key 'cases_done': expected a non-negative integer, got \"x\"");
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["config"].erase("fnv1a64"); })),
            "s.json: key 'config.fnv1a64': expected a string, missing");
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["settings"]["seed"] = J::array(); })),
            "s.json: key 'settings.seed': expected a string, number or boolean, got []");
  EXPECT_EQ(refusal(edited(s, [](J& j) { j["interrupted"] = 1; })),
            "s.json: key 'interrupted': expected true or false, got 1");
  EXPECT_EQ(refusal("[1]"), "s.json: not a kvbench sidecar (not a JSON object)");
  // No finished_at: a run still going; merged as unfinished, not read past the object.
  const std::string running = edited(s, [](J& j) { j.erase("finished_at"); });
  EXPECT_EQ(refusal(running), "");
  const J merged = J::parse(
      merge_sidecars({running, sidecar(2, "1/2", "GPU-2")}, {"a.json", "b.json"}, "m.csv", 4));
  EXPECT_TRUE(merged["finished_at"].is_null());
  EXPECT_THROW(read_shard_record(edited(s, [](J& j) { j["shard"] = "5/999999999"; }), "s.json"),
               SidecarError);
  EXPECT_THROW(device_identity("{\"device\": {\"uuid\": 7}}"), SidecarError);
}

// plugins[].kernels names each variant's operation, for merge; one per variant.
TEST(Sidecar, PluginVariantsAndTheirKernels) {
  using J = nlohmann::json;
  const std::string s = edited(sidecar(1, "0/2", "GPU-1"), [](J& j) {
    j["plugins"] = J::parse(
        R"([{"path": "p.so", "size": 1, "sha256": "ab", "variants": ["mine", "mine"],
             "kernels": ["concat_and_cast_mha_k", "reshape_and_cache_flash"]}])");
  });
  const ShardRecord r = read_shard_record(s, "s.json");
  ASSERT_EQ(r.plugin_variants.size(), 2u);
  EXPECT_EQ(r.plugin_variants[1],
            std::make_pair(std::string("mine"), std::string("reshape_and_cache_flash")));
  const auto refused = [](const std::string& text) -> std::string {
    try {
      read_shard_record(text, "s.json");
    } catch (const SidecarError& e) {
      return std::string(e.what()).substr(0, std::string(e.what()).find(", got"));
    }
    return "";
  };
  EXPECT_EQ(refused(edited(s, [](J& j) { j["plugins"][0]["kernels"].erase(1); })),
            "s.json: key 'plugins': expected a kernel for each variant");
  EXPECT_EQ(refused(edited(s, [](J& j) { j["plugins"] = 1; })),
            "s.json: key 'plugins': expected a list of plugins");
  // The same files elsewhere (another host, another working directory) are the same plugins.
  const std::string moved = edited(s, [](J& j) { j["plugins"][0]["path"] = "/opt/p.so"; });
  EXPECT_EQ(shard_mismatch(r, "a.json", read_shard_record(moved, "b.json"), "b.json"), "");
  // Other plugin files: named by path and hash.
  const std::string other = edited(s, [](J& j) { j["plugins"][0]["sha256"] = "cd"; });
  EXPECT_EQ(shard_mismatch(r, "a.json", read_shard_record(other, "b.json"), "b.json"),
            "b.json: --plugin (plugins) is p.so (sha256 cd), a.json's is p.so (sha256 ab) (shards "
            "of other plugin files ran other kernels)");
}

// Hot inputs (and the L2 flush of two cold runs) shape a timing but are not in the rows.
TEST(Sidecar, TimingContextFromBothSidecars) {
  using J = nlohmann::json;
  const std::string s = sidecar(1, "", "u");
  const std::string hot = edited(s, [](J& j) { j["settings"]["hot_inputs"] = true; });
  EXPECT_EQ(timing_context_mismatch(s, "b.json", s, "c.json"), "");
  EXPECT_EQ(timing_context_mismatch(s, "b.json", hot, "c.json"),
            "c.json: settings.hot_inputs is true, b.json's is false");
  const auto cold = [&](const char* flush) {
    return edited(s, [flush](J& j) {
      j["settings"]["mode"] = "cold";
      j["settings"]["l2_flush"] = flush;
    });
  };
  EXPECT_EQ(timing_context_mismatch(cold("read"), "b.json", cold("memset"), "c.json"),
            "c.json: settings.l2_flush is \"memset\", b.json's is \"read\"");
  // Hot inputs: a sidecar without the key (results/h200/smoke.csv.json) had none.
  const std::string unset = edited(s, [](J& j) { j["settings"].erase("hot_inputs"); });
  const std::string off = edited(s, [](J& j) { j["settings"]["hot_inputs"] = false; });
  EXPECT_EQ(timing_context_mismatch(unset, "b.json", off, "c.json"), "");
  EXPECT_EQ(timing_context_mismatch(off, "b.json", unset, "c.json"), "");
  EXPECT_EQ(timing_context_mismatch(unset, "b.json", hot, "c.json"),
            "c.json: settings.hot_inputs is true, b.json's is false");
  // The timer: a sidecar without one was timed by events.
  const std::string cupti = edited(s, [](J& j) { j["settings"]["timer"] = "cupti"; });
  const std::string untimed = edited(s, [](J& j) { j["settings"].erase("timer"); });
  EXPECT_EQ(timing_context_mismatch(untimed, "b.json", s, "c.json"), "");
  EXPECT_EQ(timing_context_mismatch(untimed, "b.json", cupti, "c.json"),
            "c.json: settings.timer is \"cupti\", b.json's is \"events\"");
  // The context: a sidecar without one had hot inputs (after_producer) or none (back_to_back).
  const auto in_context = [&](const char* context, int mib) {
    return edited(s, [=](J& j) {
      j["settings"]["context"] = context;
      j["settings"]["layer_mib"] = mib;
    });
  };
  const std::string old_hot = edited(hot, [](J& j) {
    j["settings"].erase("context");
    j["settings"].erase("layer_mib");
  });
  const std::string new_hot =
      edited(in_context("after_producer", 48), [](J& j) { j["settings"]["hot_inputs"] = true; });
  EXPECT_EQ(timing_context_mismatch(old_hot, "b.json", new_hot, "c.json"), "");
  EXPECT_EQ(timing_context_mismatch(untimed, "b.json", in_context("cold", 48), "c.json"),
            "c.json: settings.context is \"cold\", b.json's is \"back_to_back\"");
  EXPECT_EQ(
      timing_context_mismatch(in_context("layer", 48), "b.json", in_context("layer", 8), "c.json"),
      "c.json: settings.layer_mib is 8, b.json's is 48");
  EXPECT_EQ(
      timing_context_mismatch(in_context("cold", 48), "b.json", in_context("cold", 8), "c.json"),
      "");
  // Launches per window: another graph-replay share per launch; cold mode launches once; a
  // sidecar without the key is not compared on it.
  const auto launches = [&](const char* mode, int n) {
    return edited(s, [=](J& j) {
      j["settings"]["mode"] = mode;
      j["settings"]["launches_per_sample"] = n;
    });
  };
  EXPECT_EQ(
      timing_context_mismatch(launches("graph", 20), "b.json", launches("graph", 1), "c.json"),
      "c.json: settings.launches_per_sample is 1, b.json's is 20");
  EXPECT_EQ(timing_context_mismatch(launches("hot", 20), "b.json", launches("hot", 5), "c.json"),
            "c.json: settings.launches_per_sample is 5, b.json's is 20");
  EXPECT_EQ(timing_context_mismatch(launches("cold", 20), "b.json", launches("cold", 1), "c.json"),
            "");
  const std::string no_count =
      edited(launches("graph", 20), [](J& j) { j["settings"].erase("launches_per_sample"); });
  EXPECT_EQ(timing_context_mismatch(no_count, "b.json", launches("graph", 1), "c.json"), "");
  // A sidecar cut short, empty or {} says nothing of how its run was timed: refused, naming it
  // (it used to be passed over, and a hot-input run was gated against a cold one).
  const auto refusal = [](const std::function<std::string()>& f) {
    try {
      return "no error: " + f();
    } catch (const SidecarError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(refusal([&] { return timing_context_mismatch("{}", "b.json", hot, "c.json"); }),
            "b.json: key 'config': expected an object, missing");
  EXPECT_EQ(refusal([&] {
              return timing_context_mismatch(hot, "b.json", "", "c.json");
            }).rfind("c.json: not a kvbench sidecar (", 0),
            0u);
  EXPECT_EQ(refusal([&] {
              return timing_context_mismatch(hot, "b.json", hot.substr(0, hot.size() / 2),
                                             "c.json");
            }).rfind("c.json: not a kvbench sidecar (", 0),
            0u);
  // Before a run: the baseline's sidecar against the settings the run will record.
  const std::string run_hot = J::parse(hot)["settings"].dump();
  EXPECT_EQ(run_context_mismatch(unset, "b.json", run_hot, "this run"),
            "this run: settings.hot_inputs is true, b.json's is false");
  EXPECT_EQ(run_context_mismatch(hot, "b.json", run_hot, "this run"), "");
  EXPECT_EQ(refusal([&] { return run_context_mismatch("{}", "b.json", run_hot, "this run"); }),
            "b.json: key 'config': expected an object, missing");
}

TEST(Sidecar, ShardsOfOtherSettingsAreNotMerged) {
  const ShardRecord a = read_shard_record(sidecar(1, "0/2", "u"), "a.json");
  EXPECT_EQ(
      shard_mismatch(a, "a.json", read_shard_record(sidecar(1, "1/2", "v"), "b.json"), "b.json"),
      "");
  EXPECT_EQ(
      shard_mismatch(a, "a.json", read_shard_record(sidecar(2, "1/2", "v"), "b.json"), "b.json"),
      "b.json: settings.seed is 2, a.json's is 1 (shards run with other settings measure "
      "other things)");
  EXPECT_EQ(
      shard_mismatch(a, "a.json", read_shard_record(sidecar(1, "1/3", "v"), "b.json"), "b.json"),
      "b.json: the shard count is 3, a.json's is 2 (shards of different splits)");
}

}  // namespace
}  // namespace kvbench

namespace kvbench {
namespace {

std::string resume_refusal(const std::string& text,
                           const std::vector<std::vector<std::string>>& cases) {
  try {
    match_resume_rows(parse_resume_rows(text, "r.csv"), cases, "r.csv");
  } catch (const ResultCsvError& e) {
    return e.what();
  }
  return "";
}

// Every committed sidecar reads as merge and --resume read it.
TEST(Sidecar, CommittedSidecarsPassTheChecks) {
  const std::string root = std::string(KVBENCH_SOURCE_DIR) + "/results/h200/";
  int n = 0;
  for (const char* name :
       {"perf.csv.json", "smoke.csv.json", "default.csv.json", "rotated/decode_61.csv.json",
        "rotated/perf_rotated.csv.json", "resilience/fault.csv.json"}) {
    const std::string path = root + name;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NO_THROW(check_sidecar(text, path)) << path;
    EXPECT_NO_THROW(read_shard_record(text, path)) << path;
    ++n;
  }
  EXPECT_EQ(n, 6);
}

// --resume keeps only rows of the cases it selects, each once; a cut last line is not a row.
TEST(Resume, RowsOfOtherCasesAreRefused) {
  Row a, b;
  a.c = cache_case(1, 8, 128);
  b.c = cache_case(2, 8, 128);
  a.status = Status::passed;
  b.status = Status::failed;
  const auto key = [](const Case& c) {
    std::vector<std::string> k = case_fields(c);
    k[2] = c.sweep;
    return k;
  };
  const std::string text = csv_header() + "\n" + csv_line(a) + "\n" + csv_line(b) + "\n";
  const ResumeRows rows = parse_resume_rows(text + "2,cut", "r.csv");
  EXPECT_EQ(rows.keep_bytes, text.size());
  ASSERT_EQ(rows.rows.size(), 2u);
  EXPECT_FALSE(rows.rows[0].failed);
  EXPECT_TRUE(rows.rows[1].failed);
  EXPECT_EQ(match_resume_rows(rows, {key(b.c), key(a.c)}, "r.csv"),
            (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(resume_refusal(text, {key(a.c)}).rfind("r.csv:3: a case this run does not select (", 0),
            0u);
  EXPECT_EQ(resume_refusal(text + csv_line(a) + "\n", {key(a.c), key(b.c)})
                .rfind("r.csv:4: the case of line 2 again (", 0),
            0u);
  EXPECT_THROW(parse_resume_rows("kernel\n", "r.csv"), ResultCsvError);
  EXPECT_THROW(parse_resume_rows(csv_header() + "\n2,a,b\n", "r.csv"), ResultCsvError);
}

}  // namespace
}  // namespace kvbench

// What `run` hands its workers is the sidecar's settings object; the worker reads every field
// back as it was (each set away from its default, so a field left out reads as a difference).
TEST(WorkerSettings, EverySettingReadsBackAsTheSidecarRecordsIt) {
  kvbench::RunSettings s;
  s.seed = 18446744073709551615ull;
  s.mode = kvbench::TimingMode::cold;
  s.warmup = 3;
  s.min_samples = 4;
  s.min_time_s = 0.1 + 0.2;  // not exactly 0.3: the round trip keeps every bit
  s.target_noise = 0.125;
  s.timeout_s = 7.5;
  s.launches_per_sample = 6;
  s.l2_flush = kvbench::L2Flush::memset;
  s.rotate = kvbench::kRotateAuto;
  s.hot_inputs = true;
  s.timer = kvbench::Timer::cupti;
  s.context = kvbench::Context::after_producer;
  s.layer_mib = 9;
  const std::string sent = kvbench::settings_to_json(s);
  const kvbench::RunSettings got = kvbench::settings_from_json(sent, "--setup");
  EXPECT_EQ(got.seed, s.seed);
  EXPECT_EQ(got.mode, s.mode);
  EXPECT_EQ(got.warmup, s.warmup);
  EXPECT_EQ(got.min_samples, s.min_samples);
  EXPECT_EQ(got.min_time_s, s.min_time_s);
  EXPECT_EQ(got.target_noise, s.target_noise);
  EXPECT_EQ(got.timeout_s, s.timeout_s);
  EXPECT_EQ(got.launches_per_sample, s.launches_per_sample);
  EXPECT_EQ(got.l2_flush, s.l2_flush);
  EXPECT_EQ(got.rotate, s.rotate);
  EXPECT_EQ(got.hot_inputs, s.hot_inputs);
  EXPECT_EQ(got.timer, s.timer);
  EXPECT_EQ(got.context, s.context);
  EXPECT_EQ(got.layer_mib, s.layer_mib);
  // The sidecar's object, key for key.
  kvbench::RunMetadata meta;
  meta.settings = s;
  const auto sidecar = nlohmann::json::parse(kvbench::metadata_to_json(meta))["settings"];
  EXPECT_EQ(sidecar, nlohmann::json::parse(sent));
  EXPECT_EQ(kvbench::settings_to_json(got), sent);
}

TEST(WorkerSettings, AMissingOrWrongKeyIsNamed) {
  auto j = nlohmann::json::parse(kvbench::settings_to_json(kvbench::RunSettings{}));
  j.erase("rotate");
  EXPECT_THROW(
      {
        try {
          kvbench::settings_from_json(j.dump(), "--setup");
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "--setup: settings.rotate is missing");
          throw;
        }
      },
      std::invalid_argument);
  j["rotate"] = "1";
  j["mode"] = 5;
  EXPECT_THROW(kvbench::settings_from_json(j.dump(), "--setup"), std::invalid_argument);
  j["mode"] = "graph";
  j["hot_inputs"] = true;  // beside context back_to_back: the two disagree
  EXPECT_THROW(kvbench::settings_from_json(j.dump(), "--setup"), std::invalid_argument);
  j["hot_inputs"] = false;
  j["extra"] = 1;
  EXPECT_THROW(kvbench::settings_from_json(j.dump(), "--setup"), std::invalid_argument);
}
