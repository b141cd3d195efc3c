#include "kernels/concat_mha_k/plan.hpp"

#include <algorithm>

#include "kernels/common/access.hpp"
#include "kernels/common/fast_div.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;  // Triton's default num_warps=4
constexpr int kOptThreads = 256;
constexpr int k2DTarget = 256;  // threads a 2-D block is given, at most
constexpr int kWalkThreads = 512;

// Bytes a launch reads and writes (SPEC.md's count).
std::int64_t concat_bytes(const ConcatArgs& a) {
  const std::int64_t in = static_cast<std::int64_t>(size_of(a.in_dtype)),
                     out = static_cast<std::int64_t>(size_of(a.out_dtype));
  return a.num_tokens * (a.num_heads * a.nope_dim * in + a.rope_dim * in +
                         a.num_heads * (a.nope_dim + a.rope_dim) * out);
}

// Whether every element offset a launch computes fits in int32 (strides non-negative).
bool concat_fits_int32(const ConcatArgs& a) {
  return offsets_fit_int32(a.num_tokens, a.nope_s0, a.nope_s1, a.num_heads, a.nope_dim) &&
         offsets_fit_int32(a.num_tokens, a.rope_s0, 0, 1, a.rope_dim) &&
         offsets_fit_int32(a.num_tokens, a.k_s0, a.k_s1, a.num_heads, a.nope_dim + a.rope_dim);
}

// Whether every access can be `n` elements wide: dims and strides divisible, pointers aligned.
bool concat_vec_ok(const ConcatArgs& a, int n) {
  const int in = static_cast<int>(size_of(a.in_dtype)),
            out = static_cast<int>(size_of(a.out_dtype));
  return divisible(a.nope_dim, n) && divisible(a.rope_dim, n) && divisible(a.nope_s0, n) &&
         divisible(a.nope_s1, n) && divisible(a.rope_s0, n) && divisible(a.k_s0, n) &&
         divisible(a.k_s1, n) && vec_aligned(a.k_nope, in, n) && vec_aligned(a.k_rope, in, n) &&
         vec_aligned(a.k, out, n);
}

KernelRef ref(const ConcatArgs& a, KernelRef::Kernel k, int vec, int unroll = 1) {
  return {k, a.in_dtype, a.out_dtype, vec, unroll, false};
}

// Whether the 2-D tiling in `vec`-element vectors, `unroll` tokens a thread, runs in one wave.
bool one_wave_2d(const ConcatArgs& a, int vec, const DeviceProps& d, int unroll = 1) {
  const Tile2D tile(a.num_tokens, a.num_heads, (a.nope_dim + a.rope_dim) / vec, k2DTarget, unroll);
  return tile.ok() && one_wave(tile.blocks(), d.sm_count,
                               d.resident_blocks(ref(a, KernelRef::Kernel::concat_2d, vec, unroll),
                                                 tile.threads()));
}

// The vector width: 16-byte input vectors for narrowing casts where they measure faster than
// 16-byte output ones (perf-notes/2026-12, "2026-12-03, 0b5b269 and 0db2bcd"): 16-bit -> fp8
// everywhere (7-14% at T <= 128, up to 10% at T=1024); f32 -> fp8 while the data fit in L2 (26-31%
// at T <= 128); f32 -> 16-bit in one wave only (7-12% there; 10% slower walking tokens at 12 heads,
// T=1024). Otherwise the widest access the shape allows: 16 bytes of the narrower type, 16 bytes of
// input, 1 element.
int pick_vec(const ConcatArgs& a, const DeviceProps& d) {
  const std::size_t in = size_of(a.in_dtype), out = size_of(a.out_dtype);
  const int wide = wide_vec(in, out), narrow = input_vec(in);
  if (narrow != wide) {
    const bool prefer_narrow =
        in == 2 || (out == 1 ? concat_bytes(a) <= d.l2_bytes : one_wave_2d(a, narrow, d));
    if (prefer_narrow && concat_vec_ok(a, narrow)) return narrow;
  }
  if (concat_vec_ok(a, wide)) return wide;
  if (narrow != wide && concat_vec_ok(a, narrow)) return narrow;
  return 1;
}

