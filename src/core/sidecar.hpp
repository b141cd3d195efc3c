// Reading sidecars (<csv>.json, written by metadata_to_json) back: the device a worker reports,
// the check that lets --resume append to a run, and the merged sidecar of `kvbench merge`.
// Pure functions of JSON text.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvbench {

class SidecarError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceIdentity {
  std::string name, uuid;
};
// The device of one device_entry_json() object. Throws SidecarError on malformed JSON or a
// name or uuid that is not a string.
DeviceIdentity device_identity(const std::string& entry_json);

// The "devices" entries of a sidecar (device_entry_json objects, one line each) and its
// started_at; empty when absent. Both check the sidecar first (check_sidecar, naming `path`).
std::vector<std::string> sidecar_devices(const std::string& sidecar_text,
                                         const std::string& path = "sidecar");
std::string sidecar_started_at(const std::string& sidecar_text,
                               const std::string& path = "sidecar");

// What --resume needs to agree on between the sidecar of the run being resumed (`before`) and
// the one of this run (`now`): the config's hash, the build (git_sha, git_dirty), every setting,
// --case and --shard. Returns
// "" when they agree, else one line naming the first difference, e.g.
// "settings.seed is 1 in results/x.csv.json, 2 now". `before_path` names the old sidecar.
std::string resume_mismatch(const std::string& before, const std::string& now,
                            const std::string& before_path);

// Every key of a sidecar that kvbench reads back (merge, --resume), checked for its type and
// range: throws SidecarError "PATH: key 'devices[1]': expected an object, got 2" naming the
// file and the key. Keys kvbench does not read are not checked.
void check_sidecar(const std::string& sidecar_text, const std::string& path);

// What `kvbench merge` reads from a shard's sidecar (checked as check_sidecar does).
struct ShardRecord {
  std::string config_path, config_hash;
  std::string shard;                        // "I/N"; empty when the run was not sharded
  std::size_t shard_count = 1;              // N of `shard`; 1 when not sharded
  std::vector<std::size_t> selected_cases;  // --case; empty: all
  // settings.*: each key and its value as JSON text, in the file's order.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string git_sha;  // the build
  bool git_dirty = false;
  std::string device_name;  // device.name, the GPU model; empty when no device was recorded
  std::vector<std::string> variants;  // --variants; empty: the config's
  // The plugins' and Python variants and their operations (plugins[].variants and .kernels), in
  // order; a name of several operations once per operation.
  std::vector<std::pair<std::string, std::string>> plugin_variants;  // (variant, kernel)
  std::string plugins;  // the plugins key as JSON text; "" when absent or empty
  // What the plugins are, not where they were: each one's SHA-256, size, variants, kernels and
  // whether in-process, in order (a path differs between hosts and working directories).
  std::string plugin_identity;
};
ShardRecord read_shard_record(const std::string& sidecar_text, const std::string& path);

// "" when shard `b` (sidecar at `b_path`) may be merged with shard `a`: the same config, --case,
// shard count, settings, build (git_sha, git_dirty), GPU model (where both recorded one),
// --variants and plugin files. Else
// one line naming the first difference and both values, e.g. "s1.csv.json: settings.mode is
// \"cold\", s0.csv.json's is \"graph\"".
std::string shard_mismatch(const ShardRecord& a, const std::string& a_path, const ShardRecord& b,
                           const std::string& b_path);

// What shapes a timing beyond a row's `mode` and `buffer_sets` columns, from two runs'
// sidecars: settings.hot_inputs, settings.context (absent: after_producer with hot inputs, else
// back_to_back), settings.timer (absent: events), settings.l2_flush when both ran in cold mode
// and settings.layer_mib when both ran in the layer context. "" when they agree; SidecarError
// when either text is not a sidecar that passes check_sidecar (a cut or empty sidecar says
// nothing of how its run was timed); else one line naming the key and both values, e.g.
// "cur.csv.json: settings.hot_inputs is true, base.csv.json's is false".
std::string timing_context_mismatch(const std::string& base_text, const std::string& base_path,
                                    const std::string& cur_text, const std::string& cur_path);

// The same check before a run gated by `run --baseline`: the baseline's sidecar against the
// settings this run will record (settings_to_json), named `cur_name` ("this run"). "" when they
// agree; SidecarError when base_text is not a sidecar that passes check_sidecar.
std::string run_context_mismatch(const std::string& base_text, const std::string& base_path,
                                 const std::string& settings_json, const std::string& cur_name);

// The merged sidecar: the first shard's, with `csv` set to `csv_path`, every shard's devices
// (one entry per device UUID and host), cases counted over all shards, the earliest start and
// the latest finish, `interrupted` if any shard was, and the shard files under "merged_from".
std::string merge_sidecars(const std::vector<std::string>& texts,
                           const std::vector<std::string>& paths, const std::string& csv_path,
                           std::size_t cases_expected);

}  // namespace kvbench
