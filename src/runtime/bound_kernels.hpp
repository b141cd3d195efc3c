// The plain workloads `kvbench bounds` times beside a case: a write of W bytes and a move that
// reads R bytes and writes W, in 16-byte vectors. Launched with PDL and waiting for the previous
// grid before touching memory, as every optimized kernel is, so the comparison is like for like.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kvbench {

// Each thread handles `per_thread` (1, 2, 4 or 8) 16-byte words, `threads` (a multiple of 32, at
// most 1024) per block, one word per thread per step so that a warp's accesses are contiguous.
// Byte counts are rounded up to whole 16-byte words; buffers must hold them.
struct BoundShape {
  int per_thread = 4, threads = 256;
};

// An empty kernel launched with PDL: the launch floor of kernels launched as the optimized ones
// are (the engine's floor, timing::launch_empty, is launched without it).
cudaError_t launch_empty_pdl(cudaStream_t stream);

// dst[i] = {i, ~i, i, ~i} (low 32 bits of the word index i), for every word of `bytes`.
cudaError_t launch_store16(void* dst, std::size_t bytes, BoundShape shape, cudaStream_t stream);

// Reads every word of src[read_bytes] and writes every word of dst[write_bytes]: word i of dst is
// word i of src, or zero past the end of src. A read without a matching write is kept by storing
// to `sink` only when its value equals `never`, which the caller makes impossible.
cudaError_t launch_move16(const void* src, std::size_t read_bytes, void* dst,
                          std::size_t write_bytes, std::uint32_t never, std::uint32_t* sink,
                          BoundShape shape, cudaStream_t stream);

// The scatter bound of a cache write: for every token t whose dst_row[t] >= 0, and for K (kv 0)
// and V (kv 1), each head's input chunk (head_read bytes, contiguous in src_k / src_v [T, H]) is
// moved to dst + dst_row[t] + kv * v_offset + h * head_stride (head_write bytes there). Word j of
// a destination chunk is word j of its source chunk, or zero past it; source words without a
// destination are read and kept through `sink`, as in launch_move16. Words are the widest of
// 16, 8, 4, 2, 1 bytes dividing every size and offset (`word_bytes`). `threads` per block (a
// multiple of 32, at most 1024), `per_thread` (1 or 4) words per thread and step, all loaded
// before any is stored. `eager`: each word's load is issued beside its token's dst_row load
// rather than after it (a skipped token's words are then read too, and kept through `sink`).
struct ScatterArgs {
  const void* src_k;            // [T, H, head_read bytes]
  const void* src_v;            // [T, H, head_read bytes]
  const std::int64_t* dst_row;  // [T], byte offset of token t's K row in dst, or -1: skipped
  void* dst;                    // the caches
  std::int64_t v_offset = 0;    // bytes from K's row to V's
  std::int64_t tokens = 0, heads = 0;
  std::int64_t head_read = 0, head_write = 0, head_stride = 0;  // bytes
  int word_bytes = 16;
  std::uint32_t never = 1;
  std::uint32_t* sink = nullptr;
};
cudaError_t launch_scatter(const ScatterArgs& a, int threads, int per_thread, bool eager,
                           cudaStream_t stream);

}  // namespace kvbench
