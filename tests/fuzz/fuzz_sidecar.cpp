// Fuzzes the sidecar readers of `kvbench merge` and `run --resume`: every input is checked, read
// as a shard's record, merged with itself and compared with a valid sidecar for --resume; each
// either works or throws SidecarError (the JSON parser's errors included).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/metadata.hpp"
#include "core/sidecar.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::string now = [] {
    kvbench::RunMetadata m;
    m.config_path = "c.yaml";
    m.config_fnv1a64 = "0123456789abcdef";
    return kvbench::metadata_to_json(m);
  }();
  try {
    kvbench::resume_mismatch(text, now, "fuzz.json");
  } catch (const kvbench::SidecarError&) {
  }
  try {
    kvbench::check_sidecar(text, "fuzz.json");
    const kvbench::ShardRecord r = kvbench::read_shard_record(text, "fuzz.json");
    kvbench::shard_mismatch(r, "a.json", r, "b.json");
    for (const std::string& d : kvbench::sidecar_devices(text, "fuzz.json"))
      kvbench::device_identity(d);
    kvbench::sidecar_started_at(text, "fuzz.json");
    kvbench::merge_sidecars({text, text}, {"a.json", "b.json"}, "m.csv", 2);
  } catch (const kvbench::SidecarError&) {
  }
  return 0;
}
