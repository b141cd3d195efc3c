// Division by a divisor fixed at launch, for the index arithmetic of the optimized kernels: a
// 32-bit division by a runtime value is a long instruction sequence, this is one wide multiply
// and a shift. Plain C++ so that the CPU tests can check it.
#pragma once

#include <cstdint>

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

}  // namespace kvbench::kernels
