#include "kernels/common/pdl.cuh"
#include "runtime/bound_kernels.hpp"

namespace kvbench {
namespace {

using kernels::launch_pdl;
using kernels::pdl_launch_dependents;
using kernels::pdl_wait;

__global__ void empty_pdl_kernel() {
  pdl_launch_dependents();
  pdl_wait();
}

template <int K>
__global__ void store16_kernel(uint4* __restrict__ dst, std::size_t words) {
  pdl_launch_dependents();
  pdl_wait();
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(blockDim.x) * K + threadIdx.x;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
    const auto w = static_cast<std::uint32_t>(i);
    if (i < words) dst[i] = make_uint4(w, ~w, w, ~w);
  }
}

template <int K>
__global__ void move16_kernel(const uint4* __restrict__ src, std::size_t read_words,
                              uint4* __restrict__ dst, std::size_t write_words, std::uint32_t never,
                              std::uint32_t* sink) {
  pdl_launch_dependents();
  pdl_wait();
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(blockDim.x) * K + threadIdx.x;
  uint4 v[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {  // every load issued before the first store
    const std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
    v[j] = i < read_words ? src[i] : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
    if (i < write_words)
      dst[i] = v[j];
    else if (i < read_words && (v[j].x ^ v[j].y ^ v[j].z ^ v[j].w) == never)
      *sink = never;
  }
}

__device__ __forceinline__ std::uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
__device__ __forceinline__ std::uint32_t fold(uint2 v) { return v.x ^ v.y; }
__device__ __forceinline__ std::uint32_t fold(std::uint32_t v) { return v; }
__device__ __forceinline__ std::uint32_t fold(std::uint16_t v) { return v; }
__device__ __forceinline__ std::uint32_t fold(std::uint8_t v) { return v; }
template <class W>
__device__ __forceinline__ W zero_word() {
  return W{};
}

// One thread per destination-or-source word of every (token, K/V, head) chunk, grid-stride.
// Index: 32 bits where every word index fits (one integer division per word is then cheap);
// kRows: every head chunk is written where the previous one ends and read and written at the
// same size (NHD), so a token's K or V row is one chunk and no head index is needed.
// kEager: the input word is loaded beside the token's row, not after it (two independent loads
// instead of a dependent pair, as a kernel that loads its inputs before its slot is known); a
// skipped token's words are then read and kept through the sink.
template <class W, class Index, bool kRows, int K, bool kEager>
__global__ void scatter_kernel(ScatterArgs a) {
  pdl_launch_dependents();
  pdl_wait();
  const auto rw = static_cast<Index>(a.head_read / static_cast<std::int64_t>(sizeof(W)));
  const auto ww = static_cast<Index>(a.head_write / static_cast<std::int64_t>(sizeof(W)));
  const Index wph = rw > ww ? rw : ww;                       // words per head chunk
  const Index per_pair = static_cast<Index>(a.heads) * wph;  // words per (token, K/V)
  const Index total = static_cast<Index>(a.tokens) * 2 * per_pair;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  // K words per thread and step, every load issued before the first store.
  for (Index i0 = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i0 < total;
       i0 += stride * K) {
    W v[K];
    W* dst[K];
    bool keep[K];  // a source word without a destination word: kept through the sink
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Index i = i0 + static_cast<Index>(k) * stride;
      dst[k] = nullptr;
      keep[k] = false;
      if (i >= total) continue;
      const Index pair = i / per_pair, j = i - pair * per_pair;
      const Index t = pair >> 1, kv = pair & 1;
      const std::int64_t row = a.dst_row[t];
      if (!kEager && row < 0) continue;  // skipped tokens cost only their entry
      // The token's K or V input: H head chunks of rw words, contiguous.
      const auto* src = static_cast<const W*>(kv ? a.src_v : a.src_k) +
                        static_cast<std::int64_t>(t) * static_cast<std::int64_t>(a.heads) * rw;
      Index h = 0, w = j;
      if constexpr (!kRows) {
        h = j / wph;
        w = j - h * wph;
      }
      v[k] = kRows || w < rw ? src[static_cast<std::int64_t>(h) * rw + w] : zero_word<W>();
      if (kEager && row < 0) {
        keep[k] = true;
        continue;
      }
      auto* out = reinterpret_cast<W*>(static_cast<unsigned char*>(a.dst) + row + kv * a.v_offset);
      if (kRows)
        dst[k] = out + j;
      else if (w < ww)
        dst[k] =
            reinterpret_cast<W*>(reinterpret_cast<unsigned char*>(out) + h * a.head_stride) + w;
      else
        keep[k] = true;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (dst[k])
        *dst[k] = v[k];
      else if (keep[k] && fold(v[k]) == a.never)
        *a.sink = a.never;
    }
  }
}

template <class W, class Index, bool kRows>
cudaError_t launch_scatter_k(const ScatterArgs& a, int per_thread, bool eager, dim3 grid,
                             dim3 block, cudaStream_t stream) {
  if (eager)
    return per_thread == 4
               ? launch_pdl(scatter_kernel<W, Index, kRows, 4, true>, grid, block, stream, a)
               : launch_pdl(scatter_kernel<W, Index, kRows, 1, true>, grid, block, stream, a);
  return per_thread == 4
             ? launch_pdl(scatter_kernel<W, Index, kRows, 4, false>, grid, block, stream, a)
             : launch_pdl(scatter_kernel<W, Index, kRows, 1, false>, grid, block, stream, a);
}

template <class W>
cudaError_t launch_scatter_words(const ScatterArgs& a, int per_thread, bool eager, dim3 grid,
                                 dim3 block, cudaStream_t stream, std::int64_t total) {
  const bool rows = a.head_read == a.head_write && a.head_stride == a.head_write;
  // 32-bit indices while every index the grid-stride loop reaches fits.
  const bool small =
      total + static_cast<std::int64_t>(grid.x) * block.x * per_thread < (std::int64_t{1} << 32);
  if (small)
    return rows
               ? launch_scatter_k<W, std::uint32_t, true>(a, per_thread, eager, grid, block, stream)
               : launch_scatter_k<W, std::uint32_t, false>(a, per_thread, eager, grid, block,
                                                           stream);
  return rows
             ? launch_scatter_k<W, std::uint64_t, true>(a, per_thread, eager, grid, block, stream)
             : launch_scatter_k<W, std::uint64_t, false>(a, per_thread, eager, grid, block, stream);
}

bool valid(BoundShape s) {
  return (s.per_thread == 1 || s.per_thread == 2 || s.per_thread == 4 || s.per_thread == 8) &&
         s.threads > 0 && s.threads <= 1024 && s.threads % 32 == 0;
}

std::size_t words_of(std::size_t bytes) { return (bytes + 15) / 16; }

// Blocks covering `words`, or 0 for an empty or oversized grid.
unsigned blocks_for(std::size_t words, BoundShape s) {
  const std::size_t per_block = static_cast<std::size_t>(s.threads) * s.per_thread;
  const std::size_t blocks = (words + per_block - 1) / per_block;
  return blocks == 0 || blocks > 0x7fffffffu ? 0u : static_cast<unsigned>(blocks);
}

}  // namespace

