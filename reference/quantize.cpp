#include "reference/quantize.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/reference.hpp"
#include "reference/slots.hpp"

// Every scale is a correctly rounded fp32 division, and FLT_MIN floors must not flush to zero;
// fast-math (reciprocal division, FTZ/DAZ) would silently break both.
#if defined(__FAST_MATH__)
#error "quantize.cpp must not be compiled with -ffast-math"
#endif

namespace kvbench::ref {
namespace {

void require_16bit_input(DType in, const char* what) {
  if (in != DType::bf16 && in != DType::f16)
    throw std::invalid_argument(std::string(what) + ": input dtype " + std::string(to_string(in)) +
                                " (expected bf16 or f16)");
}

const std::uint8_t* element(const void* base, DType t, std::int64_t index) {
  return static_cast<const std::uint8_t*>(base) + index * static_cast<std::int64_t>(size_of(t));
}

// Little-endian, whatever the host: the cache layouts are defined byte by byte.
void store_le32(std::uint8_t* dst, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<std::uint8_t>(bits >> (8 * i));
}

void store_le16(std::uint8_t* dst, std::uint16_t bits) {
  dst[0] = static_cast<std::uint8_t>(bits);
  dst[1] = static_cast<std::uint8_t>(bits >> 8);
}

std::vector<float> widen(DType in, const void* x, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  convert_n(in, x, DType::f32, out.data(), n);  // exact
  return out;
}

}  // namespace

std::string_view to_string(TileScaleRule rule) {
  switch (rule) {
    case TileScaleRule::raw:
      return "raw";
    case TileScaleRule::pow2:
      return "pow2";
  }
  throw std::invalid_argument("unknown tile scale rule");
}

float abs_max(DType in, const void* x, std::int64_t n) {
  require_16bit_input(in, "abs_max");
  float amax = 0.0f;
  for (float v : widen(in, x, n))
    if (!std::isnan(v)) amax = std::fmax(amax, std::fabs(v));
  return amax;
}

float tile_scale(TileScaleRule rule, float amax) {
  const float quotient = amax / kE4m3Max;  // IEEE division, correctly rounded
  switch (rule) {
    case TileScaleRule::raw:
      return std::fmax(quotient, std::numeric_limits<float>::min());
    case TileScaleRule::pow2: {
      const float v = std::fmax(quotient, kPow2ScaleFloor);
      if (std::isinf(v)) return v;
      // v is normal (>= 1e-4f): it is a power of two when its mantissa field is zero; otherwise
      // the next one up has the exponent field plus one and a zero mantissa.
      std::uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      if ((bits & 0x7FFFFFu) != 0) bits = ((bits >> 23) + 1u) << 23;
      float scale;
      std::memcpy(&scale, &bits, sizeof scale);
      return scale;
    }
  }
  throw std::invalid_argument("unknown tile scale rule");
}

float token_head_scale(float amax) { return std::fmax(amax / kE4m3Max, kTokenHeadScaleFloor); }

void quantize_e4m3(DType in, const void* x, std::int64_t n, float scale, std::uint8_t* out) {
  require_16bit_input(in, "quantize_e4m3");
  // convert_n's scaled path is the §3 cast of the correctly rounded fp32 quotient.
  convert_n(in, x, DType::fp8_e4m3, out, n, &scale);
}

float quantize_tile(TileScaleRule rule, DType in, const void* x, std::int64_t n,
                    std::uint8_t* codes) {
  const float scale = tile_scale(rule, abs_max(in, x, n));
  quantize_e4m3(in, x, n, scale, codes);
  return scale;
}

void write_ds_mla_entry(TileScaleRule rule, DType in, const void* kv_c, const void* k_pe,
                        std::uint8_t* entry) {
  require_16bit_input(in, "fp8_ds_mla");
  for (std::int64_t tile = 0; tile < kDsMlaTiles; ++tile) {
    const float scale = quantize_tile(rule, in, element(kv_c, in, tile * kDsMlaTile), kDsMlaTile,
                                      entry + tile * kDsMlaTile);
    store_le32(entry + kDsMlaScalesOffset + 4 * tile, scale);
  }
  // Rope stays bf16: a bf16 input is copied bit for bit, an fp16 one cast once (§3).
  std::uint16_t rope[kDsMlaRopeDim];
  convert_n(in, k_pe, DType::bf16, rope, kDsMlaRopeDim);
  for (std::int64_t j = 0; j < kDsMlaRopeDim; ++j)
    store_le16(entry + kDsMlaRopeOffset + 2 * j, rope[j]);
}

void write_token_head_row(DType in, const void* x, std::int64_t d, std::uint8_t* row) {
  const float scale = token_head_scale(abs_max(in, x, d));
  quantize_e4m3(in, x, d, scale, row);
  store_le32(row + d, scale);
}

void concat_and_cache_mla(const MlaCacheProblem& p) {
  const char* what = "concat_and_cache_mla";
  require_16bit_input(p.in_dtype, what);
  const bool ds = p.layout == MlaCacheLayout::fp8_ds_mla;
  if (ds && (p.lora_rank != kDsMlaLoraRank || p.rope_dim != kDsMlaRopeDim))
    throw std::invalid_argument(std::string(what) + ": fp8_ds_mla needs L = 512 and R = 64, not " +
                                std::to_string(p.lora_rank) + " and " + std::to_string(p.rope_dim));
  if (!ds && (p.cache_dtype == DType::f32))
    throw std::invalid_argument(std::string(what) + ": cache dtype f32 (expected bf16, f16, " +
                                "fp8_e4m3 or fp8_e5m2)");
  if (ds && p.scale != nullptr)
    throw std::invalid_argument(std::string(what) + ": fp8_ds_mla takes no per-tensor scale");
  const std::int64_t row = ds ? kDsMlaEntryBytes : p.lora_rank + p.rope_dim;
  if (p.entry_stride < row || p.block_stride < p.block_size * p.entry_stride)
    throw std::invalid_argument(std::string(what) + ": entry stride " +
                                std::to_string(p.entry_stride) + " or block stride " +
                                std::to_string(p.block_stride) + " below the dense extent");
  if (ds && (p.entry_stride % 16 != 0 || p.block_stride % 16 != 0))
    throw std::invalid_argument(std::string(what) + ": fp8_ds_mla strides " +
                                std::to_string(p.entry_stride) + " and " +
                                std::to_string(p.block_stride) + " must be multiples of 16 bytes");
  const std::size_t cache_size = ds ? 1 : size_of(p.cache_dtype);
  const detail::SlotMap slots{p.slot_mapping, nullptr, 0, -1, p.num_blocks * p.block_size, what};

  for (std::int64_t t = 0; t < p.num_tokens; ++t) {
    const std::int64_t s = detail::physical_slot(slots, t);
    if (s < 0) continue;
    std::uint8_t* entry =
        static_cast<std::uint8_t*>(p.cache) +
        ((s / p.block_size) * p.block_stride + (s % p.block_size) * p.entry_stride) *
            static_cast<std::int64_t>(cache_size);
    const std::uint8_t* kv_c = element(p.kv_c, p.in_dtype, t * p.kv_c_s0);
    const std::uint8_t* k_pe = element(p.k_pe, p.in_dtype, t * p.k_pe_s0);
    if (ds) {
      write_ds_mla_entry(p.rule, p.in_dtype, kv_c, k_pe, entry);
    } else {
      // The per-tensor scale divides kv_c and k_pe alike (SPEC.md §5).
      convert_n(p.in_dtype, kv_c, p.cache_dtype, entry, p.lora_rank, p.scale);
      convert_n(p.in_dtype, k_pe, p.cache_dtype,
                entry + p.lora_rank * static_cast<std::int64_t>(cache_size), p.rope_dim, p.scale);
    }
  }
}

void reshape_and_cache_flash_per_token_head(const TokenHeadCacheProblem& p) {
  const char* what = "reshape_and_cache_flash (per-token-head fp8)";
  require_16bit_input(p.in_dtype, what);
  const std::int64_t H = p.num_heads, D = p.head_size, BS = p.block_size;
  if (D % 4 != 0)
    throw std::invalid_argument(std::string(what) + ": head size " + std::to_string(D) +
                                " is not a multiple of 4 (the scale after each row is fp32)");
  const std::int64_t row = D + 4;
  // Inside a block, NHD puts slot o's heads next to each other; HND puts each head's BS slots
  // together.
  const bool nhd = p.layout == Layout::nhd;
  const std::int64_t head_stride = nhd ? row : BS * row;
  const std::int64_t slot_stride = nhd ? H * row : row;
  if (p.block_stride < BS * H * row)
    throw std::invalid_argument(std::string(what) + ": block stride " +
                                std::to_string(p.block_stride) + " below the dense extent " +
                                std::to_string(BS * H * row));
  const detail::SlotMap slots{p.slot_mapping, p.swa_slot_mapping, p.swa_size,
                              p.skip_slot,    p.num_blocks * BS,  what};

  for (std::int64_t t = 0; t < p.num_tokens; ++t) {
    const std::int64_t s = detail::physical_slot(slots, t);
    if (s < 0) continue;
    const std::int64_t offset = (s / BS) * p.block_stride + (s % BS) * slot_stride;
    for (std::int64_t h = 0; h < H; ++h) {
      write_token_head_row(p.in_dtype, element(p.key, p.in_dtype, t * p.key_s0 + h * p.key_s1), D,
                           p.key_cache + offset + h * head_stride);
      write_token_head_row(p.in_dtype,
                           element(p.value, p.in_dtype, t * p.value_s0 + h * p.value_s1), D,
                           p.value_cache + offset + h * head_stride);
    }
  }
}

}  // namespace kvbench::ref
