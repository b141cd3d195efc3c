// CPU reference for both operations (SPEC.md §1-§3), written with Eigen over the strided host
// data. Independent of the kernels by design: it includes no kernel header and computes every
// offset itself from the strides it is given. Multi-threaded over tokens.
#pragma once

#include <cstdint>

#include "core/types.hpp"

namespace kvbench::ref {

// Strides are in elements; the innermost dimension is contiguous.
struct ConcatProblem {
  DType in_dtype, out_dtype;
  std::int64_t num_tokens, num_heads, nope_dim, rope_dim;
  const void* k_nope;  // [T, H, NOPE], strides (nope_s0, nope_s1, 1)
  const void* k_rope;  // [T, 1, ROPE], stride (rope_s0, -, 1)
  void* k;             // [T, H, NOPE + ROPE], strides (k_s0, k_s1, 1)
  std::int64_t nope_s0, nope_s1, rope_s0, k_s0, k_s1;
};

// Writes k[t, h, :] = cast(concat(k_nope[t, h, :], k_rope[t, 0, :])) for every t, h; touches
// nothing else in k.
void concat_and_cast_mha_k(const ConcatProblem& p);

struct CacheWriteProblem {
  DType in_dtype, out_dtype;
  std::int64_t num_tokens, num_heads, head_size, block_size, num_blocks;
  const void* key;    // [T, H, D], strides (key_s0, key_s1, 1)
  const void* value;  // [T, H, D], strides (value_s0, value_s1, 1)
  std::int64_t key_s0, key_s1, value_s0, value_s1;
  const std::int64_t* slot_mapping;      // [T]; < 0: skip
  const std::int64_t* swa_slot_mapping;  // [swa_size] or nullptr; < 0: skip
  std::int64_t swa_size;
  std::int64_t skip_slot;  // physical slot never written; -1: none
  Layout layout;           // NHD [NB, BS, H, D] or HND [NB, H, BS, D], dense inside a block
  void* key_cache;         // block b starts at key_cache + b * block_stride elements
  void* value_cache;       // same geometry as key_cache
  std::int64_t block_stride;
  ScaleMode scale;
  const float* k_scale;  // [1] or [H], host memory; unused with ScaleMode::none
  const float* v_scale;
};

// Applies SPEC.md §2 to the caches. Assumes the input was validated (slots in range, no
// duplicates, positive finite scales): see validate() in the runtime.
void reshape_and_cache_flash(const CacheWriteProblem& p);

// NaN bits the reference writes for a NaN result of a rounding conversion, as CUDA's cvt and
// __fdiv_rn do (proven over every input by tests/test_convert_gpu.cpp). Same-type copies and
// widenings to fp32 keep the input's bits; fp8 NaN is 0x7F.
inline constexpr std::uint16_t kCanonicalNaN16 = 0x7FFF;       // fp16 and bf16
inline constexpr std::uint32_t kCanonicalNaN32 = 0x7FFFFFFFu;  // fp32 after a scale

// Scalar conversions of SPEC.md §3, exposed for tests: `in` holds one value of type `from`
// (little-endian bytes), the result is written to `out` as type `to`. Scale is applied as a
// correctly rounded fp32 division before the cast when scale != nullptr.
void convert(DType from, const void* in, DType to, void* out, const float* scale = nullptr);

// The same for n contiguous values (the exhaustive conversion test uses it on 2^32 inputs).
void convert_n(DType from, const void* in, DType to, void* out, std::int64_t n,
               const float* scale = nullptr);

}  // namespace kvbench::ref
