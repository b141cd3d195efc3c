#include "kernels/cache_write/plan.hpp"

#include <algorithm>
#include <numeric>

#include "kernels/common/access.hpp"
#include "kernels/common/fast_div.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kSeedThreads = 128;  // Triton's default num_warps=4
constexpr int kSeedHeadBlock = 4;  // the seed's HEAD_BLOCK
constexpr int kOptThreads = 256;
constexpr int kSlotThreads = 256;
constexpr int kTokenHeadThreads = 256;
constexpr int kTokenHeadVec = 4;      // values per access: 8 bytes read, 4 codes stored
constexpr int kTokenHeadMaxRegs = 8;  // vectors a lane holds: rows up to 32 * 8 * 4 = 1024 values

int next_pow2(std::int64_t x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

std::int64_t in_bytes(const CacheWriteArgs& a) {
  return static_cast<std::int64_t>(size_of(a.in_dtype));
}
std::int64_t out_bytes(const CacheWriteArgs& a) {
  return static_cast<std::int64_t>(size_of(a.out_dtype));
}

// Whether every access of the optimized variant can be `n` elements wide.
bool cache_vec_ok(const CacheWriteArgs& a, int n) {
  const auto in = static_cast<int>(in_bytes(a)), out = static_cast<int>(out_bytes(a));
  return divisible(a.head_size, n) && divisible(a.key_s0, n) && divisible(a.key_s1, n) &&
         divisible(a.value_s0, n) && divisible(a.value_s1, n) && divisible(a.block_stride, n) &&
         divisible(a.slot_stride, n) && divisible(a.head_stride, n) && vec_aligned(a.key, in, n) &&
         vec_aligned(a.value, in, n) && vec_aligned(a.key_cache, out, n) &&
         vec_aligned(a.value_cache, out, n);
}

// The widest access the shape allows: 16 bytes of the narrower type, 16 bytes of input, one
// element.
int widest_vec(const CacheWriteArgs& a) {
  const int wide = wide_vec(size_of(a.in_dtype), size_of(a.out_dtype)),
            narrow = input_vec(size_of(a.in_dtype));
  if (cache_vec_ok(a, wide)) return wide;
  if (narrow != wide && cache_vec_ok(a, narrow)) return narrow;
  return 1;
}

bool opt_fits_int32(const CacheWriteArgs& a) {
  return offsets_fit_int32(a.num_tokens, a.key_s0, a.key_s1, a.num_heads, a.head_size) &&
         offsets_fit_int32(a.num_tokens, a.value_s0, a.value_s1, a.num_heads, a.head_size) &&
         cache_offsets_fit_int32(a.num_slots, a.block_size, a.block_stride, a.slot_stride,
                                 a.num_heads, a.head_stride, a.head_size);
}

// Blocks of the optimized launch with `v`-element vectors (0 when too many).
unsigned cache_blocks(const CacheWriteArgs& a, int v, int threads = kOptThreads) {
  return grid_blocks(a.num_tokens * a.num_heads * (a.head_size / v), threads);
}

// Whether the case fits in one wave at the occupancy of the non-SWA int64 speculative kernel.
// The launched instantiation may hold fewer blocks per SM (16-bit to fp8 or f16 at V=8: 6
// against 8); sized from it, the launches between its wave and this one left the speculative
// kernel and ran 4-13% slower (perf-notes/2026-12, "2026-12-04, 90f71da"), so this wave stays.
bool fits_one_wave(const CacheWriteArgs& a, int vec, bool scaled, const DeviceProps& d) {
  const unsigned blocks = cache_blocks(a, vec);
  const KernelRef k{
      KernelRef::Kernel::cache_write_optimized, a.in_dtype, a.out_dtype, vec, 1, scaled};
  return blocks != 0 && one_wave(blocks, d.sm_count, d.resident_blocks(k, kOptThreads));
}

// Whether `optimized` takes the slot-order path (perf-notes/2026-12, "2026-12-03, 3a5a99a",
// configs/studies/slot_order.yaml). Measured on random slots, it wins where the token-order write
// scatters rows badly: HND heads whose rows are not whole 256-byte units (D=80 bf16, 160 bytes: 19%
// faster at T=131072, 9% at 32768) and slots of 8 KB or more (H=32 D=128 bf16: 2-4% at T=32768 and
// 131072). It loses 2-10% on every other shape there, and 0.6-2.2 us at T=1024 (one launch more,
// and a pass over every slot). So: those two shapes where they measure a win (HND rows from 2x L2
// moved, 8 KB slots from 8x), a dense cache (at most two slots per token) and a slot table.
bool prefer_slot_order(const CacheWriteArgs& a, std::int64_t l2) {
  if (a.slot_table == nullptr || a.num_slots > 2 * a.num_tokens) return false;
  const std::int64_t moved =
      2 * a.num_tokens * a.num_heads * a.head_size * (in_bytes(a) + out_bytes(a));
  const std::int64_t head_row = a.head_size * out_bytes(a);
  const bool hnd = a.slot_stride < a.head_stride;
  // HND D=80 wins from 2.7x L2 (T=32768) up; 8 KB slots are even at 4.3x L2 (T=8192).
  return (hnd && head_row % 256 != 0 && moved >= 2 * l2) ||
         (a.num_heads * head_row >= 8192 && moved >= 8 * l2);
}

void plan_optimized(const CacheWriteArgs& a, int vec, const DeviceProps& d, CacheWritePlan& p) {
  p.path = CacheWritePath::optimized;
  p.vec = vec;
  p.scaled = a.scale != ScaleMode::none;
  const std::int64_t per_token = a.num_heads * (a.head_size / vec);
  if (per_token > (1 << 30)) {
    p.error = "more than 2^30 vectors per token";
    return;
  }
  // One item per thread: faster than 2 or 4 per thread at every size (perf-notes/2026-12).
  // Fewer blocks than SMs: blocks of half the size reach twice as many SMs (4-6% faster at T=16
  // and 128, nowhere slower beyond noise: perf-notes/2026-12, "2026-12-03, a72b0dd and 056177f").
  const unsigned wide = cache_blocks(a, vec);
  if (wide == 0) {
    p.error = "grid too large";
    return;
  }
  const int threads = wide < static_cast<unsigned>(d.sm_count) ? kOptThreads / 2 : kOptThreads;
  p.grid = Dim3{cache_blocks(a, vec, threads), 1, 1};
  p.block = Dim3{static_cast<unsigned>(threads), 1, 1};
  p.pdl = true;
  // In one wave, K/V are loaded before the slot is known (latency-bound). Above it, only for
  // tokens that are written, so padding tokens cost only their slot entry: except for scaled
  // writes without SWA, whose register cap leaves fewer threads to hide the second latency
  // (speculation 1.4-1.9% faster there, and 1-2.5% slower for SWA, whose test cases skip every
  // 16th token: perf-notes/2026-12, "2026-12-03, b11fa2f"). An L2 prefetch of the rows before the
  // lookup instead is no faster, and 5% slower with padding tokens (perf-notes/2026-12,
  // "2026-12-03, 9f428ec, fae5545, 8878a73").
  const bool in_one_wave = fits_one_wave(a, vec, p.scaled, d);
  p.speculative = (p.scaled && a.swa_slot_mapping == nullptr) || in_one_wave;
  // Past one wave, 16-bit -> fp8 scaled writes in 16-element vectors take a kernel compiled for
  // 6 blocks per SM instead of 5 (2-6% faster from T=4096 up; perf-notes/2026-12, "2026-12-03,
  // 0cbd63d").
  const bool cap6 = size_of(a.in_dtype) == 2 && size_of(a.out_dtype) == 1 &&
                    vec == wide_vec(size_of(a.in_dtype), size_of(a.out_dtype));
  p.many_waves = p.scaled && cap6 && !in_one_wave;
  // SWA kernels of their own: where the table lookup is compiled in, ptxas issues it ahead of
  // the K/V loads, and the early loads wait for the slot (perf-notes/2026-12, "2026-12-04,
  // c22264e").
  p.swa = a.swa_slot_mapping != nullptr;
  // int32 offsets where every offset fits: less address arithmetic after the slot load, a
  // smaller argument (perf-notes/2026-12, "2026-12-04, 1e639d5").
  p.index = opt_fits_int32(a) ? IndexType::int32 : IndexType::int64;
}

// slot_order: pass 1 inverts the slot mapping into a table, pass 2 writes the cache in chunks
// of consecutive slots (kernels/cache_write/slot_order.cu).
void plan_slot_order(const CacheWriteArgs& a, int vec, CacheWritePlan& p) {
  p.path = CacheWritePath::slot_order;
  p.vec = vec;
  p.scaled = a.scale != ScaleMode::none;
  if (a.slot_table == nullptr || a.num_slots <= 0 || a.num_slots > 0x7fffffff) {
    p.error = "slot_order needs a slot table of fewer than 2^31 slots";
    return;
  }
  // As many slots per block as one thread per item allows (at least one slot, whose items the
  // block's threads then loop over), rounded to whole 256-byte runs of the cache: `c0` slots
  // make one, so that no unit is split between two blocks (3.5% faster for HND D=80, 2.4% for
  // D=576, the same elsewhere: perf-notes/2026-12, "2026-12-03, 3a5a99a" block-size experiment).
  const std::int64_t per_slot = a.num_heads * (a.head_size / vec);
  std::int64_t chunk = std::max<std::int64_t>(1, kSlotThreads / per_slot);
  p.head_major = a.slot_stride < a.head_stride;  // HND: a head's slots are contiguous
  const std::int64_t run = (p.head_major ? 1 : a.num_heads) * a.head_size * out_bytes(a);
  const std::int64_t c0 = 256 / std::gcd<std::int64_t>(run, 256);
  if (c0 <= 16) chunk = chunk < c0 ? c0 : chunk / c0 * c0;
  if (chunk * per_slot > 0x7fffffff - kSlotThreads) {
    p.error = "chunk too large";
    return;
  }
  const std::int64_t threads =
      std::min<std::int64_t>(kSlotThreads, (chunk * per_slot + 31) / 32 * 32);
  const unsigned fill_blocks = grid_blocks(a.num_tokens, kOptThreads);
  const unsigned chunks = grid_blocks(a.num_slots, chunk);
  if (fill_blocks == 0 || chunks == 0) {
    p.error = "grid too large";
    return;
  }
  p.chunk = chunk;
  p.pdl = true;
  p.fill_grid = Dim3{fill_blocks, 1, 1};
  p.fill_block = Dim3{kOptThreads, 1, 1};
  p.grid = Dim3{chunks, 1, 1};
  p.block = Dim3{static_cast<unsigned>(threads), 1, 1};
}

// per_token_head (SPEC.md §7, token_head.cu): a sub-warp of `lanes` lanes per (token, head) row,
// each lane holding 4-value vectors; its amax is a max over the lane's values and then over the
// lanes (one REDUX for a whole warp, else log2(lanes) xor-shuffles). Lanes: the power of two that
// covers the row's vectors, up to a warp; a row of more than 32 * 8 vectors (D > 1024) is read
// twice instead of held in registers.
void plan_token_head(const CacheWriteArgs& a, CacheWritePlan& p) {
  p.path = CacheWritePath::token_head;
  p.vec = kTokenHeadVec;
  p.scaled = true;
  if ((a.in_dtype != DType::bf16 && a.in_dtype != DType::f16) || a.out_dtype != DType::fp8_e4m3) {
    p.error = "per_token_head takes bf16 or f16 into fp8_e4m3";
    return;
  }
  if (a.head_size % kTokenHeadVec != 0) {
    p.error = "per_token_head needs D a multiple of 4";
    return;
  }
  // Codes are stored 4 at a time and the scale as one fp32: every row 4-byte aligned.
  if (!divisible(a.block_stride, 4) || !divisible(a.slot_stride, 4) ||
      !divisible(a.head_stride, 4) || !vec_aligned(a.key_cache, 1, 4) ||
      !vec_aligned(a.value_cache, 1, 4)) {
    p.error = "per_token_head cache rows not 4-byte aligned";
    return;
  }
  if (!divisible(a.key_s0, kTokenHeadVec) || !divisible(a.key_s1, kTokenHeadVec) ||
      !divisible(a.value_s0, kTokenHeadVec) || !divisible(a.value_s1, kTokenHeadVec) ||
      !vec_aligned(a.key, 2, kTokenHeadVec) || !vec_aligned(a.value, 2, kTokenHeadVec)) {
    p.error = "per_token_head inputs not in aligned 4-value vectors";
    return;
  }
  const std::int64_t vecs = a.head_size / kTokenHeadVec;
  int lanes = 1;
  while (lanes < 32 && lanes < vecs) lanes *= 2;
  const std::int64_t per_lane = (vecs + lanes - 1) / lanes;
  int regs = 1;
  while (regs < per_lane) regs *= 2;
  p.lanes = lanes;
  p.row_vecs = regs <= kTokenHeadMaxRegs ? regs : 0;
  // T < 2^31 (checked above); rows of more than 2^40 heads would not fit in memory anyway.
  if (a.num_heads > (std::int64_t{1} << 40) / a.num_tokens) {
    p.error = "grid too large";
    return;
  }
  const std::int64_t rows = a.num_tokens * a.num_heads;
  const std::int64_t threads =
      std::min<std::int64_t>(kTokenHeadThreads, (rows * lanes + 31) / 32 * 32);
  const std::int64_t blocks = (rows * lanes + threads - 1) / threads;
  if (blocks > 0x7fffffff) {
    p.error = "grid too large";
    return;
  }
  p.pdl = true;
  p.grid = Dim3{static_cast<unsigned>(blocks), 1, 1};
  p.block = Dim3{static_cast<unsigned>(threads), 1, 1};
}

}  // namespace

