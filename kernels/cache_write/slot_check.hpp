// The device pre-pass of `kvbench run --check-bounds` (SPEC.md §2, bad input): scans
// slot_mapping (and the SWA table) on the device and finds the first token whose slot would
// write outside the cache, so the cache write is never launched with it. Plain C++ interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kvbench::kernels {

struct SlotCheckArgs {
  const std::int64_t* slot_mapping;      // [T]; < 0 skips the token
  const std::int64_t* swa_slot_mapping;  // [swa_size] logical -> physical, or nullptr
  std::int64_t num_tokens, swa_size;
  std::int64_t num_slots;  // NB * BS
  // [1] device memory: the first bad token, or kNoBadToken. The launch resets it first.
  unsigned long long* first_bad;
};

inline constexpr unsigned long long kNoBadToken = ~0ull;

// Enqueues reset + scan on `stream`. A token is bad when its slot is >= num_slots, or with SWA
// when its logical slot is >= swa_size or the physical slot it maps to is >= num_slots.
// Negative slots (padding, evicted SWA entries) are never bad.
cudaError_t launch_slot_check(const SlotCheckArgs& args, cudaStream_t stream);

}  // namespace kvbench::kernels
