// Deliberately wrong kernels, each with one bug a real port could have. tests/test_planted_gpu.cpp
// runs them through the runner's validation path (LaunchOverride) and asserts that every one
// is reported incorrect. With Bug::none they are correct, which the tests check as a control.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cache_write/cache_write.hpp"
#include "kernels/concat_mha_k/concat_mha_k.hpp"
#include "kernels/mla_cache/mla_cache.hpp"

namespace kvbench::testing {

enum class Bug {
  none,
  // concat
  wrong_head_stride,     // reads k_nope with the dense head stride NOPE instead of nope_s1
  rope_not_broadcast,    // writes rope into head 0 only
  last_element_skipped,  // never writes the very last output element
  truncation,            // fp32 -> bf16 by dropping the low 16 bits instead of RNE
  double_rounding,       // fp32 -> bf16 -> fp8_e4m3: two roundings instead of one
  // cache write
  slot_off_by_one,      // writes slot s + 1
  padding_written,      // no `slot < 0` test: padding tokens write slot -1
  swa_before_negative,  // the seed's bug: swa_slot_mapping[slot] read before `slot < 0`
  cache_head_stride,    // head stride D whatever the layout (wrong for HND)
  skip_slot_written,    // ignores skip_slot
  reciprocal_scale,     // x * (1 / scale) instead of the correctly rounded x / scale
  // concat_and_cache_mla (also: slot_off_by_one, padding_written)
  rope_boundary,  // k_pe written from element L - 1 instead of L
  // concat_and_cache_mla, fp8_ds_mla
  wrong_tile_scale,    // each tile's scale one ulp above the rule's
  rope_quantized,      // k_pe stored as e4m3 codes instead of bf16
  scale_rule_swapped,  // pow2 where raw is asked, raw where pow2 is
  tile_boundary,       // tiles start one element early: element 128i - 1 is in tile i
  // reshape_and_cache_flash, per_token_head (also: slot_off_by_one, padding_written,
  // swa_before_negative, skip_slot_written)
  row_scale_wrong,     // each row's scale one ulp above the rule's
  row_scale_first,     // the scale stored before the row's codes instead of after them
  token_scale_shared,  // one scale per token from the amax over all its heads
};

cudaError_t launch_planted_concat(const kernels::ConcatArgs& a, Bug bug, cudaStream_t stream);
cudaError_t launch_planted_cache_write(const kernels::CacheWriteArgs& a, Bug bug,
                                       cudaStream_t stream);
cudaError_t launch_planted_mla_cache(const kernels::MlaCacheArgs& a, Bug bug, cudaStream_t stream);

}  // namespace kvbench::testing
