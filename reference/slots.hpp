// SPEC.md §2 steps 1-3, shared by the reference's paged-cache writers: the physical slot a token
// writes, or -1 when it writes nothing. Padding is tested before the SWA lookup, so slot -1 never
// indexes the table.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvbench::ref::detail {

struct SlotMap {
  const std::int64_t* slot_mapping;      // [T]; < 0: skip
  const std::int64_t* swa_slot_mapping;  // [swa_size] or nullptr; < 0: skip
  std::int64_t swa_size;
  std::int64_t skip_slot;  // physical slot never written; -1: none
  std::int64_t capacity;   // NB * BS
  const char* op;          // named in the errors
};

inline std::int64_t physical_slot(const SlotMap& m, std::int64_t t) {
  std::int64_t s = m.slot_mapping[t];
  if (s < 0) return -1;
  if (m.swa_slot_mapping != nullptr) {
    if (s >= m.swa_size)
      throw std::out_of_range(std::string(m.op) + ": SWA index " + std::to_string(s) +
                              " >= " + std::to_string(m.swa_size));
    s = m.swa_slot_mapping[s];
    if (s < 0) return -1;
  }
  if (s == m.skip_slot) return -1;
  if (s >= m.capacity)
    throw std::out_of_range(std::string(m.op) + ": slot " + std::to_string(s) +
                            " >= " + std::to_string(m.capacity));
  return s;
}

}  // namespace kvbench::ref::detail