bool cache_write_supported(DType in, DType out) {
  (void)out;  // every output dtype is supported
  return !is_fp8(in);
}

std::string to_string(CacheWritePath p) {
  switch (p) {
    case CacheWritePath::seed_port:
      return "seed_port";
    case CacheWritePath::optimized:
      return "optimized";
    case CacheWritePath::slot_order:
      return "slot_order";
    case CacheWritePath::token_head:
      return "token_head";
  }
  return "?";
}

CacheWritePlan plan_cache_write(const CacheWriteArgs& a, Variant variant, const DeviceProps& d) {
  CacheWritePlan p;
  if (a.num_tokens <= 0 || a.num_heads <= 0 || a.head_size <= 0 || a.block_size <= 0 ||
      a.num_tokens > 0x7fffffff || a.head_size > (1 << 20)) {
    p.error = "sizes out of range";
    return p;
  }
  if (a.scale == ScaleMode::per_token_head) {  // no caller scale: each row's own (SPEC.md §7)
    if (variant == Variant::optimized)
      plan_token_head(a, p);
    else
      p.error = "per_token_head runs on optimized only";
    return p;
  }
  if (a.scale != ScaleMode::none && (a.k_scale == nullptr || a.v_scale == nullptr)) {
    p.error = "scaled write without scales";
    return p;
  }
  if (!cache_write_supported(a.in_dtype, a.out_dtype)) {
    p.error = "unsupported dtype pair";
    return p;
  }
  switch (variant) {
    case Variant::seed_port: {
      const std::int64_t head_blocks = (a.num_heads + kSeedHeadBlock - 1) / kSeedHeadBlock;
      if (head_blocks > 65535) {
        p.error = "more than 65535 head blocks";
        return p;
      }
      p.path = CacheWritePath::seed_port;
      p.grid = Dim3{static_cast<unsigned>(a.num_tokens), static_cast<unsigned>(head_blocks), 1};
      p.block = Dim3{kSeedThreads, 1, 1};
      p.seed_block_d = next_pow2(a.head_size);
      return p;
    }
    case Variant::optimized: {
      if (prefer_slot_order(a, d.l2_bytes)) {
        plan_slot_order(a, widest_vec(a), p);
        return p;
      }
      const int wide = wide_vec(size_of(a.in_dtype), size_of(a.out_dtype)),
                narrow = input_vec(size_of(a.in_dtype));
      const bool scaled = a.scale != ScaleMode::none;
      if (narrow != wide && cache_vec_ok(a, narrow)) {
        // A scaled write that fits in one wave runs its code once: there, 16-byte input
        // vectors (half the inlined division code) beat the wide ones (perf-notes/2026-12,
        // "2026-12-02, 5913ad9"). Unscaled narrowing casts in 16-byte input vectors
        // (perf-notes/2026-12, "2026-12-03, 0b5b269 and 0db2bcd"): 16-bit -> fp8 at every size
        // (7-14% faster at T <= 128, 14-28% at T=1024, 2% above L2); f32 inputs in one wave only
        // (2-26% faster there, 1-2.6% slower at T=131072).
        const bool take = scaled ? fits_one_wave(a, narrow, true, d)
                                 : size_of(a.in_dtype) == 2 || fits_one_wave(a, narrow, false, d);
        if (take) {
          plan_optimized(a, narrow, d, p);
          return p;
        }
      }
      plan_optimized(a, widest_vec(a), d, p);
      return p;
    }
    case Variant::slot_order:
      plan_slot_order(a, widest_vec(a), p);
      return p;
  }
  p.error = "unknown variant";
  return p;
}

