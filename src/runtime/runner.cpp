#include "runtime/runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "core/compare.hpp"
#include "core/inputs.hpp"
#include "core/mismatch_report.hpp"
#include "core/npy.hpp"
#include "core/validate.hpp"
#include "core/launch_args.hpp"
#include "kernels/cache_write/slot_check.hpp"
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
using Locate = std::function<std::string(std::int64_t)>;

Bytes host_bytes(std::int64_t elems, DType t) {
  return Bytes(static_cast<std::size_t>(elems) * size_of(t));
}

DeviceBuffer upload(const void* src, std::size_t bytes, cudaStream_t stream) {
  DeviceBuffer buf(bytes);
  KVB_CUDA_CHECK(cudaMemcpyAsync(buf.get(), src, bytes, cudaMemcpyHostToDevice, stream));
  return buf;
}

// One tensor of a case as --save-tensors writes it: the whole host allocation, 1-D.
struct SavedTensor {
  std::string name;   // file stem: "<name>.<dtype>.npy"
  std::string dtype;  // kvbench's name of what the bits hold (f32, bf16, i64, ...)
  std::string descr;  // NumPy's
  const void* data;
  std::size_t bytes;
  std::size_t elem_size;
};

SavedTensor tensor(const std::string& name, DType t, const Bytes& b) {
  return {name, std::string(to_string(t)), npy_descr(t), b.data(), b.size(), size_of(t)};
}

// Writes DIR/<tag>/<name>.<dtype>.npy for each tensor and case.txt with the case and its
// geometry (strides and guards, to rebuild the views with torch.as_strided).
void save_tensors(const ValidationOptions& o, const Case& c, const std::string& geometry,
                  const std::vector<SavedTensor>& tensors) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(o.save_tensors_dir) / o.case_tag;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create directory: " + ec.message());
  for (const auto& t : tensors)
    write_npy((dir / (t.name + "." + t.dtype + ".npy")).string(), t.descr,
              {static_cast<std::int64_t>(t.bytes / t.elem_size)}, t.data, t.bytes);
  std::ofstream meta(dir / "case.txt");
  meta << describe(c) << "\n" << geometry << "\n";
  if (!meta) throw std::runtime_error((dir / "case.txt").string() + ": cannot write");
}

bool should_save(const ValidationOptions& o, const Row& row) {
  return !o.save_tensors_dir.empty() && (o.save_all || row.status != Status::passed);
}

