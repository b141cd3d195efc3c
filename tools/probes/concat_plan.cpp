// Which launch path of the optimized concat_and_cast_mha_k is fastest in each context: every
// optimized concat case of a config (filtered by --tokens / --heads), run through the same runner
// as `kvbench run` (validated, then timed), once as planned and once on each path forced:
//   planned  plan_concat's choice (kernels/concat_mha_k/plan.cpp)
//   2d       the 2-D tiling, one token per thread, in the planned vector width
//   flat     the flat tiling, 256 threads a block, in the planned vector width
//   wNxG     token walking with N threads a block and G walkers (--walk N1xG1,N2xG2,...): how the
//            walk's grid divides the tokens and the blocks over the SMs
//   tNxU     the 2-D tiling with blocks of at most N threads and U tokens a thread (--tile2d
//            N1xU1,...; U 1, or 2 for 16-byte input vectors): how its block size decides its time
// --vec N launches every forced path (not `planned`) in N-element vectors instead of the planned
// width (the kernels are built for 16 bytes of input, 16 bytes of the narrower type, and 1); a
// width the case's strides or the kernels do not allow fails that path's launch, which the probe
// reports.
// each in every context asked for (default back_to_back,after_producer) by the cupti timer (the
// event timer when CUPTI cannot be loaded: the column `timer` says which). The plan rule was chosen
// on back-to-back runs; this says whether the same path wins after a producer.
// A probe, not a test: it asserts nothing about the figures. It exits 1 when a case does not
// pass or a CUDA call fails, 2 on a bad argument or config, 4 without a CUDA device.
// Usage: probe_concat_plan CONFIG [--tokens T] [--heads H] [--contexts C1,C2] [--walk NxG,...]
// [--tile2d NxU,...] [--vec N]
//
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sweep.hpp"
#include "kernels/common/device_props.hpp"
#include "kernels/common/tiling.hpp"
#include "kernels/concat_mha_k/concat_mha_k.hpp"
#include "kernels/concat_mha_k/plan.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench {
namespace {

struct Options {
  std::string config;
  std::int64_t tokens = 0, heads = 0;  // 0: any
  int vec = 0;                         // the forced paths' vector width; 0: as planned
  std::vector<Context> contexts{Context::back_to_back, Context::after_producer};
  std::vector<std::pair<int, int>> walks;  // (threads a block, walkers) of each forced walk
  std::vector<std::pair<int, int>> tiles;  // (threads a block at most, tokens a thread)
};

class BadArgument : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::int64_t int_arg(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < 1 || v > (1 << 30))
    throw BadArgument(flag + ": expected a positive integer, got '" + text + "'");
  return v;
}

// Calls f on each comma-separated item of `list`.
template <class F>
void each_item(const std::string& list, F f) {
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    f(list.substr(at, comma - at));
    at = comma + 1;
  }
}

// "AxB" as two positive integers, each at most `max_a` and `max_b`, `a_multiple` dividing A; the
// names say what they are in the error.
std::pair<int, int> shape_arg(const std::string& flag, const std::string& item, const char* names,
                              std::int64_t max_a, std::int64_t max_b, std::int64_t a_multiple,
                              const char* rule) {
  const std::size_t x = item.find('x');
  if (x == std::string::npos)
    throw BadArgument(flag + ": expected " + names + ", got '" + item + "'");
  const auto a = int_arg(flag, item.substr(0, x).c_str());
  const auto b = int_arg(flag, item.substr(x + 1).c_str());
  if (a > max_a || b > max_b || a % a_multiple)
    throw BadArgument(flag + ": " + rule + ", got '" + item + "'");
  return {static_cast<int>(a), static_cast<int>(b)};
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!o.config.empty()) throw BadArgument("a second config '" + arg + "'");
      o.config = arg;
      continue;
    }
    if (i + 1 >= argc) throw BadArgument(arg + ": expected a value (or an unknown argument)");
    const char* v = argv[++i];
    if (arg == "--tokens") {
      o.tokens = int_arg(arg, v);
    } else if (arg == "--heads") {
      o.heads = int_arg(arg, v);
    } else if (arg == "--vec") {
      o.vec = static_cast<int>(int_arg(arg, v));
      if (o.vec != 1 && o.vec != 2 && o.vec != 4 && o.vec != 8 && o.vec != 16)
        throw BadArgument("--vec: expected 1, 2, 4, 8 or 16, got '" + std::string(v) + "'");
    } else if (arg == "--contexts") {
      o.contexts.clear();
      each_item(v, [&](const std::string& item) {
        try {
          o.contexts.push_back(from_string<Context>(item));
        } catch (const std::invalid_argument& e) {
          throw BadArgument("--contexts: " + std::string(e.what()));
        }
      });
    } else if (arg == "--walk") {
      each_item(v, [&](const std::string& item) {
        o.walks.push_back(shape_arg(arg, item, "THREADSxWALKERS", 512, 65535, 32,
                                    "threads must be a multiple of 32 up to 512 (the walk "
                                    "kernel's bound) and walkers at most 65535"));
      });
    } else if (arg == "--tile2d") {
      each_item(v, [&](const std::string& item) {
        o.tiles.push_back(shape_arg(arg, item, "THREADSxUNROLL", 512, 2, 1,
                                    "threads must be at most 512 and the unroll 1 or 2"));
      });
    } else {
      throw BadArgument("unknown argument '" + arg + "'");
    }
  }
  if (o.config.empty()) throw BadArgument("expected a config");
  return o;
}

