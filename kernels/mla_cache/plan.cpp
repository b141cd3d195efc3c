#include "kernels/mla_cache/plan.hpp"

#include <algorithm>

#include "kernels/common/access.hpp"
#include "kernels/common/plan.hpp"

namespace kvbench::kernels {
namespace {

constexpr int kThreads = 256;  // threads a block is given, at most
constexpr int kDsWarps = 4;    // fp8_ds_mla: tokens (one warp each) per block, at most

// Whether every access can be `n` elements wide: widths and strides divisible, pointers aligned.
bool vec_ok(const MlaCacheArgs& a, int n) {
  const int in = static_cast<int>(size_of(a.in_dtype)),
            out = static_cast<int>(size_of(a.out_dtype));
  return divisible(a.lora_rank, n) && divisible(a.rope_dim, n) && divisible(a.kv_c_s0, n) &&
         divisible(a.k_pe_s0, n) && divisible(a.entry_stride, n) && divisible(a.block_stride, n) &&
         vec_aligned(a.kv_c, in, n) && vec_aligned(a.k_pe, in, n) && vec_aligned(a.cache, out, n);
}

// A block holds whole rows: x runs over a row's vectors (looping when a row has more than
// kThreads), y over tokens. No index division per element; a padding token's threads leave
// together.
void shape(const MlaCacheArgs& a, MlaCachePlan& p) {
  const std::int64_t row_vecs = (a.lora_rank + a.rope_dim) / p.vec;
  const auto x = static_cast<unsigned>(std::min<std::int64_t>(row_vecs, kThreads));
  const auto y = static_cast<unsigned>(std::min<std::int64_t>(kThreads / x, a.num_tokens));
  const std::int64_t blocks = (a.num_tokens + y - 1) / y;
  if (blocks > 0x7fffffff) {
    p.error = "grid too large";
    return;
  }
  p.grid = Dim3{static_cast<unsigned>(blocks), 1, 1};
  p.block = Dim3{x, y, 1};
}

// fp8_ds_mla (SPEC.md §6): the layout's own sizes, its 16-byte aligned entries, and inputs that
// 16-byte loads can read; "" when the launch can take them.
std::string ds_refusal(const MlaCacheArgs& a) {
  if (a.lora_rank != 512 || a.rope_dim != 64) return "fp8_ds_mla needs L = 512 and R = 64";
  if (a.out_dtype != DType::fp8_e4m3) return "fp8_ds_mla stores e4m3 codes";
  if (a.scale != nullptr) return "fp8_ds_mla takes no per-tensor scale";
  if (a.entry_stride % 16 != 0 || a.block_stride % 16 != 0 || !vec_aligned(a.cache, 1, 16))
    return "fp8_ds_mla cache entries not 16-byte aligned";
  if (!divisible(a.kv_c_s0, 8) || !divisible(a.k_pe_s0, 8) || !vec_aligned(a.kv_c, 2, 8) ||
      !vec_aligned(a.k_pe, 2, 8))
    return "fp8_ds_mla inputs not in 16-byte rows";
  return "";
}

// One warp per token, up to kDsWarps tokens a block.
void shape_ds(const MlaCacheArgs& a, MlaCachePlan& p) {
  const auto warps = static_cast<unsigned>(std::min<std::int64_t>(kDsWarps, a.num_tokens));
  p.grid = Dim3{static_cast<unsigned>((a.num_tokens + warps - 1) / warps), 1, 1};
  p.block = Dim3{32 * warps, 1, 1};
}

}  // namespace

bool mla_cache_supported(DType in, DType out) {
  return (in == DType::f16 || in == DType::bf16) && out != DType::f32;
}

std::string to_string(MlaCachePath p) {
  switch (p) {
    case MlaCachePath::plain:
      return "plain";
    case MlaCachePath::fp8_ds_mla:
      return "fp8_ds_mla";
  }
  return "?";
}

MlaCachePlan plan_mla_cache(const MlaCacheArgs& a, Variant variant, const DeviceProps&) {
  MlaCachePlan p;
  if (a.num_tokens <= 0 || a.lora_rank <= 0 || a.rope_dim <= 0 || a.block_size <= 0 ||
      a.num_tokens > 0x7fffffff) {
    p.error = "sizes out of range";
    return p;
  }
  if (!mla_cache_supported(a.in_dtype, a.out_dtype)) {
    p.error = "unsupported dtype pair";
    return p;
  }
  if (variant != Variant::optimized) {
    p.error = "concat_and_cache_mla has one variant, optimized";
    return p;
  }
  if (a.entry == MlaEntry::fp8_ds_mla) {
    p.path = MlaCachePath::fp8_ds_mla;
    p.tile_scale = a.tile_scale;
    p.vec = 16;  // a lane's kv_c values: two 16-byte loads, one 16-byte store
    p.error = ds_refusal(a);
    if (p.error.empty()) shape_ds(a, p);
    return p;
  }
  // 16-byte input vectors (8 values): one load, one conversion per pair, one store of 16 (16-bit
  // caches) or 8 (fp8) bytes; one element where a width, stride or pointer does not allow it.
  const int wide = input_vec(size_of(a.in_dtype));
  p.vec = vec_ok(a, wide) ? wide : 1;
  shape(a, p);
  return p;
}

std::string plan_key(const MlaCachePlan& p, DType in) {
  if (p.path == MlaCachePath::fp8_ds_mla)
    return std::string("fp8_ds_mla tile=") + (p.tile_scale == TileScale::pow2 ? "pow2" : "raw");
  return to_string(p.path) + " vec=" + vec_kind(p.vec, static_cast<int>(size_of(in)));
}

std::string to_string(const MlaCachePlan& p, DType in) {
  if (!p.error.empty()) return "not launchable: " + p.error;
  const std::string v = p.path == MlaCachePath::plain ? " V=" + std::to_string(p.vec) : "";
  return plan_key(p, in) + v + (p.pdl ? " pdl" : " no_pdl") + " grid=" + to_string(p.grid) +
         " block=" + to_string(p.block);
}

std::set<std::string> reachable_mla_cache_keys() {
  return {"plain vec=in16", "plain vec=1", "fp8_ds_mla tile=raw", "fp8_ds_mla tile=pow2"};
}

}  // namespace kvbench::kernels