// Launches once, reads the whole output buffer back (guards included) and compares it with
// `expected`; sets the row's mismatch count, and status and reason when they differ.
// Everything happens on one stream (a legacy-stream memset would race with it).
Bytes launch_and_compare(const Launch& launch, const DeviceBuffer& out, const Bytes& expected,
                         DType out_dtype, cudaStream_t stream, const ValidationOptions& options,
                         const Locate& locate, Row& row) {
  KVB_CUDA_CHECK(launch(stream));
  Bytes actual(expected.size());
  KVB_CUDA_CHECK(cudaMemcpyAsync(actual.data(), out.get(), actual.size(), cudaMemcpyDeviceToHost, stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto elems = static_cast<std::int64_t>(expected.size() / size_of(out_dtype));
  const CompareResult cmp = compare_bitwise(expected.data(), actual.data(), elems,
                                            size_of(out_dtype), options.max_report);
  row.mismatches = cmp.count;
  if (cmp.count > 0) {
    row.status = Status::incorrect;
    row.reason = report_mismatches(cmp, elems, out_dtype, locate);
  }
  return actual;
}

// Times a launch that passed validation.
void time_launch(const Launch& launch, cudaStream_t stream, const RunSettings& settings, Row& row) {
  const Measurement m = measure(launch, stream, settings);
  row.stats = m.stats;
  row.launches_per_sample = m.launches_per_sample;
  row.converged = m.converged;
  row.sm_clock_mhz = m.sm_clock_mhz;
  row.timed = true;
  row.mode = settings.mode;
  row.status = Status::passed;
}

// Host inputs and reference output of the last case, reused by the next case when it differs
// only in its variant (sweeps vary the variant fastest): generating inputs and running the
// reference dominate a sweep's host time. Variants see identical inputs (case_seed ignores them).
template <class HostData>
class LastCase {
 public:
  template <class Make>
  const HostData& get(const Case& c, std::uint64_t seed, Make&& make) {
    Case key_case = c;
    key_case.variant = Variant::seed_port;
    const std::string key = describe(key_case) + " seed=" + std::to_string(seed);
    if (key != key_) {
      data_.reset();  // free the previous case's buffers before allocating this one's
      key_.clear();
      data_ = std::make_unique<HostData>(make());
      key_ = key;
    }
    return *data_;
  }

 private:
  std::string key_;
  std::unique_ptr<HostData> data_;
};

std::string unsupported_pair(const Case& c) {
  return "dtype pair " + std::string(to_string(c.in_dtype)) + "->" +
         std::string(to_string(c.out_dtype)) + " not supported (inputs: f32, f16, bf16)";
}

void run_concat(const Case& c, const RunSettings& settings, std::uint64_t seed,
                const ValidationOptions& options, const LaunchOverride& override_launch, Row& row) {
  if (!kernels::concat_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = unsupported_pair(c);
    return;
  }
  if (c.variant == Variant::slot_order) {
    row.status = Status::not_supported;
    row.reason = "variant slot_order is a reshape_and_cache_flash variant (it orders slots)";
    return;
  }
  ConcatGeometry g = concat_geometry(c);
  if (std::string why = inject_concat(c, g); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return;
  }
  if (std::string bad = check_concat_strides(c, g); !bad.empty()) {
    row.status = Status::rejected;
    row.reason = bad;
    return;
  }
  struct HostData {
    Bytes nope, rope, expected;
  };
  static LastCase<HostData> last;
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * size_of(c.out_dtype);
  const HostData& host = last.get(c, seed, [&] {
    HostData h{host_bytes(g.nope_elems, c.in_dtype), host_bytes(g.rope_elems, c.in_dtype),
               host_bytes(g.k_elems + 2 * g.guard_elems, c.out_dtype)};
    fill_random(c.in_dtype, h.nope.data(), g.nope_elems, seed);
    fill_random(c.in_dtype, h.rope.data(), g.rope_elems, seed + 1);
    // [guard | k | guard], all canary; the reference writes k only.
    std::memset(h.expected.data(), kCanary, h.expected.size());
    ref::concat_and_cast_mha_k({c.in_dtype, c.out_dtype, c.num_tokens, c.num_heads, c.head_dim,
                                c.rope_dim, h.nope.data(), h.rope.data(),
                                h.expected.data() + guard_bytes, g.nope_s0, g.nope_s1, g.rope_s0,
                                g.k_s0, g.k_s1});
    return h;
  });
  const Bytes &nope = host.nope, &rope = host.rope, &expected = host.expected;
  row.written_tokens = c.num_tokens;
  row.bytes = concat_bytes(c);

  const Stream stream;
  const DeviceBuffer d_nope = upload(nope.data(), nope.size(), stream.get());
  const DeviceBuffer d_rope = upload(rope.data(), rope.size(), stream.get());
  const DeviceBuffer d_k(expected.size());
  KVB_CUDA_CHECK(cudaMemsetAsync(d_k.get(), kCanary, d_k.bytes(), stream.get()));

  const kernels::ConcatArgs args =
      concat_args(c, g, {d_nope.get(), d_rope.get(), d_k.as<unsigned char>()});
  // Planned once per case: every launch (validation and timing) executes this plan.
  const kernels::ConcatPlan plan =
      kernels::plan_concat(args, c.variant, kernels::current_device_props());
  const Launch launch = override_launch.concat
                            ? Launch([args, f = override_launch.concat](cudaStream_t s) { return f(args, s); })
                            : Launch([args, plan](cudaStream_t s) {
                                return kernels::launch_concat_mla_k(args, plan, s);
                              });
  const Bytes actual = launch_and_compare(launch, d_k, expected, c.out_dtype, stream.get(), options,
                                          [&](std::int64_t i) { return locate_concat(c, g, i); }, row);
  if (row.status != Status::incorrect) time_launch(launch, stream.get(), settings, row);
  if (should_save(options, row)) {
    std::ostringstream geo;
    geo << "k_nope [T, H, NOPE] strides (" << g.nope_s0 << ", " << g.nope_s1 << ", 1); k_rope [T, ROPE] "
        << "stride (" << g.rope_s0 << ", 1); k [T, H, NOPE+ROPE] strides (" << g.k_s0 << ", " << g.k_s1
        << ", 1) starting at element " << g.guard_elems << " of k_expected / k_actual (guards of "
        << g.guard_elems << " canary elements before and after)";
    save_tensors(options, c, geo.str(),
                 {tensor("k_nope", c.in_dtype, nope), tensor("k_rope", c.in_dtype, rope),
                  tensor("k_expected", c.out_dtype, expected), tensor("k_actual", c.out_dtype, actual)});
  }
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

// --check-bounds: the slot range pre-pass on the device. Returns the first bad token, or -1.
std::int64_t device_first_bad_token(const DeviceBuffer& d_slots, const std::int64_t* d_swa,
                                    const SlotData& slots, const CacheGeometry& g, cudaStream_t s) {
  const DeviceBuffer d_first(sizeof(unsigned long long));
  const kernels::SlotCheckArgs a{d_slots.as<std::int64_t>(), d_swa,
                                 static_cast<std::int64_t>(slots.slot_mapping.size()),
                                 static_cast<std::int64_t>(slots.swa_table.size()), g.num_slots,
                                 d_first.as<unsigned long long>()};
  KVB_CUDA_CHECK(kernels::launch_slot_check(a, s));
  unsigned long long first = 0;
  KVB_CUDA_CHECK(cudaMemcpyAsync(&first, d_first.get(), sizeof first, cudaMemcpyDeviceToHost, s));
  KVB_CUDA_CHECK(cudaStreamSynchronize(s));
  return first == kernels::kNoBadToken ? -1 : static_cast<std::int64_t>(first);
}

// A physical slot that no token writes and that is not the skip slot: what the SWA table's
// guard entry (index -1) names, so a kernel reading swa_slot_mapping[-1] writes a slot whose
// canary the comparison checks. The geometry always leaves such slots (slack after T tokens).
std::int64_t untargeted_slot(const std::vector<std::int64_t>& owners, const CacheGeometry& g) {
  for (std::int64_t s = 0; s < g.num_slots; ++s)
    if (owners[static_cast<std::size_t>(s)] < 0 && s != g.skip_slot) return s;
  return 0;
}

void run_cache_write(const Case& c, const RunSettings& settings, std::uint64_t seed,
                     const ValidationOptions& options, const LaunchOverride& override_launch,
                     Row& row) {
  if (!kernels::cache_write_supported(c.in_dtype, c.out_dtype)) {
    row.status = Status::not_supported;
    row.reason = unsupported_pair(c);
    return;
  }
  CacheGeometry g = cache_geometry(c);
  SlotData slots = make_slots(c, g, seed + 2);
  std::vector<float> k_scale = make_scales(c, seed + 3);
  const std::vector<float> v_scale = make_scales(c, seed + 4);
  if (std::string why = inject_cache(c, g, slots, k_scale); !why.empty()) {
    row.status = Status::not_supported;
    row.reason = why;
    return;
  }

  const Stream stream;
  const cudaStream_t s = stream.get();
  // The SWA table travels with one guard entry before it (see untargeted_slot).
  const std::vector<std::int64_t> owners = slot_owners(slots, g);
  std::vector<std::int64_t> swa_guarded;
  if (c.swa) {
    swa_guarded.push_back(untargeted_slot(owners, g));
    swa_guarded.insert(swa_guarded.end(), slots.swa_table.begin(), slots.swa_table.end());
  }
  const DeviceBuffer d_slots =
      upload(slots.slot_mapping.data(), slots.slot_mapping.size() * sizeof(std::int64_t), s);
  const DeviceBuffer d_swa =
      upload(swa_guarded.data(), swa_guarded.size() * sizeof(std::int64_t), s);
  const std::int64_t* d_swa_table = c.swa ? d_swa.as<std::int64_t>() + 1 : nullptr;

  if (options.check_bounds) {
    if (const std::int64_t t = device_first_bad_token(d_slots, d_swa_table, slots, g, s); t >= 0) {
      const std::int64_t logical = slots.slot_mapping[static_cast<std::size_t>(t)];
      std::string what = "slot_mapping[" + std::to_string(t) + "] = " + std::to_string(logical);
      if (c.swa && logical < static_cast<std::int64_t>(slots.swa_table.size()))
        what += ", swa_slot_mapping[" + std::to_string(logical) +
                "] = " + std::to_string(slots.swa_table[static_cast<std::size_t>(logical)]);
      row.status = Status::rejected;
      row.reason = "token " + std::to_string(t) + ": " + what + " out of range (NB*BS = " +
                   std::to_string(g.num_slots) +
                   (c.swa ? ", SWA table size " + std::to_string(slots.swa_table.size()) : "") +
                   "); found on the device by --check-bounds, the cache write was not launched";
      return;
    }
  }
  for (const std::string& bad :
       {check_slots(slots, g), check_cache_strides(c, g), check_scales(k_scale, v_scale)}) {
    if (bad.empty()) continue;
    row.status = Status::rejected;
    row.reason = bad;
    return;
  }

  const std::size_t osize = size_of(c.out_dtype);
  const std::size_t guard_bytes = static_cast<std::size_t>(g.guard_elems) * osize;
  const std::size_t v_bytes = static_cast<std::size_t>(g.value_cache_offset) * osize;
  struct HostData {
    Bytes key, value, expected;
  };
  static LastCase<HostData> last;
  const HostData& host = last.get(c, seed, [&] {
    HostData h{host_bytes(g.key_elems, c.in_dtype), host_bytes(g.key_elems, c.in_dtype),
               host_bytes(g.cache_elems + 2 * g.guard_elems, c.out_dtype)};
    fill_random(c.in_dtype, h.key.data(), g.key_elems, seed);
    fill_random(c.in_dtype, h.value.data(), g.key_elems, seed + 1);
    // [guard | K and V caches | guard], all canary; the reference writes cache elements only.
    std::memset(h.expected.data(), kCanary, h.expected.size());
    unsigned char* exp_k = h.expected.data() + guard_bytes;
    ref::reshape_and_cache_flash(
        {c.in_dtype, c.out_dtype, c.num_tokens, c.num_heads, c.head_dim, c.block_size,
         g.num_blocks, h.key.data(), h.value.data(), g.key_s0, g.key_s1, g.key_s0, g.key_s1,
         slots.slot_mapping.data(), c.swa ? slots.swa_table.data() : nullptr,
         static_cast<std::int64_t>(slots.swa_table.size()), g.skip_slot, c.layout, exp_k,
         exp_k + v_bytes, g.block_stride, c.scale, k_scale.empty() ? nullptr : k_scale.data(),
         v_scale.empty() ? nullptr : v_scale.data()});
    return h;
  });
  const Bytes &key = host.key, &value = host.value, &expected = host.expected;
  row.written_tokens = slots.written_tokens;
  row.bytes = cache_write_bytes(c, slots.swa_lookups, slots.written_tokens);

  const DeviceBuffer d_key = upload(key.data(), key.size(), s);
  const DeviceBuffer d_value = upload(value.data(), value.size(), s);
  const DeviceBuffer d_ks = upload(k_scale.data(), k_scale.size() * sizeof(float), s);
  const DeviceBuffer d_vs = upload(v_scale.data(), v_scale.size() * sizeof(float), s);
  const DeviceBuffer d_cache(expected.size());
  KVB_CUDA_CHECK(cudaMemsetAsync(d_cache.get(), kCanary, d_cache.bytes(), s));
  // slot_order's inverse slot table: all -1 before each launch, and each launch must leave it so.
  const DeviceBuffer d_table(static_cast<std::size_t>(g.num_slots) * sizeof(std::int32_t));
  KVB_CUDA_CHECK(cudaMemsetAsync(d_table.get(), 0xFF, d_table.bytes(), s));

  const kernels::CacheWriteArgs a = cache_write_args(
      c, g,
      {d_key.get(), d_value.get(), d_cache.get(), d_slots.as<std::int64_t>(), d_swa_table,
       d_ks.as<float>(), d_vs.as<float>(), d_table.as<std::int32_t>()});
  // Planned once per case: every launch (validation and timing) executes this plan.
  const kernels::CacheWritePlan plan =
      kernels::plan_cache_write(a, c.variant, kernels::current_device_props());
  const Launch launch =
      override_launch.cache_write
          ? Launch([a, f = override_launch.cache_write](cudaStream_t st) { return f(a, st); })
          : Launch([a, plan](cudaStream_t st) { return kernels::launch_cache_write(a, plan, st); });
  const Locate locate = [&](std::int64_t i) {
    const CacheLocation l = locate_cache(c, g, i);
    std::string where = to_string(l);
    if (l.where == CacheLocation::Where::element) {
      const std::int64_t owner = owners[static_cast<std::size_t>(l.slot)];
      where += owner >= 0 ? " of token " + std::to_string(owner) : ", which no token writes";
    }
    return where;
  };
  const Bytes actual = launch_and_compare(launch, d_cache, expected, c.out_dtype, s, options, locate, row);
  if (row.status != Status::incorrect) time_launch(launch, s, settings, row);
  if (row.status == Status::passed) {
    // Timing relaunches with the same table: a launch that left an entry set would have timed
    // (and a later validation would write) the wrong slots.
    std::vector<std::int32_t> table(static_cast<std::size_t>(g.num_slots));
    KVB_CUDA_CHECK(cudaMemcpyAsync(table.data(), d_table.get(), d_table.bytes(),
                                   cudaMemcpyDeviceToHost, s));
    KVB_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto set = std::find_if(table.begin(), table.end(), [](std::int32_t v) { return v != -1; });
    if (set != table.end()) {
      row.status = Status::incorrect;
      row.reason = "slot table entry " + std::to_string(set - table.begin()) + " = " +
                   std::to_string(*set) + " after the launches (each launch must leave it -1)";
    }
  }
  if (should_save(options, row)) {
    std::ostringstream geo;
    geo << "key/value [T, H, D] strides (" << g.key_s0 << ", " << g.key_s1 << ", 1); caches: "
        << to_string(c.layout) << ", NB " << g.num_blocks << ", block stride " << g.block_stride
        << ", slot stride " << g.slot_stride << ", head stride " << g.head_stride
        << "; key_cache starts at element " << g.guard_elems << " of cache_expected / cache_actual, "
        << "value_cache " << g.value_cache_offset << " elements after it (guards of "
        << g.guard_elems << " canary elements before and after); skip_slot " << g.skip_slot;
    std::vector<SavedTensor> t = {tensor("key", c.in_dtype, key), tensor("value", c.in_dtype, value),
                                  {"slot_mapping", "i64", "<i8", slots.slot_mapping.data(),
                                   slots.slot_mapping.size() * 8, 8},
                                  tensor("cache_expected", c.out_dtype, expected),
                                  tensor("cache_actual", c.out_dtype, actual)};
    if (c.swa)
      t.push_back({"swa_slot_mapping", "i64", "<i8", slots.swa_table.data(),
                   slots.swa_table.size() * 8, 8});
    if (!k_scale.empty()) {
      t.push_back({"k_scale", "f32", "<f4", k_scale.data(), k_scale.size() * 4, 4});
      t.push_back({"v_scale", "f32", "<f4", v_scale.data(), v_scale.size() * 4, 4});
    }
    save_tensors(options, c, geo.str(), t);
  }
}

}  // namespace

std::uint64_t case_seed(const Case& c, std::uint64_t run_seed) {
  Case identity = c;
  identity.variant = Variant::seed_port;  // every variant of a case sees the same inputs
  std::uint64_t h = 0xCBF29CE484222325ull ^ run_seed;  // FNV-1a over the case's identity
  for (char ch : describe(identity)) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;
  return h;
}

DeviceInfo open_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::string reason = err == cudaSuccess ? "the driver reports none" : cudaGetErrorString(err);
    if (err == cudaErrorInsufficientDriver)
      reason = "no NVIDIA driver, or one older than this build's CUDA runtime";
    else if (err == cudaErrorNoDevice)
      reason = "none visible (check CUDA_VISIBLE_DEVICES and the driver)";
    throw NoDeviceError("no CUDA device: " + reason);
  }
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

Row run_case(const Case& c, const RunSettings& settings, const DeviceInfo& device,
             const ValidationOptions& options, const LaunchOverride& override_launch) {
  Row row;
  row.c = c;
  row.device = device.name;
  row.device_uuid = device.uuid;
  row.git_sha = kGitSha;
  row.git_dirty = kGitDirty;
  const std::uint64_t seed = case_seed(c, settings.seed);
  try {
    if (c.kernel == Kernel::concat_mla_k)
      run_concat(c, settings, seed, options, override_launch, row);
    else
      run_cache_write(c, settings, seed, options, override_launch, row);
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
  // Injected cases are not told apart by the CSV's axis columns; the reason says which they are.
  if (c.inject != Inject::none)
    row.reason = "inject " + std::string(to_string(c.inject)) + ": " + row.reason;
  return row;
}

void ensure_device_usable() {
  cudaGetLastError();
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace kvbench