// The planned launch, in `vec`-element vectors unless `vec` is 0.
kernels::ConcatPlan planned(const kernels::ConcatArgs& a, int vec) {
  kernels::ConcatPlan p =
      kernels::plan_concat(a, Variant::optimized, kernels::current_device_props());
  if (vec) p.vec = vec;
  return p;
}

// The planned launch with its path replaced; the vector width (or `vec`), PDL and index type as
// planned (int32 where every offset fits, as the plan decides for the 2-D tiling).
kernels::ConcatPlan forced(const kernels::ConcatArgs& a, kernels::ConcatPath path, int vec) {
  kernels::ConcatPlan p = planned(a, vec);
  if (!p.error.empty()) return p;
  const std::int64_t head_vecs = (a.nope_dim + a.rope_dim) / p.vec;
  const std::int64_t largest = (a.num_tokens + 1) * std::max({a.nope_s0, a.rope_s0, a.k_s0});
  p.path = path;
  p.unroll = 1;
  p.late_trigger = false;
  p.index =
      largest < (std::int64_t{1} << 31) ? kernels::IndexType::int32 : kernels::IndexType::int64;
  if (path == kernels::ConcatPath::tile_2d) {
    const kernels::Tile2D tile(a.num_tokens, a.num_heads, head_vecs, 256, 1);
    if (!tile.ok()) {
      p.error = "no 2-D tiling for this head size";
      return p;
    }
    p.grid = tile.grid();
    p.block = tile.block();
  } else {
    p.grid = kernels::Dim3{kernels::grid_blocks(a.num_tokens * a.num_heads * head_vecs, 256), 1, 1};
    p.block = kernels::Dim3{256, 1, 1};
  }
  return p;
}

// The planned launch as a token walk of `threads`-thread blocks and `walkers` walkers (at most one
// a token), with the unroll the walk kernel is built with and PDL's trigger at the start.
kernels::ConcatPlan walking(const kernels::ConcatArgs& a, int threads, int walkers, int vec) {
  kernels::ConcatPlan p = planned(a, vec);
  if (!p.error.empty()) return p;
  const std::int64_t per_token = a.num_heads * ((a.nope_dim + a.rope_dim) / p.vec);
  p.path = kernels::ConcatPath::walk;
  p.unroll = p.vec * static_cast<int>(size_of(a.in_dtype)) == 16 ? 4 : 1;
  p.late_trigger = false;
  p.grid = kernels::Dim3{static_cast<unsigned>((per_token + threads - 1) / threads),
                         static_cast<unsigned>(std::min<std::int64_t>(walkers, a.num_tokens)), 1};
  p.block = kernels::Dim3{static_cast<unsigned>(threads), 1, 1};
  return p;
}

LaunchOverride forcing_walk(int threads, int walkers, int vec) {
  LaunchOverride o;
  o.on<kernels::ConcatArgs>(
      Kernel::concat_mha_k, [threads, walkers, vec](const kernels::ConcatArgs& a, cudaStream_t s) {
        return kernels::launch_concat_mha_k(a, walking(a, threads, walkers, vec), s);
      });
  return o;
}

// The planned launch on the 2-D tiling with blocks of at most `threads` threads and `unroll` tokens
// a thread; an error when no such tiling exists. An unroll of 2 launches only for 16-byte input
// vectors (the kernel is built so), else the launch fails and the probe says so.
kernels::ConcatPlan tiling(const kernels::ConcatArgs& a, int threads, int unroll, int vec) {
  kernels::ConcatPlan p = forced(a, kernels::ConcatPath::tile_2d, vec);
  if (!p.error.empty()) return p;
  const kernels::Tile2D tile(a.num_tokens, a.num_heads, (a.nope_dim + a.rope_dim) / p.vec, threads,
                             unroll);
  if (!tile.ok()) {
    p.error = "no 2-D tiling of " + std::to_string(threads) + " threads";
    return p;
  }
  p.unroll = unroll;
  p.grid = tile.grid();
  p.block = tile.block();
  return p;
}

