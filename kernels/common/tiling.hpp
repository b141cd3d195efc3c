// Launch shapes shared by the plans: grid sizes, waves, and the (vector, head, token) block of
// concat's 2-D tiling. Plain C++: the plans run on the CPU.
#pragma once

#include <cstdint>
#include <string>

namespace kvbench::kernels {

// A grid or block shape, as dim3 holds it (plain C++, printable).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  bool operator==(const Dim3& o) const { return x == o.x && y == o.y && z == o.z; }
};
std::string to_string(const Dim3& d);  // "132" or "64x4x1"

// Block shape of the (vector in head, head, token) tiling, blockDim = (head_vecs, heads,
// tokens): a thread finds its item from its thread and block indices, with no index division.
// `heads` is the largest divisor of the head count whose vectors fit in `threads` threads (no
// idle lanes), `tokens` fills the rest. Empty (heads == 0) when one head's vectors do not fit
// or the grid would be too large; the flat tiling takes those shapes.
struct Tile2D {
  int head_vecs = 0, heads = 0, tokens = 0;
  unsigned token_blocks = 0, head_blocks = 0;

  Tile2D(std::int64_t num_tokens, std::int64_t num_heads, std::int64_t vecs, int threads,
         int tokens_per_thread) {
    if (vecs < 1 || vecs > threads || num_heads < 1) return;
    head_vecs = static_cast<int>(vecs);
    int h = static_cast<int>(num_heads < threads / vecs ? num_heads : threads / vecs);
    while (num_heads % h != 0) --h;
    const int t = threads / (head_vecs * h);
    tokens = t < 1 ? 1 : (t > 64 ? 64 : t);  // blockDim.z <= 64
    const std::int64_t per_block = static_cast<std::int64_t>(tokens) * tokens_per_thread;
    const std::int64_t tb = (num_tokens + per_block - 1) / per_block, hb = num_heads / h;
    if (tb * hb > 0x7fffffff) return;
    heads = h;
    token_blocks = static_cast<unsigned>(tb);
    head_blocks = static_cast<unsigned>(hb);
  }
  bool ok() const { return heads > 0; }
  // Blocks are numbered head block fastest, so that blocks running at the same time cover
  // consecutive tokens' memory (a token-major (x, y) grid measured 6% slower above L2).
  Dim3 grid() const { return Dim3{token_blocks * head_blocks, 1, 1}; }
  Dim3 block() const {
    return Dim3{static_cast<unsigned>(head_vecs), static_cast<unsigned>(heads),
                static_cast<unsigned>(tokens)};
  }
  std::int64_t blocks() const { return static_cast<std::int64_t>(token_blocks) * head_blocks; }
  int threads() const { return head_vecs * heads * tokens; }
};

// Blocks needed for `items` items, `per_block` per block; 0 when the grid would be too large.
inline unsigned grid_blocks(std::int64_t items, std::int64_t per_block) {
  const std::int64_t blocks = (items + per_block - 1) / per_block;
  return blocks > 0x7fffffff ? 0u : static_cast<unsigned>(blocks);
}

// Whether `blocks` blocks all run at once (one wave) on `sm_count` SMs holding `resident` each:
// then the launch is latency-bound.
inline bool one_wave(std::int64_t blocks, int sm_count, int resident) {
  return blocks <= static_cast<std::int64_t>(sm_count) * resident;
}

}  // namespace kvbench::kernels
