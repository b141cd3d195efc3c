// concat_and_cache_mla on the host, the parts that need no GPU and no kernel: its YAML axes and
// defaults, variants, geometry and bytes, slots, input checks and injections, and where a
// mismatching cache element is (mismatch reports). Its launch arguments and plan: launch.hpp;
// its run stages: stages.cpp; its kernels: kernels/mla_cache/.
//
// kv_c [T, L] and k_pe [T, R] -> one L + R entry per token's slot of the cache [NB, BS, L + R]
// (SPEC.md §5), or one 656-byte fp8_ds_mla entry (SPEC.md §6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operation.hpp"
#include "ops/mla_cache/params.hpp"

namespace kvbench {

const Operation& mla_cache_operation();

// "" when the case's layout, scale, cache dtype and widths go together, else why not (the row is
// not_supported): fp8_ds_mla takes fp8_e4m3, a tile rule, L = 512 and R = 64; nhd no tile rule.
std::string mla_refusal(const Case& c);

// Geometry, in elements of each tensor's dtype.
struct MlaCacheGeometry {
  std::int64_t kv_c_s0, k_pe_s0;        // input token strides
  std::int64_t kv_c_elems, k_pe_elems;  // input allocations
  std::int64_t entry_elems;             // L + R, or 656 (bytes) for fp8_ds_mla: what a token writes
  std::int64_t entry_stride;            // between the entries of a block
  std::int64_t block_stride;            // between blocks
  std::int64_t num_blocks, num_slots;   // NB, NB * BS
  std::int64_t cache_elems;             // NB * block_stride
  // Canary elements before and after the cache in the runner's buffer (one block stride): a
  // write to slot -1 or NB*BS lands there and is reported, instead of corrupting other memory.
  std::int64_t guard_elems;
};
MlaCacheGeometry mla_cache_geometry(const Case& c);

// Logical bytes moved (SPEC.md §5): every token's slot_mapping entry; each written token's kv_c
// and k_pe read and its entry written. Throws SizeOverflow when a size does not fit 64 bits.
std::int64_t mla_cache_bytes(const Case& c, std::int64_t written_tokens);

// Slots of the case's SlotPattern, seeded: distinct random ones, one run of consecutive ones, or
// random with every 8th token -1 (padding).
std::vector<std::int64_t> make_mla_slots(const Case& c, const MlaCacheGeometry& g,
                                         std::uint64_t seed);
std::int64_t written_tokens(const std::vector<std::int64_t>& slots);

// SPEC.md §5's bad input: slots and strides (the scale: core/validate.hpp). "" when valid, else
// one line naming the first offending token or stride; slots are checked by the cache write's
// own rule (ops/cache_write/operation.hpp, check_slots).
std::string check_mla_slots(const std::vector<std::int64_t>& slots, const MlaCacheGeometry& g);
std::string check_mla_strides(const Case& c, const MlaCacheGeometry& g);

// Applies c.inject to freshly generated slots, scale and geometry. "" when applied (or
// Inject::none), else why this injection does not apply (reported as not_supported).
std::string inject_mla(const Case& c, MlaCacheGeometry& g, std::vector<std::int64_t>& slots,
                       std::vector<float>& scale);

// Output element `index` of the runner's buffer (its guard first), and the token that writes it
// (owners: the token per slot, -1 for none): "cache[block 3, entry 5, 130 (kv_c 130)] (slot 197)
// of token 4", "padding after cache[block 3, entry 5] (+2)", "guard after the cache (+7)".
std::string locate_mla(const Case& c, const MlaCacheGeometry& g,
                       const std::vector<std::int64_t>& owners, std::int64_t index);

// The token that writes each slot, or -1.
std::vector<std::int64_t> mla_slot_owners(const std::vector<std::int64_t>& slots,
                                          const MlaCacheGeometry& g);

}  // namespace kvbench
