#include "runtime/runner.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/footprint.hpp"
#include "core/metadata.hpp"
#include "core/rotation.hpp"
#include "kvbench_version.hpp"
#include "runtime/case_sets.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/timer.hpp"
#include "runtime/timing_kernels.hpp"

namespace kvbench {
namespace {

// Stage "size": how many buffer sets (core/rotation.hpp); 0 when an explicit count does not fit
// (the row then says why).
// `settings.context` becomes `cold` where rotation cannot cover L2 (RotationChoice).
int buffer_sets(const stages::CaseSets& op, RunSettings& settings, const DeviceInfo& device,
                Row& row) {
  if (settings.rotate == 1) return 1;
  std::size_t free_bytes = 0, total = 0;
  KVB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  RotationInput in{settings.rotate,     settings.mode,   settings.context, op.set_bytes(),
                   op.layout().bytes(), device.l2_bytes, free_bytes};
  in.set_host_bytes = op.set_host_bytes();
  in.host_available_bytes = host_available_bytes().value_or(0);  // unknown: no cap
  const RotationChoice choice = choose_buffer_sets(in);
  if (!choice.refused.empty()) {
    row.status = Status::failed;
    row.reason = choice.refused;
    return 0;
  }
  if (choice.cold_context) settings.context = Context::cold;
  return choice.sets;
}

// Stage "time": the engine over every set, the context's predecessor before each launch
// (docs/measurement.md, "Contexts"). The predecessor knows only the set's buffers, never the
// variant, so every variant (plugins included) is timed in every context the same way.
void time_sets(const stages::CaseSets& op, int sets, unsigned char* arena, int sm_count,
               cudaStream_t stream, const RunSettings& settings, Row& row) {
  const std::size_t stride = op.layout().bytes(), inputs = op.layout().inputs_end();
  const ContextPredecessor before(
      settings,
      [=](int set) {
        return std::pair<void*, std::size_t>(arena + static_cast<std::size_t>(set) * stride,
                                             inputs);
      },
      sm_count, stream);
  const Workload work{[&op](int set, cudaStream_t s) { return op.launch(set, s); }, sets,
                      before.launch()};
  const Measurement m = measure(work, stream, settings);
  if (m.timer == Timer::cupti) {
    row.gap_us = m.gap_us;
    row.span_us = m.span_us;
    std::fprintf(stderr,
                 "kvbench: cupti: %s: launch %.3f us, gap before it %.3f us, replay span %.3f us, "
                 "producer %.3f us, window by events %.3f us per launch (%zu replays, %zu "
                 "incomplete, %zu invalid records)\n",
                 describe(row.c).c_str(), m.stats.median_us, m.gap_us, m.span_us, m.producer_us,
                 m.window_us, m.replays, m.replays_incomplete, m.records_dropped);
  }
  row.stats = m.stats;
  row.samples_us = m.samples_us;
  row.launches_per_sample = m.launches_per_sample;
  row.converged = m.converged;
  row.sm_clock_mhz = m.sm_clock_mhz;
  row.timed = true;
  row.mode = settings.mode;
  row.context = settings.context;
  row.timer = m.timer;
  row.status = Status::passed;
}

// The stages of case_sets.hpp, in order. Validation comes first: a set that fails ends the case
// untimed.
void run_stages(const Case& c, RunSettings settings, const DeviceInfo& device, std::uint64_t seed,
                const ValidationOptions& options, const LaunchOverride& override_launch, Row& row) {
  const std::unique_ptr<stages::CaseSets> op =
      stages::make_case_sets(c, seed, options, override_launch, row);
  if (!op) return;                                           // admit: refused before any allocation
  const int sets = buffer_sets(*op, settings, device, row);  // may set the cold context
  if (sets == 0) return;
  row.buffer_sets = sets;

  const Stream stream;
  const std::size_t stride = op->layout().bytes();
  const DeviceBuffer arena(stride * static_cast<std::size_t>(sets));
  auto* base = arena.as<unsigned char>();
  int failed_set = -1;
  for (int set = 0; set < sets && failed_set < 0; ++set) {
    if (set == 1) op->prepare(sets);  // set 0 passed: make the others' host data in parallel
    if (!op->build(set, sets, base + static_cast<std::size_t>(set) * stride, stream.get(), row))
      failed_set = set;
  }
  if (row.status == Status::rejected) return;  // bad input: nothing was launched
  if (failed_set < 0) {
    time_sets(*op, sets, base, device.sm_count, stream.get(), settings, row);
    op->recheck(sets, stream.get(), row);
  }
  // A later set that fails has saved its own tensors; set 0 is saved here.
  if (failed_set <= 0 && stages::should_save(options, row)) op->save(options, row);
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
    run_stages(c, settings, device, seed, options, override_launch, row);
  } catch (const CudaError& e) {
    row.status = Status::failed;
    row.timed = false;
    row.reason = failure_reason(e);
    cudaGetLastError();  // clear a non-sticky error; ensure_device_usable() finds sticky ones
  } catch (const LaunchError& e) {
    row.status = Status::failed;
    row.timed = false;
    row.reason = e.what();
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