std::string plan_key(const CacheWritePlan& p, DType in) {
  const std::string vec = " vec=" + vec_kind(p.vec, static_cast<int>(size_of(in)));
  const std::string scaled = p.scaled ? " scaled" : " unscaled";
  switch (p.path) {
    case CacheWritePath::seed_port:
      return "seed_port";
    case CacheWritePath::optimized:
      return "optimized" + vec + " " + to_string(p.index) +
             (p.speculative ? " speculative" : " late_loads") + scaled +
             (p.many_waves ? " many_waves" : "") + (p.swa ? " swa" : " no_swa");
    case CacheWritePath::slot_order:
      return "slot_order" + vec + scaled + (p.head_major ? " head_major" : " slot_major");
    case CacheWritePath::token_head:
      return p.row_vecs > 0 ? "token_head regs=" + std::to_string(p.row_vecs)
                            : std::string("token_head two_pass");
  }
  return "?";
}

std::string to_string(const CacheWritePlan& p, DType in) {
  if (!p.error.empty()) return "not launchable: " + p.error;
  std::string s = plan_key(p, in);
  if (p.path == CacheWritePath::token_head) s += " lanes=" + std::to_string(p.lanes);
  if (p.path != CacheWritePath::seed_port) s += " V=" + std::to_string(p.vec);
  if (p.path == CacheWritePath::seed_port) s += " block_d=" + std::to_string(p.seed_block_d);
  if (p.path == CacheWritePath::slot_order)
    s += " chunk=" + std::to_string(p.chunk) + " fill_grid=" + to_string(p.fill_grid) +
         " fill_block=" + to_string(p.fill_block);
  s += std::string(p.pdl ? " pdl" : " no_pdl") + " grid=" + to_string(p.grid) +
       " block=" + to_string(p.block);
  return s;
}

