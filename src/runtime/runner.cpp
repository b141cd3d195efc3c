#include "runtime/runner.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <functional>
#include <vector>

#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "kernels/cache_write.hpp"
#include "kernels/concat_mla_k.hpp"
#include "kvbench_version.hpp"
#include "reference/reference.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "core/metadata.hpp"
#include "runtime/timer.hpp"

namespace kvbench {
namespace {

// Every output byte starts as this, so a write the kernel should not make shows as a mismatch.
constexpr unsigned char kCanary = 0xA5;

using Bytes = std::vector<unsigned char>;

Bytes host_bytes(std::int64_t elems, DType t) {
  return Bytes(static_cast<std::size_t>(elems) * size_of(t));
}

DeviceBuffer upload(const void* src, std::size_t bytes, cudaStream_t stream) {
  DeviceBuffer buf(bytes);
  KVB_CUDA_CHECK(cudaMemcpyAsync(buf.get(), src, bytes, cudaMemcpyHostToDevice, stream));
  return buf;
}

// Launches once, reads the output back and compares all of it with `expected`; on success times
// the launch. Everything happens on one stream (a legacy-stream memset would race with it).
void check_and_time(const std::function<cudaError_t(cudaStream_t)>& launch, const DeviceBuffer& out,
                    const Bytes& expected, DType out_dtype, cudaStream_t stream,
                    const RunSettings& settings, Row& row) {
  KVB_CUDA_CHECK(launch(stream));
  Bytes actual(expected.size());
  KVB_CUDA_CHECK(cudaMemcpyAsync(actual.data(), out.get(), actual.size(), cudaMemcpyDeviceToHost, stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto elems = static_cast<std::int64_t>(expected.size() / size_of(out_dtype));
  const CompareResult cmp =
      compare_bitwise(expected.data(), actual.data(), elems, size_of(out_dtype));
  row.mismatches = cmp.count;
  if (cmp.count > 0) {
    row.status = Status::incorrect;
    row.reason = describe_mismatches(cmp, elems, size_of(out_dtype));
    return;
  }
  const Measurement m = measure(launch, stream, settings);
  row.stats = m.stats;
  row.launches_per_sample = m.launches_per_sample;
  row.converged = m.converged;
  row.sm_clock_mhz = m.sm_clock_mhz;
  row.timed = true;
  row.mode = std::string(to_string(settings.mode));
  row.gbps = row.stats.median_us > 0 ? static_cast<double>(row.bytes) / row.stats.median_us / 1e3 : 0;
  row.status = Status::passed;
}

void run_concat(const Case& c, const RunSettings& settings, std::uint64_t seed, Row& row) {
  if (!kernels::concat_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
                 std::string(to_string(c.out_dtype)) + " not supported (inputs: f32, f16, bf16)";
    return;
  }
  const ConcatGeometry g = concat_geometry(c);
  Bytes nope = host_bytes(g.nope_elems, c.in_dtype), rope = host_bytes(g.rope_elems, c.in_dtype);
  fill_random(c.in_dtype, nope.data(), g.nope_elems, seed);
  fill_random(c.in_dtype, rope.data(), g.rope_elems, seed + 1);
  Bytes expected = host_bytes(g.k_elems, c.out_dtype);
  std::memset(expected.data(), kCanary, expected.size());
  ref::concat_and_cast_mha_k({c.in_dtype, c.out_dtype, c.num_tokens, c.num_heads, c.head_dim,
                              c.rope_dim, nope.data(), rope.data(), expected.data(), g.nope_s0,
                              g.nope_s1, g.rope_s0, g.k_s0, g.k_s1});
  row.written_tokens = c.num_tokens;
  row.bytes = concat_bytes(c);

  const Stream stream;
  const DeviceBuffer d_nope = upload(nope.data(), nope.size(), stream.get());
  const DeviceBuffer d_rope = upload(rope.data(), rope.size(), stream.get());
  const DeviceBuffer d_k(expected.size());
  KVB_CUDA_CHECK(cudaMemsetAsync(d_k.get(), kCanary, d_k.bytes(), stream.get()));

  const kernels::ConcatArgs args{d_nope.get(), d_rope.get(), d_k.get(), c.num_tokens,
                                 c.num_heads,  c.head_dim,   c.rope_dim, g.nope_s0,
                                 g.nope_s1,    g.rope_s0,    g.k_s0,     g.k_s1,
                                 c.in_dtype,   c.out_dtype};
  const Variant variant = c.variant;
  check_and_time([args, variant](cudaStream_t s) { return kernels::launch_concat_mla_k(args, variant, s); },
                 d_k, expected, c.out_dtype, stream.get(), settings, row);
}

std::vector<float> make_scales(const Case& c, std::uint64_t seed) {
  if (c.scale == ScaleMode::none) return {};
  const std::int64_t n = c.scale == ScaleMode::per_head ? c.num_heads : 1;
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t state = seed;
  for (auto& x : v)  // positive, finite, not powers of two: the division must round
    x = 0.25f + static_cast<float>(splitmix64(state) % 4096) / 1024.0f + 1.0f / 3.0f;
  return v;
}

void run_cache_write(const Case& c, const RunSettings& settings, std::uint64_t seed, Row& row) {
  if (!kernels::cache_write_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
                 std::string(to_string(c.out_dtype)) + " not supported (inputs: f32, f16, bf16)";
    return;
  }
  const CacheGeometry g = cache_geometry(c);
  const SlotData slots = make_slots(c, g, seed + 2);
  if (const std::string bad = check_slots(slots, g); !bad.empty()) {
    row.status = Status::rejected;
    row.reason = bad;
    return;
  }
  Bytes key = host_bytes(g.key_elems, c.in_dtype), value = host_bytes(g.key_elems, c.in_dtype);
  fill_random(c.in_dtype, key.data(), g.key_elems, seed);
  fill_random(c.in_dtype, value.data(), g.key_elems, seed + 1);
  const std::vector<float> k_scale = make_scales(c, seed + 3), v_scale = make_scales(c, seed + 4);

  Bytes expected = host_bytes(g.cache_elems, c.out_dtype);
  std::memset(expected.data(), kCanary, expected.size());
  const std::size_t osize = size_of(c.out_dtype);
  unsigned char* exp_k = expected.data();
  unsigned char* exp_v = expected.data() + static_cast<std::size_t>(g.value_cache_offset) * osize;
  ref::reshape_and_cache_flash(
      {c.in_dtype, c.out_dtype, c.num_tokens, c.num_heads, c.head_dim, c.block_size, g.num_blocks,
       key.data(), value.data(), g.key_s0, g.key_s1, g.key_s0, g.key_s1,
       slots.slot_mapping.data(), c.swa ? slots.swa_table.data() : nullptr,
       static_cast<std::int64_t>(slots.swa_table.size()), g.skip_slot, c.layout, exp_k, exp_v,
       g.block_stride, c.scale, k_scale.empty() ? nullptr : k_scale.data(),
       v_scale.empty() ? nullptr : v_scale.data()});
  row.written_tokens = slots.written_tokens;
  row.bytes = cache_write_bytes(c, slots.swa_lookups, slots.written_tokens);

  const Stream stream;
  const cudaStream_t s = stream.get();
  const DeviceBuffer d_key = upload(key.data(), key.size(), s);
  const DeviceBuffer d_value = upload(value.data(), value.size(), s);
  const DeviceBuffer d_slots =
      upload(slots.slot_mapping.data(), slots.slot_mapping.size() * sizeof(std::int64_t), s);
  const DeviceBuffer d_swa =
      upload(slots.swa_table.data(), slots.swa_table.size() * sizeof(std::int64_t), s);
  const DeviceBuffer d_ks = upload(k_scale.data(), k_scale.size() * sizeof(float), s);
  const DeviceBuffer d_vs = upload(v_scale.data(), v_scale.size() * sizeof(float), s);
  const DeviceBuffer d_cache(expected.size());
  KVB_CUDA_CHECK(cudaMemsetAsync(d_cache.get(), kCanary, d_cache.bytes(), s));

  kernels::CacheWriteArgs a{};
  a.key = d_key.get();
  a.value = d_value.get();
  a.key_cache = d_cache.get();
  a.value_cache = d_cache.as<unsigned char>() + static_cast<std::size_t>(g.value_cache_offset) * osize;
  a.slot_mapping = d_slots.as<std::int64_t>();
  a.swa_slot_mapping = c.swa ? d_swa.as<std::int64_t>() : nullptr;
  a.k_scale = d_ks.as<float>();
  a.v_scale = d_vs.as<float>();
  a.num_tokens = c.num_tokens;
  a.num_heads = c.num_heads;
  a.head_size = c.head_dim;
  a.block_size = c.block_size;
  a.key_s0 = a.value_s0 = g.key_s0;
  a.key_s1 = a.value_s1 = g.key_s1;
  a.block_stride = g.block_stride;
  a.slot_stride = g.slot_stride;
  a.head_stride = g.head_stride;
  a.skip_slot = g.skip_slot;
  a.scale = c.scale;
  a.in_dtype = c.in_dtype;
  a.out_dtype = c.out_dtype;
  const Variant variant = c.variant;
  check_and_time([a, variant](cudaStream_t st) { return kernels::launch_cache_write(a, variant, st); },
                 d_cache, expected, c.out_dtype, s, settings, row);
}

}  // namespace

std::uint64_t case_seed(const Case& c, std::uint64_t run_seed) {
  std::uint64_t h = 0xCBF29CE484222325ull ^ run_seed;  // FNV-1a over the case's identity
  for (char ch : describe(c)) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;
  return h;
}

DeviceInfo open_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw NoDeviceError(std::string("no CUDA device: ") +
                        (err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0"));
  DeviceInfo info;
  KVB_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  KVB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.uuid = format_uuid(prop.uuid.bytes);
  return info;
}

Row run_case(const Case& c, const RunSettings& settings, const DeviceInfo& device) {
  Row row;
  row.c = c;
  row.device = device.name;
  row.device_uuid = device.uuid;
  row.git_sha = kGitSha;
  row.git_dirty = kGitDirty;
  const std::uint64_t seed = case_seed(c, settings.seed);
  try {
    if (c.kernel == Kernel::concat_mla_k)
      run_concat(c, settings, seed, row);
    else
      run_cache_write(c, settings, seed, row);
  } catch (const CudaError& e) {
    row.status = Status::failed;
    row.timed = false;
    row.reason = failure_reason(e);
    cudaGetLastError();  // clear a non-sticky error; ensure_device_usable() finds sticky ones
  } catch (const std::bad_alloc&) {
    row.status = Status::failed;
    row.timed = false;
    row.reason = "out of host memory";
  }
  return row;
}

void ensure_device_usable() {
  cudaGetLastError();
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace kvbench
