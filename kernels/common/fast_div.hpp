// Index arithmetic of the optimized kernels: division by a divisor fixed at launch (a 32-bit
// division by a runtime value is a long instruction sequence, this is one wide multiply and a
// shift), and the tests for 32-bit element offsets. Plain C++ so that the CPU tests can check it.
#pragma once

#include <cstdint>
#include <initializer_list>

#ifdef __CUDACC__
#define KVBENCH_HD __host__ __device__ __forceinline__
#else
#define KVBENCH_HD inline
#endif

namespace kvbench::kernels {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 (Granlund and Montgomery, 1994): with 2^l >= d and
// m = ceil(2^(31+l) / d), m·d - 2^(31+l) < d <= 2^l, so floor(n·m / 2^(31+l)) = floor(n / d)
// for every n < 2^31; m < 2^32 (m = 2^31 when d is a power of two).
class FastDiv {
 public:
  FastDiv() = default;
  explicit FastDiv(std::uint32_t d) : d_(d) {
    int l = 0;
    while ((std::uint64_t{1} << l) < d) ++l;
    shift_ = 31 + l;
    m_ = static_cast<std::uint32_t>(((std::uint64_t{1} << shift_) + d - 1) / d);
  }

  KVBENCH_HD std::uint32_t div(std::uint32_t n) const {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * m_) >> shift_);
  }
  KVBENCH_HD std::uint32_t divisor() const { return d_; }

 private:
  std::uint32_t d_ = 1, m_ = 1u << 31;
  int shift_ = 31;
};

// The FastDiv of d where FastDiv takes it (1 <= d < 2^31); else a dummy 1, for callers that take
// the 64-bit division at such sizes (split_slot()).
inline FastDiv fast_div_below_2_31(std::int64_t d) {
  return FastDiv(static_cast<std::uint32_t>(d >= 1 && d < (std::int64_t{1} << 31) ? d : 1));
}

// Slot -> (block, offset in block) of a paged cache. A 64-bit division by a runtime value is a
// long instruction sequence; slots and block sizes below 2^31 take block_div's multiply-shift
// (block_div = fast_div_below_2_31(block_size)), the others the 64-bit division.
KVBENCH_HD void split_slot(std::int64_t slot, std::int64_t block_size, FastDiv block_div,
                           std::int64_t& block, std::int64_t& offset) {
  if (((slot | block_size) >> 31) == 0) {
    const auto s = static_cast<std::uint32_t>(slot);
    const std::uint32_t q = block_div.div(s);
    block = q;
    offset = s - q * block_div.divisor();
  } else {
    block = slot / block_size;
    offset = slot - block * block_size;
  }
}

// Whether every element offset t·s0 + h·s1 + d of a [tokens, heads, dim] view with non-negative
// strides fits in int32, for h < heads, d < dim and t up to tokens + 1023: a kernel's last block
// may form (without using) addresses of up to 1024 tokens past the end.
inline bool offsets_fit_int32(std::int64_t tokens, std::int64_t s0, std::int64_t s1,
                              std::int64_t heads, std::int64_t dim) {
  constexpr std::int64_t kMax = 0x7fffffff, kPast = 1024;
  if (tokens < 1 || heads < 1 || dim < 1 || tokens > kMax - kPast) return false;
  if (s0 < 0 || s1 < 0 || s0 > kMax || s1 > kMax || heads > kMax || dim > kMax) return false;
  // Each term is below 2^62, so the sum cannot overflow int64.
  return (tokens + kPast - 1) * s0 + (heads - 1) * s1 + (dim - 1) <= kMax;
}

// Whether every element offset b·block_stride + o·slot_stride + h·head_stride + d of a paged
// cache of `slots` slots fits in int32 (b < ceil(slots / block_size), o < block_size, h < heads,
// d < dim; strides non-negative), and the slot count with it.
inline bool cache_offsets_fit_int32(std::int64_t slots, std::int64_t block_size,
                                    std::int64_t block_stride, std::int64_t slot_stride,
                                    std::int64_t heads, std::int64_t head_stride,
                                    std::int64_t dim) {
  constexpr std::int64_t kMax = 0x7fffffff;
  for (const std::int64_t v : {slots, block_size, heads, dim})
    if (v < 1 || v > kMax) return false;
  for (const std::int64_t v : {block_stride, slot_stride, head_stride})
    if (v < 0 || v > kMax) return false;
  const std::int64_t terms[] = {(slots + block_size - 1) / block_size - 1,
                                block_stride,
                                block_size - 1,
                                slot_stride,
                                heads - 1,
                                head_stride};
  std::int64_t sum = dim - 1;
  for (int i = 0; i < 6; i += 2) {
    const std::int64_t term = terms[i] * terms[i + 1];  // both below 2^31: no int64 wrap
    if (term > kMax) return false;
    sum += term;  // at most 4 terms of at most kMax each
  }
  return sum <= kMax;
}

}  // namespace kvbench::kernels
