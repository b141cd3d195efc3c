// reshape_and_cache_flash, the `slot_order` path: the cache written in slot order. Pass 1
// inverts the slot mapping into a table (table[physical slot] = token); pass 2 walks the cache in
// chunks of consecutive slots, one chunk per block, looks up each slot's token and gathers its
// K/V. Neighbouring slots are then written together, by one block or by blocks running side by
// side, instead of row by row at random times: scattered rows that do not cover whole 256-byte
// units (HND D=80: 160 bytes) lose up to 30% of the copy peak (perf-notes/2026-12,
// "2026-12-02, 4f45e0a", the row study). Pass 2 restores the entries it read to -1, so the table
// needs no clearing launch. The price: a pass over the tokens, and one over every slot of the
// cache, written or not. Same vectors and fallbacks as `optimized`; `optimized` takes this path on
// the shapes plan_cache_write names.
#include "kernels/cache_write/device.cuh"
#include "kernels/cache_write/launchers.hpp"
#include "kernels/common/pdl.cuh"

namespace kvbench::kernels {
namespace {

constexpr int kFillThreads = 256;
constexpr int kSlotThreads = 256;

__global__ void __launch_bounds__(kFillThreads) slot_table_fill(CacheWriteArgs a) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kFillThreads + threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();  // the previous launch's pass 2 restores the table
  if (t >= a.num_tokens) return;
  const std::int64_t s = physical_slot(a, t);
  if (s >= 0 && s < a.num_slots) a.slot_table[s] = static_cast<std::int32_t>(t);
}

// One block per chunk of consecutive slots, one thread per (slot, head, vector) item while they
// fit, in the order of the cache's memory: slot-major for NHD, head-major (HEAD_MAJOR) for HND.
template <class In, class Out, int V, bool SCALED, bool HEAD_MAJOR>
__global__ void __launch_bounds__(kSlotThreads, SCALED ? kScaledMinBlocks<In> : 1)
    cache_write_slot_order(CacheWriteArgs a, FastDiv vecs_per_head, FastDiv heads, FastDiv chunk,
                           FastDiv block_div) {
  const auto n_chunk = static_cast<int>(chunk.divisor());
  const std::int64_t s0 = static_cast<std::int64_t>(blockIdx.x) * n_chunk;
  const int n = static_cast<int>(a.num_slots - s0 < n_chunk ? a.num_slots - s0 : n_chunk);
  const auto vph = static_cast<int>(vecs_per_head.divisor());
  const auto nh = static_cast<int>(heads.divisor());
  const int items = n_chunk * nh * vph;
  pdl_launch_dependents();
  pdl_wait();  // pass 1 has filled the table
  for (int i = static_cast<int>(threadIdx.x); i < items; i += static_cast<int>(blockDim.x)) {
    const auto r = static_cast<int>(vecs_per_head.div(static_cast<std::uint32_t>(i)));
    const int d = (i - r * vph) * V;
    int j, h;
    if constexpr (HEAD_MAJOR) {
      h = static_cast<int>(chunk.div(static_cast<std::uint32_t>(r)));
      j = r - h * n_chunk;
    } else {
      j = static_cast<int>(heads.div(static_cast<std::uint32_t>(r)));
      h = r - j * nh;
    }
    if (j >= n) continue;
    const std::int64_t slot = s0 + j;
    const std::int64_t t = a.slot_table[slot];
    if (t < 0) continue;
    const In* key = static_cast<const In*>(a.key) + (t * a.key_s0 + h * a.key_s1 + d);
    const In* value = static_cast<const In*>(a.value) + (t * a.value_s0 + h * a.value_s1 + d);
    const Vec<In, V> kx = load_vec<In, V>(key);
    const Vec<In, V> vx = load_vec<In, V>(value);
    const bool scaled = SCALED || a.scale != ScaleMode::none;
    float ks = 1.0f, vs = 1.0f;
    if (scaled) load_scales(a, h, ks, vs);
    std::int64_t b, o;
    split_slot(slot, a.block_size, block_div, b, o);
    const std::int64_t dst = b * a.block_stride + o * a.slot_stride + h * a.head_stride + d;
    store_item<false>(static_cast<Out*>(a.key_cache) + dst, static_cast<Out*>(a.value_cache) + dst,
                      kx, vx, scaled, ks, vs, key, value);
  }
  __syncthreads();  // every item has read its slot's entry
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    a.slot_table[s0 + i] = -1;  // only this block reads these entries
}

template <class In, class Out, int V, bool SCALED>
cudaError_t launch_plan(const CacheWriteArgs& a, const CacheWritePlan& p, cudaStream_t stream) {
  if (const cudaError_t e = launch_pdl(slot_table_fill, p.fill_grid.x, p.fill_block.x, stream, a);
      e != cudaSuccess)
    return e;
  const FastDiv fv(static_cast<std::uint32_t>(a.head_size / V)),
      fh(static_cast<std::uint32_t>(a.num_heads)), fc(static_cast<std::uint32_t>(p.chunk)),
      bd = block_size_div(a);
  if (p.head_major)
    return launch_pdl(cache_write_slot_order<In, Out, V, SCALED, true>, p.grid.x, p.block.x, stream,
                      a, fv, fh, fc, bd);
  return launch_pdl(cache_write_slot_order<In, Out, V, SCALED, false>, p.grid.x, p.block.x, stream,
                    a, fv, fh, fc, bd);
}

}  // namespace

cudaError_t launch_cache_write_slot_order(const CacheWriteArgs& a, const CacheWritePlan& p,
                                          cudaStream_t stream) {
  return dispatch_dtypes(a.in_dtype, a.out_dtype, [&](auto in_tag, auto out_tag) {
    using In = typename decltype(in_tag)::type;
    using Out = typename decltype(out_tag)::type;
    return with_vec<In, Out>(p.vec, [&](auto v) {
      constexpr int V = decltype(v)::value;
      return p.scaled ? launch_plan<In, Out, V, true>(a, p, stream)
                      : launch_plan<In, Out, V, false>(a, p, stream);
    });
  });
}

}  // namespace kvbench::kernels