// Launch shape (perf-notes/2026-12, "2026-12-02, 7a15e28"): the 2-D tiling in one wave and above
// L2's size, token walking in between, the flat tiling for heads too wide for a 2-D block.
void plan_optimized(const ConcatArgs& a, const DeviceProps& d, ConcatPlan& p) {
  const int V = p.vec;
  const int in = static_cast<int>(size_of(a.in_dtype));
  const std::int64_t head_vecs = (a.nope_dim + a.rope_dim) / V;
  const std::int64_t per_token = a.num_heads * head_vecs;
  if (per_token > (1 << 30)) {
    p.error = "more than 2^30 vectors per token";
    return;
  }
  const unsigned b1 = grid_blocks(a.num_tokens * per_token, kOptThreads);
  if (b1 == 0) {
    p.error = "grid too large";
    return;
  }
  p.pdl = true;
  const bool fits_l2 = concat_bytes(a) <= d.l2_bytes;
  const auto tiled = [&](const Tile2D& tile, int unroll) {
    p.path = ConcatPath::tile_2d;
    p.unroll = unroll;
    p.index = concat_fits_int32(a) ? IndexType::int32 : IndexType::int64;
    p.grid = tile.grid();
    p.block = tile.block();
  };
  const Tile2D tile(a.num_tokens, a.num_heads, head_vecs, k2DTarget, 1);
  if (tile.ok()) {
    if (one_wave_2d(a, V, d)) return tiled(tile, 1);
    const Tile2D tile2(a.num_tokens, a.num_heads, head_vecs, k2DTarget, 2);
    const bool two_ok = V * in == 16 && tile2.ok();
    // Two tokens a thread (16-byte input vectors; wider ones, fp32 in, stay at one, as the
    // registers cost more occupancy than they buy): above L2 (DRAM-bound), and where they bring
    // the 2-D tiling into one wave, which measured faster than walking the tokens
    // (perf-notes/2026-12, 2026-12-06, "two tokens a thread bring the 2-D tiling into one wave").
    if (two_ok && (!fits_l2 || one_wave_2d(a, V, d, 2))) return tiled(tile2, 2);
    if (!fits_l2) return tiled(tile, 1);
  }
  // Between one wave and L2's size (L2-resident when the producer or a graph replay just
  // touched the data), walking tokens measures faster than either tiling (up to 20% against the
  // flat one, 28% against the 2-D one).
  if (fits_l2 &&
      !one_wave(b1, d.sm_count,
                d.resident_blocks(ref(a, KernelRef::Kernel::concat_flat, V), kOptThreads))) {
    p.path = ConcatPath::walk;
    p.unroll = V * in == 16 ? 4 : 1;  // wider vectors: registers
    // The token's items split evenly over the fewest blocks of at most kWalkThreads: 768 items
    // as 512 + 256 threads left half of every second block idle for the whole walk (5-18%
    // slower than even blocks, perf-notes/2026-12, "2026-12-03, 3c87bf0").
    const auto pt = static_cast<int>(per_token);
    const int even = (pt + kWalkThreads - 1) / kWalkThreads;
    const int threads = ((pt + even - 1) / even + 31) / 32 * 32;
    const int gx = (pt + threads - 1) / threads;
    const std::int64_t resident =
        static_cast<std::int64_t>(d.sm_count) *
        d.resident_blocks(ref(a, KernelRef::Kernel::concat_walk, V, p.unroll), threads);
    const std::int64_t gy =
        std::max<std::int64_t>(1, std::min<std::int64_t>({a.num_tokens, resident / gx, 65535}));
    // PDL's trigger after the walk instead of at the start above 45% of L2's size: up to 26%
    // faster with 12 heads at 37-48 MB (f32 -> bf16, bf16 -> fp8), at worst 2.5% slower above
    // it (64 heads, 31.6 MB); below it up to 9.5% slower (5.6 MB) (perf-notes/2026-12, "2026-12-03,
    // 3225377").
    p.late_trigger = 20 * concat_bytes(a) > 9 * d.l2_bytes;
    p.grid = Dim3{static_cast<unsigned>(gx), static_cast<unsigned>(gy), 1};
    p.block = Dim3{static_cast<unsigned>(threads), 1, 1};
    return;
  }
  // Shapes the 2-D tiling cannot take (a head's vectors above k2DTarget threads): flat.
  p.path = ConcatPath::flat;
  p.grid = Dim3{b1, 1, 1};
  p.block = Dim3{kOptThreads, 1, 1};
}

}  // namespace