LaunchOverride forcing_tile(int threads, int unroll, int vec) {
  LaunchOverride o;
  o.on<kernels::ConcatArgs>(
      Kernel::concat_mha_k, [threads, unroll, vec](const kernels::ConcatArgs& a, cudaStream_t s) {
        const kernels::ConcatPlan p = tiling(a, threads, unroll, vec);
        return p.error.empty() ? kernels::launch_concat_mha_k(a, p, s) : cudaErrorInvalidValue;
      });
  return o;
}

LaunchOverride forcing(kernels::ConcatPath path, int vec) {
  LaunchOverride o;
  o.on<kernels::ConcatArgs>(Kernel::concat_mha_k,
                            [path, vec](const kernels::ConcatArgs& a, cudaStream_t s) {
                              return kernels::launch_concat_mha_k(a, forced(a, path, vec), s);
                            });
  return o;
}

int probe(const Options& o, const Config& config, const DeviceInfo& device) {
  int failed = 0;
  std::printf("%-58s %-15s %-9s %-6s %10s %9s %9s\n", "case", "context", "path", "timer",
              "median us", "gap us", "span us");
  for (Case c : config.cases) {
    if (c.kernel != Kernel::concat_mha_k || c.variant != Variant::optimized) continue;
    if ((o.tokens && c.num_tokens != o.tokens) || (o.heads && c.num_heads != o.heads)) continue;
    for (Context ctx : o.contexts) {
      RunSettings s = config.settings;
      s.context = ctx;
      s.hot_inputs = false;
      s.timer = Timer::cupti;
      s.mode = TimingMode::graph;
      resolve_context(s);
      struct Path {
        std::string name;
        LaunchOverride launch;
      };
      std::vector<Path> paths{{"planned", {}},
                              {"2d", forcing(kernels::ConcatPath::tile_2d, o.vec)},
                              {"flat", forcing(kernels::ConcatPath::flat, o.vec)}};
      for (const auto& [threads, walkers] : o.walks)
        paths.push_back({"w" + std::to_string(threads) + "x" + std::to_string(walkers),
                         forcing_walk(threads, walkers, o.vec)});
      for (const auto& [threads, unroll] : o.tiles)
        paths.push_back({"t" + std::to_string(threads) + "x" + std::to_string(unroll),
                         forcing_tile(threads, unroll, o.vec)});
      for (const auto& path : paths) {
        const Row r = run_case(c, s, device, {}, path.launch);
        const std::string timer = r.timer ? std::string(to_string(*r.timer)) : "-";
        if (r.status != Status::passed) {
          ++failed;
          std::printf("%-58s %-15s %-9s %-6s did not pass: %s\n", describe(c).c_str(),
                      std::string(to_string(ctx)).c_str(), path.name.c_str(), timer.c_str(),
                      r.reason.c_str());
          continue;
        }
        std::printf("%-58s %-15s %-9s %-6s %10.3f %9.3f %9.3f\n", describe(c).c_str(),
                    std::string(to_string(ctx)).c_str(), path.name.c_str(), timer.c_str(),
                    r.stats.median_us, r.gap_us.value_or(0), r.span_us.value_or(0));
      }
    }
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kvbench

int main(int argc, char** argv) {
  kvbench::Options o;
  try {
    o = kvbench::parse(argc, argv);
  } catch (const kvbench::BadArgument& e) {
    std::fprintf(stderr,
                 "probe_concat_plan: %s\nusage: probe_concat_plan CONFIG [--tokens T] [--heads H] "
                 "[--contexts C1,C2] [--walk NxG,...] [--tile2d NxU,...] [--vec N]\n",
                 e.what());
    return 2;
  }
  kvbench::Config config;
  try {
    config = kvbench::load_config(o.config);
  } catch (const kvbench::ConfigError& e) {
    std::fprintf(stderr, "probe_concat_plan: %s\n", e.what());
    return 2;
  }
  kvbench::DeviceInfo device;
  try {
    device = kvbench::open_device();
  } catch (const kvbench::NoDeviceError& e) {
    std::fprintf(stderr, "probe_concat_plan: %s\n", e.what());
    return 4;
  }
  try {
    return kvbench::probe(o, config, device);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe_concat_plan: %s\n", e.what());
    return 1;
  }
}