cudaError_t launch_scatter(const ScatterArgs& a, int threads, int per_thread, bool eager,
                           cudaStream_t stream) {
  if (threads <= 0 || threads > 1024 || threads % 32 != 0 || (per_thread != 1 && per_thread != 4))
    return cudaErrorInvalidValue;
  const std::int64_t wb = a.word_bytes;
  if (wb <= 0) return cudaErrorInvalidValue;
  const std::int64_t wph = (a.head_read > a.head_write ? a.head_read : a.head_write) / wb;
  const std::int64_t total = a.tokens * 2 * a.heads * wph;
  if (total <= 0) return cudaErrorInvalidValue;
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const std::int64_t per_block = static_cast<std::int64_t>(threads) * per_thread;
  const std::int64_t want = (total + per_block - 1) / per_block;
  const dim3 grid(static_cast<unsigned>(want < (1 << 20) ? want : (1 << 20))), block(threads);
  switch (a.word_bytes) {
    case 16:
      return launch_scatter_words<uint4>(a, per_thread, eager, grid, block, stream, total);
    case 8:
      return launch_scatter_words<uint2>(a, per_thread, eager, grid, block, stream, total);
    case 4:
      return launch_scatter_words<std::uint32_t>(a, per_thread, eager, grid, block, stream, total);
    case 2:
      return launch_scatter_words<std::uint16_t>(a, per_thread, eager, grid, block, stream, total);
    case 1:
      return launch_scatter_words<std::uint8_t>(a, per_thread, eager, grid, block, stream, total);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_empty_pdl(cudaStream_t stream) {
  return launch_pdl(empty_pdl_kernel, dim3(1), dim3(1), stream);
}

cudaError_t launch_store16(void* dst, std::size_t bytes, BoundShape shape, cudaStream_t stream) {
  const std::size_t words = words_of(bytes);
  const unsigned blocks = blocks_for(words, shape);
  if (!valid(shape) || blocks == 0) return cudaErrorInvalidValue;
  auto* d = static_cast<uint4*>(dst);
  const dim3 grid(blocks), block(static_cast<unsigned>(shape.threads));
  switch (shape.per_thread) {
    case 1:
      return launch_pdl(store16_kernel<1>, grid, block, stream, d, words);
    case 2:
      return launch_pdl(store16_kernel<2>, grid, block, stream, d, words);
    case 4:
      return launch_pdl(store16_kernel<4>, grid, block, stream, d, words);
    default:
      return launch_pdl(store16_kernel<8>, grid, block, stream, d, words);
  }
}

cudaError_t launch_move16(const void* src, std::size_t read_bytes, void* dst,
                          std::size_t write_bytes, std::uint32_t never, std::uint32_t* sink,
                          BoundShape shape, cudaStream_t stream) {
  const std::size_t rw = words_of(read_bytes), ww = words_of(write_bytes);
  const unsigned blocks = blocks_for(rw > ww ? rw : ww, shape);
  if (!valid(shape) || blocks == 0) return cudaErrorInvalidValue;
  const auto* s = static_cast<const uint4*>(src);
  auto* d = static_cast<uint4*>(dst);
  const dim3 grid(blocks), block(static_cast<unsigned>(shape.threads));
  switch (shape.per_thread) {
    case 1:
      return launch_pdl(move16_kernel<1>, grid, block, stream, s, rw, d, ww, never, sink);
    case 2:
      return launch_pdl(move16_kernel<2>, grid, block, stream, s, rw, d, ww, never, sink);
    case 4:
      return launch_pdl(move16_kernel<4>, grid, block, stream, s, rw, d, ww, never, sink);
    default:
      return launch_pdl(move16_kernel<8>, grid, block, stream, s, rw, d, ww, never, sink);
  }
}

}  // namespace kvbench
