#include "reference/reference.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "reference/fp8.hpp"
#include "reference/slots.hpp"

// The scaled cache write is defined as a correctly rounded fp32 division, and Eigen's fp16
// conversion rounds subnormals with an fp32 addition; fast-math (reciprocal division, FTZ/DAZ)
// would silently break both.
#if defined(__FAST_MATH__)
#error "reference.cpp must not be compiled with -ffast-math"
#endif

// Lets the fp8 scalars live in Eigen matrices; they are storage types only (every arithmetic
// step happens in fp32), so only the traits Eigen needs for assignment and casts are given.
namespace Eigen {
template <class Format>
struct NumTraits<kvbench::ref::fp8<Format>> : GenericNumTraits<kvbench::ref::fp8<Format>> {
  enum { IsSigned = 1, IsInteger = 0, IsComplex = 0, RequireInitialization = 0 };
};
}  // namespace Eigen

namespace kvbench::ref {
namespace {

using Eigen::Dynamic;
using Eigen::OuterStride;
using Eigen::RowMajor;
using Eigen::Unaligned;

template <class T>
using RowMat = Eigen::Matrix<T, Dynamic, Dynamic, RowMajor>;
// A [rows, cols] block whose rows are `stride` elements apart and whose columns are contiguous.
template <class T>
using InBlock = Eigen::Map<const RowMat<T>, Unaligned, OuterStride<>>;
template <class T>
using OutBlock = Eigen::Map<RowMat<T>, Unaligned, OuterStride<>>;

template <class T>
InBlock<T> in_block(const void* base, std::int64_t offset, std::int64_t rows, std::int64_t cols,
                    std::int64_t stride) {
  return InBlock<T>(static_cast<const T*>(base) + offset, rows, cols, OuterStride<>(stride));
}

template <class T>
OutBlock<T> out_block(void* base, std::int64_t offset, std::int64_t rows, std::int64_t cols,
                      std::int64_t stride) {
  return OutBlock<T>(static_cast<T*>(base) + offset, rows, cols, OuterStride<>(stride));
}

// The one rounding step fp32 -> Out of SPEC §3, with the device's NaN bits: CUDA's cvt
// instructions (and its correctly rounded division) return one canonical NaN whatever the
// input's sign and payload, where Eigen would keep them. Matching the hardware lets the
// validator compare NaNs by bit pattern (docs/validation.md, "NaN policy").
template <class Out>
Out narrow(float x) {
  if constexpr (std::is_same_v<Out, float>) {
    if (!std::isnan(x)) return x;
    float nan;
    std::memcpy(&nan, &kCanonicalNaN32, sizeof nan);
    return nan;
  } else if constexpr (std::is_same_v<Out, Eigen::half>) {
    return std::isnan(x) ? Eigen::half_impl::raw_uint16_to_half(kCanonicalNaN16) : Eigen::half(x);
  } else if constexpr (std::is_same_v<Out, Eigen::bfloat16>) {
    return std::isnan(x) ? Eigen::bfloat16_impl::raw_uint16_to_bfloat16(kCanonicalNaN16)
                         : Eigen::bfloat16(x);
  } else {
    return static_cast<Out>(x);  // fp8: encode() already writes the hardware's 0x7F
  }
}

// SPEC §3 cast of a whole block. Same-type copies keep their bits (NaN payloads included); a
// widening to fp32 is exact, and keeps NaN payloads from bf16 and fp32 (the device shifts the
// bits) but not from fp16 (the device's cvt.f32.f16 returns the canonical NaN: seen on the H200,
// tests/test_convert_gpu.cpp); every other pair widens to fp32 and rounds once into Out.
template <class In, class Out, class Src>
auto cast_block(const Src& src) {
  if constexpr (std::is_same_v<In, Out> ||
                (std::is_same_v<Out, float> && !std::is_same_v<In, Eigen::half>)) {
    return src.template cast<Out>();
  } else {
    return src.template cast<float>().unaryExpr(&narrow<Out>);
  }
}

// dst = cast(src / scale), row h divided by scale[h] for per-head scales; the fp32 quotient is
// IEEE division, rounded once into Out.
template <class In, class Out>
void write_block(const InBlock<In>& src, OutBlock<Out>& dst, ScaleMode mode, const float* scale) {
  switch (mode) {
    case ScaleMode::none:
      dst = cast_block<In, Out>(src);
      return;
    case ScaleMode::per_tensor:
      dst = (src.template cast<float>() / scale[0]).unaryExpr(&narrow<Out>);
      return;
    case ScaleMode::per_head: {
      const Eigen::Map<const Eigen::ArrayXf> head_scale(scale, src.rows());
      dst = (src.template cast<float>().array().colwise() / head_scale)
                .matrix()
                .unaryExpr(&narrow<Out>);
      return;
    }
    case ScaleMode::per_token_head:  // a layout of its own (reference/quantize.hpp)
      throw std::invalid_argument(
          "per_token_head writes go through reshape_and_cache_flash_per_token_head");
  }
}

template <class T>
struct Tag {
  using type = T;
};

template <class F>
void with_out_type(DType out, F&& f) {
  switch (out) {
    case DType::f32:
      return f(Tag<float>{});
    case DType::f16:
      return f(Tag<Eigen::half>{});
    case DType::bf16:
      return f(Tag<Eigen::bfloat16>{});
    case DType::fp8_e4m3:
      return f(Tag<fp8_e4m3>{});
    case DType::fp8_e5m2:
      return f(Tag<fp8_e5m2>{});
  }
  throw std::invalid_argument("unknown output dtype");
}

// The one place that maps (in, out) dtypes to host types. The operations take fp32/fp16/bf16
// inputs only; convert() also decodes fp8 so tests can round-trip bytes.
template <class F>
void dispatch(DType in, DType out, bool allow_fp8_in, const char* what, F&& f) {
  const auto with_in = [&](auto in_tag) {
    with_out_type(out, [&](auto out_tag) { f(in_tag, out_tag); });
  };
  switch (in) {
    case DType::f32:
      return with_in(Tag<float>{});
    case DType::f16:
      return with_in(Tag<Eigen::half>{});
    case DType::bf16:
      return with_in(Tag<Eigen::bfloat16>{});
    case DType::fp8_e4m3:
      if (allow_fp8_in) return with_in(Tag<fp8_e4m3>{});
      break;
    case DType::fp8_e5m2:
      if (allow_fp8_in) return with_in(Tag<fp8_e5m2>{});
      break;
  }
  throw std::invalid_argument(std::string(what) + ": unsupported dtype pair (" +
                              std::string(to_string(in)) + " -> " + std::string(to_string(out)) +
                              ")");
}

// Runs body(begin, end) over [0, n) tokens; threads only pay off once the copy is large.
template <class Body>
void for_tokens(std::int64_t n, std::int64_t elements, const Body& body) {
  constexpr std::int64_t kParallelThreshold = std::int64_t{1} << 20;
  const std::int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t workers = elements > kParallelThreshold ? std::min(hw, n) : 1;
  if (workers <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
  const std::int64_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t begin = 0; begin < n; begin += chunk)
    threads.emplace_back(body, begin, std::min(n, begin + chunk));
  for (auto& t : threads) t.join();
}

// SPEC §2 steps 1-3 (reference/slots.hpp).
std::int64_t physical_slot(const CacheWriteProblem& p, std::int64_t t) {
  return detail::physical_slot({p.slot_mapping, p.swa_slot_mapping, p.swa_size, p.skip_slot,
                                p.num_blocks * p.block_size, "reshape_and_cache_flash"},
                               t);
}

template <class In, class Out>
void concat_impl(const ConcatProblem& p) {
  const std::int64_t H = p.num_heads, NOPE = p.nope_dim, ROPE = p.rope_dim;
  for_tokens(p.num_tokens, p.num_tokens * H * (NOPE + ROPE), [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const auto nope = in_block<In>(p.k_nope, t * p.nope_s0, H, NOPE, p.nope_s1);
      const auto rope = in_block<In>(p.k_rope, t * p.rope_s0, 1, ROPE, ROPE);
      auto k_nope_part = out_block<Out>(p.k, t * p.k_s0, H, NOPE, p.k_s1);
      auto k_rope_part = out_block<Out>(p.k, t * p.k_s0 + NOPE, H, ROPE, p.k_s1);
      k_nope_part = cast_block<In, Out>(nope);
      // Rope is shared by all heads: cast once, then broadcast.
      k_rope_part = cast_block<In, Out>(rope).replicate(H, 1);
    }
  });
}

template <class In, class Out>
void cache_write_impl(const CacheWriteProblem& p) {
  const std::int64_t H = p.num_heads, D = p.head_size, BS = p.block_size;

  // Resolved serially first so a bad slot throws here rather than inside a worker thread.
  std::vector<std::int64_t> slots(
      static_cast<std::size_t>(std::max<std::int64_t>(0, p.num_tokens)));
  for (std::int64_t t = 0; t < p.num_tokens; ++t) slots[t] = physical_slot(p, t);

  // Inside a block, NHD puts slot o's heads next to each other (head stride D); HND puts each
  // head's BS slots together (head stride BS * D).
  const bool nhd = p.layout == Layout::nhd;
  const std::int64_t head_stride = nhd ? D : BS * D;
  const std::int64_t slot_stride = nhd ? H * D : D;

  for_tokens(p.num_tokens, p.num_tokens * H * D, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t s = slots[t];
      if (s < 0) continue;
      const std::int64_t offset = (s / BS) * p.block_stride + (s % BS) * slot_stride;
      const auto key = in_block<In>(p.key, t * p.key_s0, H, D, p.key_s1);
      const auto value = in_block<In>(p.value, t * p.value_s0, H, D, p.value_s1);
      auto key_dst = out_block<Out>(p.key_cache, offset, H, D, head_stride);
      auto value_dst = out_block<Out>(p.value_cache, offset, H, D, head_stride);
      write_block(key, key_dst, p.scale, p.k_scale);
      write_block(value, value_dst, p.scale, p.v_scale);
    }
  });
}

}  // namespace

void concat_and_cast_mha_k(const ConcatProblem& p) {
  dispatch(p.in_dtype, p.out_dtype, false, "concat_and_cast_mha_k", [&](auto in, auto out) {
    concat_impl<typename decltype(in)::type, typename decltype(out)::type>(p);
  });
}

void reshape_and_cache_flash(const CacheWriteProblem& p) {
  dispatch(p.in_dtype, p.out_dtype, false, "reshape_and_cache_flash", [&](auto in, auto out) {
    cache_write_impl<typename decltype(in)::type, typename decltype(out)::type>(p);
  });
}

void convert(DType from, const void* in, DType to, void* out, const float* scale) {
  convert_n(from, in, to, out, 1, scale);
}

void convert_n(DType from, const void* in, DType to, void* out, std::int64_t n,
               const float* scale) {
  dispatch(from, to, true, "convert", [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    // Through the same block path as the operations, so the tests cover it.
    const auto src = in_block<In>(in, 0, 1, n, n);
    auto dst = out_block<Out>(out, 0, 1, n, n);
    write_block(src, dst, scale != nullptr ? ScaleMode::per_tensor : ScaleMode::none, scale);
  });
}

}  // namespace kvbench::ref