// optimized: every (vector kind, index, scaled, SWA, speculative) except scaled writes without
// SWA past one wave, which stay speculative; the many-waves kernel only for scaled 16-bit ->
// fp8 writes in 16-element (out16) vectors past one wave, speculative exactly without SWA.
// slot_order: every vector kind, scaled or not, either item order.
// token_head: each count of register-held vectors, and the two-pass row.
std::set<std::string> reachable_cache_write_keys() {
  std::set<std::string> keys{"seed_port",         "token_head regs=1", "token_head regs=2",
                             "token_head regs=4", "token_head regs=8", "token_head two_pass"};
  for (const std::string v : {"in16", "out16", "1"}) {
    for (const std::string sc : {" unscaled", " scaled"})
      for (const std::string order : {" head_major", " slot_major"})
        keys.insert("slot_order vec=" + v + sc + order);
    for (const std::string i : {"int32", "int64"})
      for (const bool scaled : {false, true})
        for (const bool swa : {false, true})
          for (const bool spec : {false, true}) {
            if (scaled && !swa && !spec) continue;
            const std::string base = "optimized vec=" + v + " " + i +
                                     (spec ? " speculative" : " late_loads") +
                                     (scaled ? " scaled" : " unscaled");
            keys.insert(base + (swa ? " swa" : " no_swa"));
            if (scaled && v == "out16" && spec == !swa)
              keys.insert(base + " many_waves" + (swa ? " swa" : " no_swa"));
          }
  }
  return keys;
}

}  // namespace kvbench::kernels
