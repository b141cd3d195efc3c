// Case builders shared by the tests: one case of each operation from the few fields a test
// varies; every other field keeps its operation's default (bf16 -> bf16, contiguous strides,
// NHD, random slots).
#pragma once

#include <cstdint>

#include "core/operation.hpp"
#include "ops/cache_write/operation.hpp"
#include "ops/concat_mha_k/operation.hpp"
#include "ops/mla_cache/operation.hpp"

namespace kvbench::testing_support {

inline Case concat_case(std::int64_t T, std::int64_t H, std::int64_t nope = 128,
                        std::int64_t rope = 64, StrideMode strides = StrideMode::contiguous) {
  Case c = operation(Kernel::concat_mha_k).default_case();
  c.num_tokens = T;
  c.num_heads = H;
  params_of<ConcatParams>(c).nope_dim = nope;
  params_of<ConcatParams>(c).rope_dim = rope;
  c.strides = strides;
  return c;
}

inline Case cache_case(std::int64_t T, std::int64_t H, std::int64_t D, std::int64_t BS = 16) {
  Case c = operation(Kernel::cache_write).default_case();
  c.num_tokens = T;
  c.num_heads = H;
  params_of<CacheWriteParams>(c).head_size = D;
  params_of<CacheWriteParams>(c).block_size = BS;
  return c;
}

inline Case mla_case(std::int64_t T, std::int64_t L = 512, std::int64_t R = 64,
                     std::int64_t BS = 64) {
  Case c = operation(Kernel::mla_cache).default_case();
  c.num_tokens = T;
  params_of<MlaCacheParams>(c).lora_rank = L;
  params_of<MlaCacheParams>(c).rope_dim = R;
  params_of<MlaCacheParams>(c).block_size = BS;
  return c;
}

// The operation's parameters of a test case, for the fields a test sets.
inline ConcatParams& concat_params(Case& c) { return params_of<ConcatParams>(c); }
inline CacheWriteParams& cache_params(Case& c) { return params_of<CacheWriteParams>(c); }
inline MlaCacheParams& mla_params(Case& c) { return params_of<MlaCacheParams>(c); }
inline const MlaCacheParams& mla_params(const Case& c) { return params_of<MlaCacheParams>(c); }
inline const ConcatParams& concat_params(const Case& c) { return params_of<ConcatParams>(c); }
inline const CacheWriteParams& cache_params(const Case& c) {
  return params_of<CacheWriteParams>(c);
}

}  // namespace kvbench::testing_support
