// A benchmark case: one point of a sweep, and the tensor geometry it implies.
// Pure data and pure functions: no CUDA, no YAML, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "core/types.hpp"

namespace kvbench {

// One point of a sweep. Fields that a kernel does not use keep their defaults and are written
// to the CSV as they are, so every row has the same columns.
struct Case {
  std::string sweep;  // name of the sweep it came from
  Kernel kernel = Kernel::concat_mla_k;
  Variant variant = Variant::seed_port;
  DType in_dtype = DType::bf16;
  DType out_dtype = DType::bf16;
  StrideMode strides = StrideMode::contiguous;
  std::int64_t num_tokens = 1;
  std::int64_t num_heads = 1;
  std::int64_t head_dim = 128;  // concat: NOPE; cache write: D
  std::int64_t rope_dim = 0;    // concat only
  // Cache write only.
  std::int64_t block_size = 16;
  Layout layout = Layout::nhd;
  ScaleMode scale = ScaleMode::none;
  bool swa = false;
  bool kv_interleaved = false;  // K and V blocks interleaved in one buffer (block stride 2x)
  SlotPattern slots = SlotPattern::random;
  Inject inject = Inject::none;  // deliberate bad input (both kernels)
};

// Short human-readable identity, e.g. "reshape_and_cache_flash T=128 H=8 D=128 bf16->bf16 ...".
std::string describe(const Case& c);

// Concat geometry, in elements. k_nope [T, H, NOPE], k_rope [T, 1, ROPE], k [T, H, NOPE+ROPE].
struct ConcatGeometry {
  std::int64_t nope_s0, nope_s1;
  std::int64_t rope_s0;
  std::int64_t k_s0, k_s1;
  std::int64_t nope_elems, rope_elems, k_elems;  // allocation sizes
  // Canary elements before and after k in the runner's output buffer: a write one token out of
  // range lands there and is reported, instead of corrupting other memory.
  std::int64_t guard_elems;
};
ConcatGeometry concat_geometry(const Case& c);

// Cache-write geometry, in elements (slots and blocks in slots/blocks).
struct CacheGeometry {
  std::int64_t key_s0, key_s1;      // key and value share these
  std::int64_t num_blocks;          // NB
  std::int64_t num_slots;           // NB * BS: the physical slots
  std::int64_t logical_slots;       // S: slot_mapping's range when SWA is on, else num_slots
  std::int64_t block_stride;        // elements between consecutive blocks of one cache
  std::int64_t slot_stride;         // elements between consecutive slots of a block
  std::int64_t head_stride;         // elements between consecutive heads of a slot
  std::int64_t value_cache_offset;  // elements from the K base to the V base
  std::int64_t key_elems;           // allocation of key (and of value)
  std::int64_t cache_elems;         // allocation holding both caches
  std::int64_t skip_slot;           // -1 when unused
  // Canary elements before and after both caches in the runner's buffer (one block stride): a
  // write to slot -1 or NB*BS lands there and is reported, instead of corrupting other memory.
  std::int64_t guard_elems;
};
CacheGeometry cache_geometry(const Case& c);

// Logical bytes moved (SPEC.md §4). The cache write depends on the slot data: every token reads
// its slot_mapping entry, tokens with a slot >= 0 do one SWA lookup when SWA is on, and only
// written tokens move K and V.
// Each of these throws SizeOverflow (core/checked.hpp) when a size does not fit 64 bits.
std::int64_t concat_bytes(const Case& c);
std::int64_t cache_write_bytes(const Case& c, std::int64_t swa_lookups,
                               std::int64_t written_tokens);

// Computes every size of the case (geometry and bytes, at most tokens written); throws
// SizeOverflow naming the operands when one does not fit. The sweep parser calls it per case.
void check_sizes(const Case& c);

}  // namespace kvbench