bool concat_supported(DType in, DType out) {
  (void)out;  // every output dtype is supported
  return !is_fp8(in);
}

std::string to_string(ConcatPath p) {
  switch (p) {
    case ConcatPath::seed_port:
      return "seed_port";
    case ConcatPath::tile_2d:
      return "optimized_2d";
    case ConcatPath::walk:
      return "optimized_walk";
    case ConcatPath::flat:
      return "optimized_flat";
  }
  return "?";
}

ConcatPlan plan_concat(const ConcatArgs& a, Variant variant, const DeviceProps& d) {
  ConcatPlan p;
  if (a.num_tokens <= 0 || a.num_heads <= 0 || a.nope_dim <= 0 || a.rope_dim <= 0 ||
      a.num_tokens > 0x7fffffff) {
    p.error = "sizes out of range";
    return p;
  }
  if (!concat_supported(a.in_dtype, a.out_dtype)) {
    p.error = "unsupported dtype pair";
    return p;
  }
  switch (variant) {
    case Variant::seed_port:
      p.path = ConcatPath::seed_port;
      p.grid = Dim3{static_cast<unsigned>(a.num_tokens), 1, 1};
      p.block = Dim3{kSeedThreads, 1, 1};
      return p;
    case Variant::optimized:
      p.vec = pick_vec(a, d);
      plan_optimized(a, d, p);
      return p;
    case Variant::slot_order:
      p.error = "slot_order is a cache-write variant";
      return p;
  }
  p.error = "unknown variant";
  return p;
}

std::string plan_key(const ConcatPlan& p, DType in) {
  if (p.path == ConcatPath::seed_port) return "seed_port";
  std::string k = to_string(p.path) + " vec=" + vec_kind(p.vec, static_cast<int>(size_of(in)));
  if (p.path == ConcatPath::tile_2d)
    k += " unroll=" + std::to_string(p.unroll) + " " + to_string(p.index);
  if (p.path == ConcatPath::walk) k += p.late_trigger ? " late_trigger" : " early_trigger";
  return k;
}

std::string to_string(const ConcatPlan& p, DType in) {
  if (!p.error.empty()) return "not launchable: " + p.error;
  std::string s = plan_key(p, in);
  if (p.path != ConcatPath::seed_port) s += " V=" + std::to_string(p.vec);
  s += std::string(p.pdl ? " pdl" : " no_pdl") + " grid=" + to_string(p.grid) +
       " block=" + to_string(p.block);
  return s;
}

// The 2-D tiling: every vector kind in int32 and int64 at one token per thread; two only for
// 16-byte input vectors (above L2). The walk: every vector kind, either trigger. Flat: every kind.
std::set<std::string> reachable_concat_keys() {
  std::set<std::string> keys{"seed_port"};
  for (const std::string v : {"in16", "out16", "1"}) {
    for (const std::string i : {"int32", "int64"}) {
      keys.insert("optimized_2d vec=" + v + " unroll=1 " + i);
      if (v == "in16") keys.insert("optimized_2d vec=" + v + " unroll=2 " + i);
    }
    keys.insert("optimized_walk vec=" + v + " late_trigger");
    keys.insert("optimized_walk vec=" + v + " early_trigger");
    keys.insert("optimized_flat vec=" + v);
  }
  return keys;
}

}  // namespace kvbench::kernels
