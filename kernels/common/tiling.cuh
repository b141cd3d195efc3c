// The flat (token, item) tiling's device side: where a thread's item lies.
#pragma once

#include <cstdint>

#include "kernels/common/fast_div.hpp"

namespace kvbench::kernels {

// A block owns `threads * unroll` consecutive items of the flattened (token, item) space, where
// each token has `per_token` items. The tile's first token is found with one division per
// thread; item positions inside the tile use 32-bit multiply-shift division (FastDiv).
struct TileCursor {
  std::int64_t t0;  // token of the tile's first item
  int r0;           // that item's index within its token
  FastDiv per_token;

  __device__ __forceinline__ TileCursor(std::int64_t tile_start, FastDiv per_token_items)
      : per_token(per_token_items) {
    const std::uint32_t p = per_token_items.divisor();
    if ((tile_start >> 31) == 0) {
      const auto s = static_cast<std::uint32_t>(tile_start);
      const std::uint32_t q = per_token_items.div(s);
      t0 = q;
      r0 = static_cast<int>(s - q * p);
    } else {
      t0 = tile_start / p;
      r0 = static_cast<int>(tile_start - t0 * p);
    }
  }

  // Token and in-token index of the item `local` positions after the tile start
  // (r0 + local < 2^31: per_token <= 2^30 and local < 2^30).
  __device__ __forceinline__ void locate(int local, std::int64_t& t, int& u) const {
    const auto r = static_cast<std::uint32_t>(r0 + local);
    const std::uint32_t dt = per_token.div(r);
    t = t0 + dt;
    u = static_cast<int>(r - dt * per_token.divisor());
  }
};

}  // namespace kvbench::kernels
