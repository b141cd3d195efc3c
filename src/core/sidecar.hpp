// Reading sidecars (<csv>.json, written by metadata_to_json) back: the device a worker reports,
// the check that lets --resume append to a run, and the merged sidecar of `kvbench merge`.
// Pure functions of JSON text.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvbench {

class SidecarError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceIdentity {
  std::string name, uuid;
};
// The device of one device_entry_json() object. Throws SidecarError on malformed JSON.
DeviceIdentity device_identity(const std::string& entry_json);

// The "devices" entries of a sidecar (device_entry_json objects, one line each) and its
// started_at; empty when absent.
std::vector<std::string> sidecar_devices(const std::string& sidecar_text);
std::string sidecar_started_at(const std::string& sidecar_text);

// What --resume needs to agree on between the sidecar of the run being resumed (`before`) and
// the one of this run (`now`): the config's hash, every setting, --case and --shard. Returns
// "" when they agree, else one line naming the first difference, e.g.
// "settings.seed is 1 in results/x.csv.json, 2 now". `before_path` names the old sidecar.
std::string resume_mismatch(const std::string& before, const std::string& now,
                            const std::string& before_path);

// What `kvbench merge` reads from a shard's sidecar.
struct ShardRecord {
  std::string config_path, config_hash;
  std::string shard;                        // "I/N"; empty when the run was not sharded
  std::vector<std::size_t> selected_cases;  // --case; empty: all
};
ShardRecord read_shard_record(const std::string& sidecar_text, const std::string& path);

// The merged sidecar: the first shard's, with `csv` set to `csv_path`, every shard's devices
// (one entry per device UUID and host), cases counted over all shards, the earliest start and
// the latest finish, `interrupted` if any shard was, and the shard files under "merged_from".
std::string merge_sidecars(const std::vector<std::string>& texts,
                           const std::vector<std::string>& paths, const std::string& csv_path,
                           std::size_t cases_expected);

}  // namespace kvbench
