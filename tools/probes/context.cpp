// Where a cache write's time goes when it follows another kernel: small CUDA graphs of two
// kernels, replayed many times, each kernel timed on its own with the CUPTI timer
// (runtime/cupti_timer.hpp). K is the case's cache write launched as kvbench launches it (its
// stages and launch plan, validated first), P the hot-inputs producer writing the case's inputs
// (runtime/timing_kernels.hpp, launch_touch), P' the same producer on a buffer K does not read,
// E an empty kernel. Graphs, each a repetition of its pair:
//   [K K] [P K] [P P] [E K] [P E] [P' K], and [P K] with P and K at one shared-memory carveout.
// Printed per graph and kernel: the median duration, the median gap from the previous kernel's
// end to its start, and the median span of a replay. K is the variant asked for and seed_port.
// A probe, not a test: it asserts nothing about the figures. It exits 1 when a case does not
// pass, a CUDA call fails or CUPTI cannot be loaded, 2 on a bad argument, 4 without a CUDA device.
// Usage: probe_context [--variant V] [--tokens T] [--heads H] [--head-size D] [--steps N]
//                      [--replays N] [--carveout PCT]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/kernel_records.hpp"
#include "core/operation.hpp"
#include "ops/cache_write/params.hpp"
#include "runtime/case_sets.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/cupti_timer.hpp"
#include "runtime/runner.hpp"
#include "runtime/timing_kernels.hpp"
#include "tools/probes/pairs.hpp"

namespace kvbench {
namespace {

using probes::Fn;
using probes::functions_of;
using probes::print_attributes;
using probes::print_pair;

struct Options {
  Variant variant = Variant::optimized;
  std::int64_t tokens = 1, heads = 8, head_size = 128;
  int steps = 20;      // pairs per graph
  int replays = 200;   // timed replays per graph
  int carveout = 100;  // percent of the unified L1/shared memory preferred as shared
};

using probes::BadArgument;
using probes::int_arg;

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw BadArgument(flag + ": expected a value (or an unknown argument)");
    const char* v = argv[++i];
    if (flag == "--variant") {
      try {
        o.variant = from_string<Variant>(v);
      } catch (const std::invalid_argument& e) {
        throw BadArgument("--variant: " + std::string(e.what()));
      }
    } else if (flag == "--tokens") {
      o.tokens = int_arg(flag, v, 1, 1 << 20);
    } else if (flag == "--heads") {
      o.heads = int_arg(flag, v, 1, 1024);
    } else if (flag == "--head-size") {
      o.head_size = int_arg(flag, v, 1, 1024);
    } else if (flag == "--steps") {
      o.steps = static_cast<int>(int_arg(flag, v, 2, 1000));
    } else if (flag == "--replays") {
      o.replays = static_cast<int>(int_arg(flag, v, 1, 100000));
    } else if (flag == "--carveout") {
      o.carveout = static_cast<int>(int_arg(flag, v, 0, 100));
    } else {
      throw BadArgument("unknown argument '" + flag + "'");
    }
  }
  return o;
}

void set_carveout(const std::vector<void*>& functions, int percent) {
  for (void* fn : functions)
    if (fn)
      KVB_CUDA_CHECK(
          cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
}

Case probe_case(const Options& o, Variant v) {
  Case c = operation(Kernel::cache_write).default_case();
  c.variant = v;
  c.num_tokens = o.tokens;
  c.num_heads = o.heads;
  params_of<CacheWriteParams>(c).head_size = o.head_size;
  params_of<CacheWriteParams>(c).block_size = 16;
  return c;
}

void probe(const Options& o, Variant v, const DeviceInfo& device, CuptiTimer& timer) {
  const Case c = probe_case(o, v);
  Row row;
  row.c = c;
  // The case's sets keep references to both: they live as long as `op`.
  const ValidationOptions options;
  const LaunchOverride no_override;
  const std::unique_ptr<stages::CaseSets> op =
      stages::make_case_sets(c, case_seed(c, 1), options, no_override, row);
  if (!op) throw std::runtime_error(describe(c) + ": " + row.reason);
  const Stream stream;
  const std::size_t inputs = op->layout().inputs_end();
  const DeviceBuffer arena(op->layout().bytes());
  const DeviceBuffer elsewhere((inputs + 15) / 16 * 16);  // P' writes here: K never reads it
  if (!op->build(0, 1, arena.as<unsigned char>(), stream.get(), row))
    throw std::runtime_error(describe(c) + ": did not pass: " + row.reason);

  const Fn k = [&](cudaStream_t s) { return op->launch(0, s); };
  const Fn p = [&](cudaStream_t s) {
    return timing::launch_touch(arena.get(), inputs, 0, device.sm_count, s);
  };
  const Fn p_other = [&](cudaStream_t s) {
    return timing::launch_touch(elsewhere.get(), inputs, 0, device.sm_count, s);
  };
  const Fn e = [](cudaStream_t s) { return timing::launch_empty(s); };

  std::printf("\n%s (K), %d pairs per replay, %d replays; %zu input bytes written by P\n",
              describe(c).c_str(), o.steps, o.replays, inputs);
  print_attributes("K", k, stream.get());
  print_attributes("P", p, stream.get());
  std::printf("%-22s %-8s %10s %12s %10s\n", "graph", "kernel", "median us", "gap before us",
              "span us");
  print_pair("[K K]", "K", "K", probes::time_pair(k, k, o.steps, o.replays, timer, stream.get()));
  print_pair("[P K]", "P", "K", probes::time_pair(p, k, o.steps, o.replays, timer, stream.get()));
  print_pair("[P P]", "P", "P", probes::time_pair(p, p, o.steps, o.replays, timer, stream.get()));
  print_pair("[E K]", "E", "K", probes::time_pair(e, k, o.steps, o.replays, timer, stream.get()));
  print_pair("[P E]", "P", "E", probes::time_pair(p, e, o.steps, o.replays, timer, stream.get()));
  print_pair("[P' K]", "P'", "K",
             probes::time_pair(p_other, k, o.steps, o.replays, timer, stream.get()));
  std::vector<void*> both = functions_of(p, stream.get());
  for (void* fn : functions_of(k, stream.get())) both.push_back(fn);
  set_carveout(both, o.carveout);
  const std::string name = "[P K] carveout " + std::to_string(o.carveout) + "%";
  const probes::PairTiming same = probes::time_pair(p, k, o.steps, o.replays, timer, stream.get());
  set_carveout(both, cudaSharedmemCarveoutDefault);
  print_pair(name.c_str(), "P", "K", same);
  row.status = Status::passed;
  op->recheck(1, stream.get(), row);
  if (row.status != Status::passed)
    throw std::runtime_error(describe(c) + ": wrong after the replays: " + row.reason);
}

}  // namespace
}  // namespace kvbench

int main(int argc, char** argv) {
  kvbench::Options o;
  return kvbench::probes::cupti_probe_main(
      "probe_context",
      "probe_context [--variant V] [--tokens T] [--heads H] [--head-size D] [--steps N] "
      "[--replays N] [--carveout PCT]",
      [&] { o = kvbench::parse(argc, argv); },
      [&](const kvbench::DeviceInfo& device, kvbench::CuptiTimer& timer) {
        kvbench::probe(o, o.variant, device, timer);
        if (o.variant != kvbench::Variant::seed_port)
          kvbench::probe(o, kvbench::Variant::seed_port, device, timer);
      });
}
