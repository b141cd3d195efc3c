// reshape_and_cache_flash on the host, the parts that need no GPU and no kernel: its YAML axes
// and defaults, variants, geometry and bytes, slots, input checks and injections, and where a
// mismatching cache element is (mismatch reports). Its launch arguments and plan: launch.hpp;
// its run stages: stages.cpp; its kernels: kernels/cache_write/.
//
// key, value [T, H, D] -> the paged K and V caches at each token's slot (SPEC.md §2); with scale
// per_token_head, each (token, head) row quantized to e4m3 and followed by its fp32 scale
// (SPEC.md §7).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operation.hpp"
#include "ops/cache_write/params.hpp"

namespace kvbench {

const Operation& cache_write_operation();

// "" when the case's scale, dtypes and head size go together, else why not (the row is
// not_supported): per_token_head quantizes bf16 or f16 inputs into an fp8_e4m3 cache (the only
// format SPEC.md §7 defines) with D a multiple of 4, so that every row's fp32 scale is aligned.
std::string token_head_refusal(const Case& c);

// Geometry, in elements (slots and blocks in slots/blocks). With per_token_head the cache is bytes
// and each (slot, head) row is D + 4 of them: the D e4m3 codes, then the fp32 scale.
struct CacheGeometry {
  std::int64_t key_s0, key_s1;      // key and value share these
  std::int64_t num_blocks;          // NB
  std::int64_t num_slots;           // NB * BS: the physical slots
  std::int64_t logical_slots;       // S: slot_mapping's range when SWA is on, else num_slots
  std::int64_t block_stride;        // elements between consecutive blocks of one cache
  std::int64_t slot_stride;         // elements between consecutive slots of a block
  std::int64_t head_stride;         // elements between consecutive heads of a slot
  std::int64_t row;                 // cache elements of one (slot, head): D, or D + 4
  std::int64_t value_cache_offset;  // elements from the K base to the V base
  std::int64_t key_elems;           // allocation of key (and of value)
  std::int64_t cache_elems;         // allocation holding both caches
  std::int64_t skip_slot;           // -1 when unused
  // Canary elements before and after both caches in the runner's buffer (one block stride): a
  // write to slot -1 or NB*BS lands there and is reported, instead of corrupting other memory.
  std::int64_t guard_elems;
};
CacheGeometry cache_geometry(const Case& c);

// Logical bytes moved (SPEC.md §4, §7), which depend on the slot data: every token reads its
// slot_mapping entry, tokens with a slot >= 0 do one SWA lookup when SWA is on, and only written
// tokens move K and V (per_token_head: D + 4 bytes written per row, its scale included). Throws
// SizeOverflow (core/checked.hpp) when a size does not fit 64 bits.
std::int64_t cache_write_bytes(const Case& c, std::int64_t swa_lookups,
                               std::int64_t written_tokens);

struct SlotData {
  std::vector<std::int64_t> slot_mapping;  // [T]
  std::vector<std::int64_t> swa_table;     // [logical_slots] when SWA is on, else empty
  std::int64_t swa_lookups = 0;            // tokens that read swa_table
  std::int64_t written_tokens = 0;         // tokens that write K and V
};

// Slots following the case's SlotPattern, seeded. With SWA, slot_mapping holds logical slots
// and the table maps each used one to a distinct physical slot (every 16th used entry is -1:
// skipped).
SlotData make_slots(const Case& c, const CacheGeometry& g, std::uint64_t seed);

// SPEC.md §2's bad-input rules for slots. Returns "" when valid, else a one-line reason naming
// the first offending token (slot out of range, SWA index out of range, duplicate physical slot).
std::string check_slots(const SlotData& s, const CacheGeometry& g);

// Every stride at least the dense extent of what it spans: a head stride >= D, a token stride
// >= (H - 1) * head stride + D, a block stride >= the dense block, and the K and V caches
// disjoint; per_token_head: the block stride and the V cache's offset multiples of 4 bytes, so
// every fp32 scale is aligned. "" when valid.
std::string check_cache_strides(const Case& c, const CacheGeometry& g);

// Applies c.inject to freshly generated slots, scales and geometry. "" when applied (or
// Inject::none), else why this injection does not apply (reported as not_supported).
std::string inject_cache(const Case& c, CacheGeometry& g, SlotData& s, std::vector<float>& k_scale);

// Where output element `index` of the runner's buffer (its guard first) is.
struct CacheLocation {
  enum class Where { element, padding, guard_before, guard_after };
  Where where = Where::padding;
  bool value_cache = false;  // element: V (else K)
  std::int64_t block = 0, offset = 0, head = 0, dim = 0;
  std::int64_t scale_byte = -1;  // element, per_token_head: byte of the row's scale (dim unused)
  std::int64_t slot = 0;         // element: block * BS + offset
  std::int64_t rel = 0;          // guard_*: elements from the guard's start
};
CacheLocation locate_cache(const Case& c, const CacheGeometry& g, std::int64_t index);
// "value_cache[block 7, offset 3, head 1, dim 64] (slot 115)", "key_cache[block 7, offset 3,
// head 1, scale byte 2] (slot 115)", "padding (outside any K/V element)", "guard before the
// caches (+3)".
std::string to_string(const CacheLocation& l);

// The token that writes each physical slot, or -1: what a cache mismatch is attributed to.
std::vector<std::int64_t> slot_owners(const SlotData& s, const CacheGeometry& g);

}  // namespace kvbench
