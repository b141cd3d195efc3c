// SPEC.md §3 proven exhaustively: every fp16 and bf16 bit pattern to every output type, every
// one of the 2^32 fp32 bit patterns to each narrower type, and the scaled cast of the cache
// write, converted on the device by kernels/common/convert.cuh and compared bit for bit with the
// reference's conversion. Zero differences allowed, NaNs included (docs/validation.md).
// Skips visibly without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cache_write/cache_write.hpp"
#include "kernels/mla_cache/mla_cache.hpp"
#include "reference/quantize.hpp"
#include "reference/reference.hpp"
#include "runtime/cuda_resources.hpp"
#include "tests/gpu/convert_device.hpp"

namespace kvbench {
namespace {

#define ASSERT_CUDA(call) \
  ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

// Differences found by the host threads; the first few are kept with their inputs.
struct Report {
  std::mutex m;
  std::int64_t count = 0;
  std::int64_t both_nan = 0;  // differing NaN bits only: a NaN-policy difference, not rounding
  std::vector<std::string> first;
  std::string summary() const {
    std::string s = std::to_string(count) + " differences (" + std::to_string(both_nan) +
                    " of them NaN vs NaN)";
    for (const auto& f : first) s += "\n  " + f;
    return s;
  }
};

std::uint64_t load(const unsigned char* p, std::size_t size) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}

bool is_nan_bits(DType t, std::uint64_t b) {
  switch (t) {
    case DType::f32:
      return (b & 0x7FFFFFFFu) > 0x7F800000u;
    case DType::f16:
      return (b & 0x7FFFu) > 0x7C00u;
    case DType::bf16:
      return (b & 0x7FFFu) > 0x7F80u;
    case DType::fp8_e4m3:
      return (b & 0x7Fu) == 0x7Fu;
    case DType::fp8_e5m2:
      return (b & 0x7Fu) > 0x7Cu;
  }
  return false;
}

// Compares device[i] with the reference conversion of bit pattern first + i, on every core.
void compare_on_host(DType in, DType out, std::uint64_t first, std::int64_t n,
                     const unsigned char* device, const float* scale, Report& report) {
  const std::size_t isz = size_of(in), osz = size_of(out);
  const auto workers = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t per = (n + workers - 1) / workers;
  auto work = [&](std::int64_t begin, std::int64_t end) {
    constexpr std::int64_t kBlock = 1 << 16;
    std::vector<unsigned char> inputs(kBlock * isz), expected(kBlock * osz);
    std::int64_t count = 0, both_nan = 0;
    std::vector<std::string> first_found;
    for (std::int64_t b = begin; b < end; b += kBlock) {
      const std::int64_t len = std::min(kBlock, end - b);
      for (std::int64_t i = 0; i < len; ++i) {
        const std::uint64_t bits = first + static_cast<std::uint64_t>(b + i);
        std::memcpy(inputs.data() + i * isz, &bits, isz);  // little-endian: the low bytes
      }
      ref::convert_n(in, inputs.data(), out, expected.data(), len, scale);
      const unsigned char* got = device + b * osz;
      if (std::memcmp(expected.data(), got, len * osz) == 0) continue;
      for (std::int64_t i = 0; i < len; ++i) {
        const std::uint64_t e = load(expected.data() + i * osz, osz), a = load(got + i * osz, osz);
        if (e == a) continue;
        ++count;
        both_nan += is_nan_bits(out, e) && is_nan_bits(out, a);
        if (first_found.size() < 8) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s 0x%0*llx -> %s%s: expected 0x%0*llx, device 0x%0*llx",
                        std::string(to_string(in)).c_str(), static_cast<int>(2 * isz),
                        static_cast<unsigned long long>(load(inputs.data() + i * isz, isz)),
                        std::string(to_string(out)).c_str(), scale ? " (scaled)" : "",
                        static_cast<int>(2 * osz), static_cast<unsigned long long>(e),
                        static_cast<int>(2 * osz), static_cast<unsigned long long>(a));
          first_found.emplace_back(buf);
        }
      }
    }
    std::lock_guard<std::mutex> lock(report.m);
    report.count += count;
    report.both_nan += both_nan;
    for (auto& f : first_found)
      if (report.first.size() < 8) report.first.push_back(std::move(f));
  };
  std::vector<std::thread> pool;
  for (std::int64_t b = 0; b < n; b += per) pool.emplace_back(work, b, std::min(n, b + per));
  for (auto& t : pool) t.join();
}

