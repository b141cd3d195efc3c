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