class ConvertGpu : public ::testing::Test {
 protected:
  static constexpr std::int64_t kChunk = std::int64_t{1} << 26;  // inputs per launch

  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no CUDA device: the exhaustive conversion test needs the GPU host";
    }
    ASSERT_CUDA(cudaSetDevice(0));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaMalloc(&device_, kChunk * 4));
    ASSERT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&host_), kChunk * 4));
    ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&scale_), sizeof(float)));
  }
  void TearDown() override {
    if (device_) cudaFree(device_);
    if (host_) cudaFreeHost(host_);
    if (scale_) cudaFree(scale_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Converts bit patterns [first, first + n) on the device and checks them against the host.
  void check(DType in, DType out, std::uint64_t first, std::int64_t n, const float* scale,
             bool paired, Report& report) {
    for (std::int64_t done = 0; done < n; done += kChunk) {
      const std::int64_t len = std::min(kChunk, n - done);
      const std::uint64_t start = first + static_cast<std::uint64_t>(done);
      if (scale != nullptr) {
        ASSERT_CUDA(cudaMemcpyAsync(scale_, scale, sizeof(float), cudaMemcpyHostToDevice, stream_));
      }
      ASSERT_CUDA(testing::convert_on_device(in, out, start, len, device_, scale ? scale_ : nullptr,
                                             paired, stream_));
      ASSERT_CUDA(
          cudaMemcpyAsync(host_, device_, len * size_of(out), cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      compare_on_host(in, out, start, len, host_, scale, report);
    }
  }

  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;
  unsigned char* host_ = nullptr;
  float* scale_ = nullptr;
};

constexpr DType kOutputs[] = {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3,
                              DType::fp8_e5m2};
// Scales as the cache write sees them: not powers of two, so the division rounds; then the
// edges of kernels::Divisor's fast path (2^-60, 2^60) and scales beyond them.
constexpr float kScales[] = {
    0.3f,           1.0f / 3.0f,     2.5f,   7.1f,  1e-3f,  0x1p-60f, 0x1p60f,
    0x1.fffffep59f, 0x1.000002p-60f, 1e-20f, 3e18f, 1e-40f, 3e38f};
// The scalar conversions (seed_port) and the paired ones with Divisor (optimized).
constexpr bool kPaired[] = {false, true};

TEST_F(ConvertGpu, Every16BitPatternToEveryType) {
  for (bool paired : kPaired)
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : kOutputs) {
        Report r;
        check(in, out, 0, 1 << 16, nullptr, paired, r);
        EXPECT_EQ(r.count, 0) << to_string(in) << " -> " << to_string(out)
                              << (paired ? " (paired)" : "") << ": " << r.summary();
      }
}

TEST_F(ConvertGpu, Every16BitPatternScaledToEveryType) {
  for (bool paired : kPaired)
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : kOutputs)
        for (float s : kScales) {
          Report r;
          check(in, out, 0, 1 << 16, &s, paired, r);
          EXPECT_EQ(r.count, 0) << to_string(in) << " / " << s << " -> " << to_string(out)
                                << (paired ? " (paired, Divisor)" : "") << ": " << r.summary();
        }
}

// Divisor's fast path is exact where it is taken: within [2^-60, 2^60] every step scales with
// the operands' exponents, so checking every (divisor significand, fp16 significand) pair, 2^33
// quotients, covers every 16-bit input and every scale that takes the fast path.
TEST_F(ConvertGpu, DivisorMatchesIeeeDivisionOnEverySignificandPair) {
  unsigned long long* differences = nullptr;
  unsigned* first = nullptr;
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&differences), sizeof *differences));
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&first), 3 * sizeof *first));
  ASSERT_CUDA(cudaMemsetAsync(differences, 0, sizeof *differences, stream_));
  ASSERT_CUDA(cudaMemsetAsync(first, 0, 3 * sizeof *first, stream_));
  ASSERT_CUDA(testing::check_divisor_on_device(differences, first, stream_));
  unsigned long long count = 0;
  unsigned operands[3] = {};
  ASSERT_CUDA(cudaMemcpyAsync(&count, differences, sizeof count, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(operands, first, sizeof operands, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaFree(differences);
  cudaFree(first);
  EXPECT_EQ(count, 0u) << "first: x=0x" << std::hex << operands[1] << " s=0x" << operands[2];
  std::printf("2^33 Divisor quotients checked against __fdiv_rn: %llu differences\n", count);
}

// The significand check above holds at every exponent of the fast range only if the
// reciprocal scales exactly with the divisor's exponent: checked for all 2^23 significands at
// each of the 121 exponents.
TEST_F(ConvertGpu, DivisorReciprocalScalesWithTheExponent) {
  unsigned long long* counts = nullptr;
  unsigned* first = nullptr;
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&counts), 2 * sizeof *counts));
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&first), 2 * sizeof *first));
  ASSERT_CUDA(cudaMemsetAsync(counts, 0, 2 * sizeof *counts, stream_));
  ASSERT_CUDA(cudaMemsetAsync(first, 0, 2 * sizeof *first, stream_));
  ASSERT_CUDA(testing::check_reciprocal_on_device(counts, first, stream_));
  unsigned long long host[2] = {};
  unsigned divisor[2] = {};
  ASSERT_CUDA(cudaMemcpyAsync(host, counts, sizeof host, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(divisor, first, sizeof divisor, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaFree(counts);
  cudaFree(first);
  EXPECT_EQ(host[0], 0u) << "first: s=0x" << std::hex << divisor[1];
  EXPECT_EQ(host[1], 0u) << "reciprocals that are not RN(1/s)";
  std::printf("~2^30 fast divisors: %llu reciprocals off their significand's, %llu not RN(1/s)\n",
              host[0], host[1]);
}

// The scaled cache write end to end, through the kernels kvbench times: every 16-bit pattern as
// K and V, with K and V scales that differ, inside Divisor's fast range and outside it, so that
// both its fast path and the IEEE redo after the store (store_scaled_pair) run in the real
// kernels. T=64 fits one wave (16-byte input vectors for fp8); T=4096 does not (16-byte output
// vectors for fp8), with and without an (identity) SWA table, which selects the kernel that loads
// K/V after the slot. Slot t is token t, NHD, so cache element i holds input element i: K pattern
// i mod 2^16, V pattern i+1 mod 2^16. The caches are filled with 0xFF before every launch.
TEST_F(ConvertGpu, ScaledCacheWriteOfEvery16BitPattern) {
  constexpr std::int64_t kH = 8, kD = 128, kBS = 16;
  constexpr float kScalePairs[][2] = {{0.3f, 7.1f}, {0x1p60f, 1e-20f}, {3e18f, 0.3f}};
  for (std::int64_t T : {64, 4096}) {
    const std::int64_t n = T * kH * kD;
    std::vector<std::uint16_t> k_in(n), v_in(n);
    for (std::int64_t i = 0; i < n; ++i) {
      k_in[i] = static_cast<std::uint16_t>(i);
      v_in[i] = static_cast<std::uint16_t>(i + 1);
    }
    std::vector<std::int64_t> slots(T);
    for (std::int64_t t = 0; t < T; ++t) slots[t] = t;
    const DeviceBuffer k(n * 2), v(n * 2), kc(n * 2), vc(n * 2), sl(T * 8);
    const DeviceBuffer scales(2 * sizeof(float));
    ASSERT_CUDA(cudaMemcpyAsync(k.get(), k_in.data(), n * 2, cudaMemcpyHostToDevice, stream_));
    ASSERT_CUDA(cudaMemcpyAsync(v.get(), v_in.data(), n * 2, cudaMemcpyHostToDevice, stream_));
    ASSERT_CUDA(cudaMemcpyAsync(sl.get(), slots.data(), T * 8, cudaMemcpyHostToDevice, stream_));
    std::vector<unsigned char> got(n * 2);
    for (bool swa : {false, true}) {
      if (swa && T == 64) continue;
      for (DType in : {DType::f16, DType::bf16})
        for (DType out : {DType::fp8_e4m3, DType::bf16})
          for (const auto& ks : kScalePairs) {
            kernels::CacheWriteArgs a{};
            a.key = k.get();
            a.value = v.get();
            a.key_cache = kc.get();
            a.value_cache = vc.get();
            a.slot_mapping = static_cast<const std::int64_t*>(sl.get());
            a.swa_slot_mapping = swa ? static_cast<const std::int64_t*>(sl.get()) : nullptr;
            a.k_scale = static_cast<const float*>(scales.get());
            a.v_scale = a.k_scale + 1;
            a.num_tokens = T;
            a.num_heads = kH;
            a.head_size = kD;
            a.block_size = kBS;
            a.key_s0 = a.value_s0 = kH * kD;
            a.key_s1 = a.value_s1 = kD;
            a.block_stride = kBS * kH * kD;
            a.slot_stride = kH * kD;
            a.head_stride = kD;
            a.skip_slot = -1;
            a.num_slots = T;
            a.scale = ScaleMode::per_tensor;
            a.in_dtype = in;
            a.out_dtype = out;
            const std::size_t osz = size_of(out);
            ASSERT_CUDA(
                cudaMemcpyAsync(scales.get(), ks, sizeof ks, cudaMemcpyHostToDevice, stream_));
            ASSERT_CUDA(cudaMemsetAsync(kc.get(), 0xFF, n * osz, stream_));
            ASSERT_CUDA(cudaMemsetAsync(vc.get(), 0xFF, n * osz, stream_));
            ASSERT_CUDA(kernels::launch_cache_write(a, Variant::optimized, stream_));
            Report r;
            for (int kv = 0; kv < 2; ++kv) {
              ASSERT_CUDA(cudaMemcpyAsync(got.data(), kv == 0 ? kc.get() : vc.get(), n * osz,
                                          cudaMemcpyDeviceToHost, stream_));
              ASSERT_CUDA(cudaStreamSynchronize(stream_));
              // compare_on_host takes pattern first + i's low bytes: i mod 2^16 (K), i+1 (V).
              compare_on_host(in, out, kv, n, got.data(), &ks[kv], r);
            }
            EXPECT_EQ(r.count, 0) << "T=" << T << (swa ? " swa " : " ") << to_string(in) << " / ("
                                  << ks[0] << ", " << ks[1] << ") -> " << to_string(out) << ": "
                                  << r.summary();
          }
    }
  }
}

TEST_F(ConvertGpu, EveryFp32PatternToEachNarrowerType) {
  const auto start = std::chrono::steady_clock::now();
  for (bool paired : kPaired)
    for (DType out : {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2}) {
      Report r;
      check(DType::f32, out, 0, std::int64_t{1} << 32, nullptr, paired, r);
      EXPECT_EQ(r.count, 0) << "f32 -> " << to_string(out) << (paired ? " (paired)" : "") << ": "
                            << r.summary();
    }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("2 x 4 x 2^32 fp32 conversions (scalar, paired) checked in %.1f s\n", s);
}

// The scaled cast over fp32 inputs: 512 runs of 2^17 consecutive patterns, one in every
// exponent of both signs (2^23 patterns apart), NaNs and infinities included.
TEST_F(ConvertGpu, Fp32ScaledSampleToEveryType) {
  for (bool paired : kPaired)
    for (DType out : kOutputs)
      for (float s : {0.3f, 7.1f}) {
        Report r;
        for (std::uint64_t k = 0; k < 512; ++k) {
          const std::uint64_t first = (k << 23) + ((k * 7919) % 64) * (1u << 17);
          check(DType::f32, out, first, 1 << 17, &s, paired, r);
        }
        check(DType::f32, out, 0x7F800000u, 1 << 17, &s, paired, r);  // +inf, the first NaNs
        check(DType::f32, out, 0xFFFE0000u, 1 << 17, &s, paired, r);  // the last negative NaNs
        EXPECT_EQ(r.count, 0) << "f32 / " << s << " -> " << to_string(out)
                              << (paired ? " (paired)" : "") << ": " << r.summary();
      }
}

// The MLA cache writes' quantizers (SPEC.md §5-§6) on the device against the reference, byte for
// byte over the whole cache: `kernels::launch_mla_cache` writes, `ref::concat_and_cache_mla`
// writes the same problem on the host. Slot t holds token t.
class MlaCacheGpu : public ConvertGpu {
 protected:
  // Writes T tokens of kv_c [T, 512] and k_pe [T, 64] (16-bit patterns) in `layout` and
  // returns "" when every cache byte matches the reference, else the first differences.
  std::string check(DType in, ref::MlaCacheLayout layout, DType cache_dtype,
                    ref::TileScaleRule rule, const float* scale,
                    const std::vector<std::uint16_t>& kv_c,
                    const std::vector<std::uint16_t>& k_pe) {
    const bool ds = layout == ref::MlaCacheLayout::fp8_ds_mla;
    const std::int64_t T = static_cast<std::int64_t>(kv_c.size()) / 512, BS = 64;
    const std::int64_t entry = ds ? 656 : 576;
    const std::size_t esize = ds ? 1 : size_of(cache_dtype);
    const std::size_t cache_bytes = static_cast<std::size_t>(T * entry) * esize;
    std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
    for (std::int64_t t = 0; t < T; ++t) slots[static_cast<std::size_t>(t)] = t;
    const DeviceBuffer d_kv(kv_c.size() * 2), d_pe(k_pe.size() * 2), d_slots(slots.size() * 8),
        d_scale(sizeof(float)), d_cache(cache_bytes);
    EXPECT_EQ(cudaMemcpy(d_kv.get(), kv_c.data(), kv_c.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_pe.get(), k_pe.data(), k_pe.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_slots.get(), slots.data(), slots.size() * 8, cudaMemcpyHostToDevice),
              cudaSuccess);
    if (scale) {
      EXPECT_EQ(cudaMemcpy(d_scale.get(), scale, sizeof(float), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    EXPECT_EQ(cudaMemset(d_cache.get(), 0xA5, cache_bytes), cudaSuccess);
    kernels::MlaCacheArgs a{};
    a.kv_c = d_kv.get();
    a.k_pe = d_pe.get();
    a.slot_mapping = d_slots.as<const std::int64_t>();
    a.scale = scale ? d_scale.as<const float>() : nullptr;
    a.cache = d_cache.get();
    a.num_tokens = T;
    a.lora_rank = 512;
    a.rope_dim = 64;
    a.block_size = BS;
    a.kv_c_s0 = 512;
    a.k_pe_s0 = 64;
    a.block_stride = BS * entry;
    a.entry_stride = entry;
    a.in_dtype = in;
    a.out_dtype = ds ? DType::fp8_e4m3 : cache_dtype;
    a.entry = ds ? kernels::MlaEntry::fp8_ds_mla : kernels::MlaEntry::plain;
    a.tile_scale =
        rule == ref::TileScaleRule::pow2 ? kernels::TileScale::pow2 : kernels::TileScale::raw;
    EXPECT_EQ(kernels::launch_mla_cache(a, Variant::optimized, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<unsigned char> got(cache_bytes), want(cache_bytes, 0xA5);
    EXPECT_EQ(cudaMemcpy(got.data(), d_cache.get(), cache_bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    ref::MlaCacheProblem p{};
    p.in_dtype = in;
    p.layout = layout;
    p.cache_dtype = cache_dtype;
    p.rule = rule;
    p.num_tokens = T;
    p.lora_rank = 512;
    p.rope_dim = 64;
    p.block_size = BS;
    p.num_blocks = (T + BS - 1) / BS;
    p.kv_c = kv_c.data();
    p.k_pe = k_pe.data();
    p.kv_c_s0 = 512;
    p.k_pe_s0 = 64;
    p.slot_mapping = slots.data();
    p.cache = want.data();
    p.block_stride = BS * entry;
    p.entry_stride = entry;
    p.scale = scale;
    ref::concat_and_cache_mla(p);
    std::string diffs;
    std::int64_t count = 0;
    for (std::size_t i = 0; i < cache_bytes; ++i) {
      if (got[i] == want[i]) continue;
      if (++count > 8) continue;
      char buf[96];
      std::snprintf(buf, sizeof buf, "\n  token %zu byte %zu: expected 0x%02x, device 0x%02x",
                    i / (entry * esize), i % (entry * esize), want[i], got[i]);
      diffs += buf;
    }
    return count == 0 ? "" : std::to_string(count) + " bytes differ" + diffs;
  }
};

// Every 16-bit pattern, in tiles of consecutive patterns (tiles of NaNs, of infinities, of
// subnormals and of zeros among them) and as the rope; both rules, both input types.
TEST_F(MlaCacheGpu, DsMlaEveryPatternInConsecutiveTiles) {
  std::vector<std::uint16_t> kv_c(65536), k_pe(128 * 64);
  for (std::size_t i = 0; i < kv_c.size(); ++i) kv_c[i] = static_cast<std::uint16_t>(i);
  for (std::size_t i = 0; i < k_pe.size(); ++i) k_pe[i] = static_cast<std::uint16_t>(i * 8);
  for (DType in : {DType::bf16, DType::f16})
    for (auto rule : {ref::TileScaleRule::raw, ref::TileScaleRule::pow2})
      EXPECT_EQ(
          check(in, ref::MlaCacheLayout::fp8_ds_mla, DType::fp8_e4m3, rule, nullptr, kv_c, k_pe),
          "")
          << to_string(in) << " " << ref::to_string(rule);
}

// Every 16-bit pattern as the largest magnitude of its own tile, the other 127 values spread
// below it (same sign, smaller magnitude patterns): every amax the rules can see, with the
// quotients that land next to e4m3 ties. The rope takes every pattern too.
TEST_F(MlaCacheGpu, DsMlaEveryPatternAsItsTilesAmax) {
  const std::int64_t T = 65536 / 4;
  std::vector<std::uint16_t> kv_c(static_cast<std::size_t>(T * 512)),
      k_pe(static_cast<std::size_t>(T * 64));
  for (std::int64_t tile = 0; tile < 65536; ++tile) {
    const auto p = static_cast<std::uint16_t>(tile);
    const std::uint16_t sign = p & 0x8000u, mag = p & 0x7FFFu;
    for (std::int64_t k = 0; k < 128; ++k) {
      const std::int64_t d = 1 + (k * 97) % 2048;
      const std::uint16_t below = static_cast<std::uint16_t>(mag > d ? mag - d : 0);
      kv_c[static_cast<std::size_t>(tile * 128 + k)] =
          k == tile % 128 ? p : static_cast<std::uint16_t>(sign | below);
    }
  }
  for (std::size_t i = 0; i < k_pe.size(); ++i) k_pe[i] = static_cast<std::uint16_t>(i);
  for (DType in : {DType::bf16, DType::f16})
    for (auto rule : {ref::TileScaleRule::raw, ref::TileScaleRule::pow2})
      EXPECT_EQ(
          check(in, ref::MlaCacheLayout::fp8_ds_mla, DType::fp8_e4m3, rule, nullptr, kv_c, k_pe),
          "")
          << to_string(in) << " " << ref::to_string(rule);
}

// The tiles whose bytes SPEC.md §6 decides one by one, against the reference and against the
// constants of its table: all zero (+0 and -0), all subnormal, one NaN, all NaN, an infinity,
// the bf16 maximum.
TEST_F(MlaCacheGpu, DsMlaSpecialTilesHaveTheSpecsBytes) {
  constexpr std::uint16_t kMax = 0x7F7F, kInf = 0x7F80, kNaN = 0x7FC0;
  std::vector<std::uint16_t> kv_c(2 * 512), k_pe(2 * 64, 0x3F80);
  auto tile = [&](int t, int i) { return kv_c.begin() + t * 512 + i * 128; };
  for (int k = 0; k < 128; ++k)
    *(tile(0, 0) + k) = static_cast<std::uint16_t>(k % 2 ? 0x8000 : 0x0000);
  for (int k = 0; k < 128; ++k)
    *(tile(0, 1) + k) = static_cast<std::uint16_t>(1 + k % 127);  // subnormal
  std::fill(tile(0, 2), tile(0, 2) + 128, 0x3F80);                // 1.0, one NaN
  *(tile(0, 2) + 5) = kNaN;
  std::fill(tile(0, 3), tile(0, 3) + 128, kNaN);    // all NaN
  std::fill(tile(1, 0), tile(1, 0) + 128, 0x4000);  // 2.0, one -inf
  *(tile(1, 0) + 7) = 0x8000 | kInf;
  for (int k = 0; k < 128; ++k) *(tile(1, 1) + k) = k % 2 ? 0x8000 | kMax : kMax;  // maximum
  std::fill(tile(1, 2), tile(1, 2) + 128, 0x3F80);
  std::fill(tile(1, 3), tile(1, 3) + 128, 0xBF80);
  for (auto rule : {ref::TileScaleRule::raw, ref::TileScaleRule::pow2}) {
    SCOPED_TRACE(std::string(ref::to_string(rule)));
    EXPECT_EQ(check(DType::bf16, ref::MlaCacheLayout::fp8_ds_mla, DType::fp8_e4m3, rule, nullptr,
                    kv_c, k_pe),
              "");
    // The reference's bytes are the table's (so the device's are too, by the check above).
    std::vector<unsigned char> e(2 * 656);
    std::vector<std::int64_t> slots = {0, 1};
    ref::MlaCacheProblem p{};
    p.in_dtype = DType::bf16;
    p.layout = ref::MlaCacheLayout::fp8_ds_mla;
    p.rule = rule;
    p.num_tokens = 2;
    p.lora_rank = 512;
    p.rope_dim = 64;
    p.block_size = 2;
    p.num_blocks = 1;
    p.kv_c = kv_c.data();
    p.k_pe = k_pe.data();
    p.kv_c_s0 = 512;
    p.k_pe_s0 = 64;
    p.slot_mapping = slots.data();
    p.cache = e.data();
    p.block_stride = 2 * 656;
    p.entry_stride = 656;
    ref::concat_and_cache_mla(p);
    const bool pow2 = rule == ref::TileScaleRule::pow2;
    auto scale_bits = [&](int t, int i) {
      std::uint32_t b = 0;
      for (int k = 0; k < 4; ++k) b |= std::uint32_t{e[t * 656 + 512 + 4 * i + k]} << (8 * k);
      return b;
    };
    const std::uint32_t zero_scale = pow2 ? 0x39000000u : 0x00800000u;
    EXPECT_EQ(scale_bits(0, 0), zero_scale);
    EXPECT_EQ(e[0], 0x00);
    EXPECT_EQ(e[1], 0x80);
    EXPECT_EQ(scale_bits(0, 1), zero_scale);
    if (pow2) {
      EXPECT_EQ(e[128] | e[255], 0x00);  // subnormals under 2^-13: +0
    }
    EXPECT_EQ(e[256 + 5], 0x7F);                // the NaN
    EXPECT_EQ(e[256 + 4], pow2 ? 0x78 : 0x7E);  // 1.0 / (1/448 or 2^-8): 448 or 256
    EXPECT_EQ(scale_bits(0, 3), zero_scale);    // all NaN: the zero tile's scale
    EXPECT_EQ(e[384], 0x7F);
    EXPECT_EQ(scale_bits(1, 0), 0x7F800000u);     // an infinity: +inf
    EXPECT_EQ(e[656 + 0], 0x00);                  // 2 / inf
    EXPECT_EQ(e[656 + 7], 0x7F);                  // -inf / inf
    EXPECT_EQ(e[656 + 128], pow2 ? 0x78 : 0x7E);  // the maximum
    EXPECT_EQ(e[656 + 129], pow2 ? 0xF8 : 0xFE);
    EXPECT_EQ(e[528], 0x80);  // rope 1.0 as bf16, little-endian
    EXPECT_EQ(e[529], 0x3F);
  }
}

// The plain layout's per-tensor scaled casts of every 16-bit pattern, through the MLA kernel.
TEST_F(MlaCacheGpu, PlainEveryPatternToEveryCacheDtype) {
  std::vector<std::uint16_t> kv_c(65536 * 2), k_pe(256 * 64);
  for (std::size_t i = 0; i < kv_c.size(); ++i) kv_c[i] = static_cast<std::uint16_t>(i);
  for (std::size_t i = 0; i < k_pe.size(); ++i) k_pe[i] = static_cast<std::uint16_t>(i * 4 + 1);
  const float scales[] = {0.3f, 7.1f, 1e-20f};
  for (DType in : {DType::bf16, DType::f16})
    for (DType out : {DType::f16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2}) {
      EXPECT_EQ(
          check(in, ref::MlaCacheLayout::plain, out, ref::TileScaleRule::raw, nullptr, kv_c, k_pe),
          "")
          << to_string(in) << " -> " << to_string(out);
      for (const float& s : scales)
        EXPECT_EQ(
            check(in, ref::MlaCacheLayout::plain, out, ref::TileScaleRule::raw, &s, kv_c, k_pe), "")
            << to_string(in) << " / " << s << " -> " << to_string(out);
    }
}

// The per_token_head cache write (SPEC.md §7) on the device against the reference, byte for byte
// over both caches: kernels::launch_cache_write (optimized, its token_head path) writes,
// ref::reshape_and_cache_flash_per_token_head writes the same problem on the host. Slot t holds
// token t; key [T, H, D] dense, value the same patterns in reverse order, so V's rows are other
// rows than K's.
class TokenHeadGpu : public ConvertGpu {
 protected:
  std::string check(DType in, Layout layout, std::int64_t H, std::int64_t D,
                    const std::vector<std::uint16_t>& key) {
    const std::int64_t T = static_cast<std::int64_t>(key.size()) / (H * D), BS = 16;
    const std::int64_t NB = (T + BS - 1) / BS, row = D + 4, block_stride = BS * H * row;
    const bool nhd = layout == Layout::nhd;
    const std::size_t cache_bytes = static_cast<std::size_t>(NB * block_stride);
    const std::vector<std::uint16_t> value(key.rbegin(), key.rend());
    std::vector<std::int64_t> slots(static_cast<std::size_t>(T));
    for (std::int64_t t = 0; t < T; ++t) slots[static_cast<std::size_t>(t)] = t;
    const DeviceBuffer d_k(key.size() * 2), d_v(key.size() * 2), d_slots(slots.size() * 8),
        d_kc(cache_bytes), d_vc(cache_bytes);
    EXPECT_EQ(cudaMemcpy(d_k.get(), key.data(), key.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_v.get(), value.data(), value.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_slots.get(), slots.data(), slots.size() * 8, cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemset(d_kc.get(), 0xA5, cache_bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(d_vc.get(), 0xA5, cache_bytes), cudaSuccess);
    kernels::CacheWriteArgs a{};
    a.key = d_k.get();
    a.value = d_v.get();
    a.key_cache = d_kc.get();
    a.value_cache = d_vc.get();
    a.slot_mapping = d_slots.as<const std::int64_t>();
    a.num_tokens = T;
    a.num_heads = H;
    a.head_size = D;
    a.block_size = BS;
    a.key_s0 = a.value_s0 = H * D;
    a.key_s1 = a.value_s1 = D;
    a.block_stride = block_stride;
    a.slot_stride = nhd ? H * row : row;
    a.head_stride = nhd ? row : BS * row;
    a.skip_slot = -1;
    a.num_slots = NB * BS;
    a.scale = ScaleMode::per_token_head;
    a.in_dtype = in;
    a.out_dtype = DType::fp8_e4m3;
    EXPECT_EQ(kernels::launch_cache_write(a, Variant::optimized, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<unsigned char> got_k(cache_bytes), got_v(cache_bytes), want_k(cache_bytes, 0xA5),
        want_v(cache_bytes, 0xA5);
    EXPECT_EQ(cudaMemcpy(got_k.data(), d_kc.get(), cache_bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(got_v.data(), d_vc.get(), cache_bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    ref::reshape_and_cache_flash_per_token_head({in,
                                                 T,
                                                 H,
                                                 D,
                                                 BS,
                                                 NB,
                                                 key.data(),
                                                 value.data(),
                                                 H * D,
                                                 D,
                                                 H * D,
                                                 D,
                                                 slots.data(),
                                                 nullptr,
                                                 0,
                                                 -1,
                                                 layout,
                                                 want_k.data(),
                                                 want_v.data(),
                                                 block_stride});
    std::string diffs;
    std::int64_t count = 0;
    for (const bool v : {false, true}) {
      const std::vector<unsigned char>& got = v ? got_v : got_k;
      const std::vector<unsigned char>& want = v ? want_v : want_k;
      for (std::size_t i = 0; i < cache_bytes; ++i) {
        if (got[i] == want[i]) continue;
        if (++count > 8) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf,
                      "\n  %s cache byte %zu (row byte %lld): expected 0x%02x, device 0x%02x",
                      v ? "value" : "key", i, static_cast<long long>(i % row), want[i], got[i]);
        diffs += buf;
      }
    }
    return count == 0 ? "" : std::to_string(count) + " bytes differ" + diffs;
  }
};

// Every 16-bit pattern, in rows of consecutive patterns (rows of NaNs, of infinities, of
// subnormals and of zeros among them), for head sizes that take each plan path: one lane a row
// (D = 4), half a warp (64), idle lanes (100), a warp (128), 2, 4 and 8 vectors a lane (256, 512,
// 576), the row read twice (1040). Both input types, both layouts.
TEST_F(TokenHeadGpu, EveryPatternInConsecutiveRows) {
  constexpr std::int64_t kH = 8;
  for (const std::int64_t D : {4, 64, 100, 128, 256, 512, 576, 1040}) {
    const std::int64_t per_token = kH * D;
    std::vector<std::uint16_t> key(
        static_cast<std::size_t>((65536 + per_token - 1) / per_token * per_token));
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint16_t>(i);
    for (DType in : {DType::bf16, DType::f16})
      for (Layout layout : {Layout::nhd, Layout::hnd})
        EXPECT_EQ(check(in, layout, kH, D, key), "")
            << to_string(in) << " D=" << D << " " << to_string(layout);
  }
}

// Every 16-bit pattern as the largest magnitude of its own row of 128, the other 127 values
// spread below it (same sign, smaller magnitude patterns): every amax the rule can see, with the
// quotients that land next to e4m3 ties.
TEST_F(TokenHeadGpu, EveryPatternAsItsRowsAmax) {
  constexpr std::int64_t kH = 8, kD = 128;
  std::vector<std::uint16_t> key(65536 * kD);
  for (std::int64_t r = 0; r < 65536; ++r) {
    const auto p = static_cast<std::uint16_t>(r);
    const std::uint16_t sign = p & 0x8000u, mag = p & 0x7FFFu;
    for (std::int64_t k = 0; k < kD; ++k) {
      const std::int64_t d = 1 + (k * 97) % 2048;
      const auto below = static_cast<std::uint16_t>(mag > d ? mag - d : 0);
      key[static_cast<std::size_t>(r * kD + k)] =
          k == r % kD ? p : static_cast<std::uint16_t>(sign | below);
    }
  }
  for (DType in : {DType::bf16, DType::f16})
    EXPECT_EQ(check(in, Layout::nhd, kH, kD, key), "") << to_string(in);
}

// The rows whose bytes SPEC.md §7 decides (tests/test_quantize.cpp pins the reference to them):
// all +0, all -0, all NaN, one NaN, a +inf and a -inf among finite values, the bf16 maximum, all
// subnormal.
TEST_F(TokenHeadGpu, SpecialRowsMatchTheReference) {
  constexpr std::int64_t kD = 128;
  const std::uint16_t fills[] = {0x0000, 0x8000, 0x7FC0, 0x3F80, 0x3F80, 0xBF80, 0x7F7F, 0x0001};
  std::vector<std::uint16_t> key;
  for (std::size_t r = 0; r < std::size(fills); ++r)
    for (std::int64_t k = 0; k < kD; ++k) key.push_back(fills[r]);
  key[3 * kD + 5] = 0x7FC0;  // one NaN
  key[4 * kD + 9] = 0x7F80;  // +inf
  key[5 * kD + 2] = 0xFF80;  // -inf
  key[6 * kD + 1] = 0xFF7F;  // the maximum, negative
  for (std::int64_t k = 0; k < kD; ++k)
    key[static_cast<std::size_t>(7 * kD + k)] = static_cast<std::uint16_t>(k + 1);  // subnormals
  EXPECT_EQ(check(DType::bf16, Layout::nhd, 8, kD, key), "");
  EXPECT_EQ(check(DType::bf16, Layout::hnd, 1, kD, key), "");
}

}  // namespace
}  // namespace kvbench
