// Where the per-token-head fp8 cache write (kernels/cache_write/token_head.cu) spends its time at
// decode sizes: its kernel rebuilt here with parts left out, each launch timed on its own by the
// CUPTI timer right after the hot-inputs producer ([P K], as `--context after_producer`) and back
// to back ([K K], read by the replay's span). The parts:
//   slot    the slot load (with SWA the table) before the row's stores; without it, token t
//           writes slot t
//   reduce  the row's amax across its lanes (kernels::group_max); without it, each lane's own
//   divide  the scale's correctly rounded quotient and the codes' division by it (Divisor);
//           without it, one approximate reciprocal and multiplications
// `planned` is the library's own launch (validated first); `all` is this file's kernel with every
// part, which should time as `planned` does. Kernels with parts left out write wrong codes: they
// are timed, never checked. A probe, not a test: it asserts nothing about the figures. It exits 1
// when the case does not pass, a CUDA call fails or CUPTI cannot be loaded, 2 on a bad argument,
// 4 without a CUDA device.
// Usage: probe_token_head_parts [--tokens T1,T2,...] [--head-size D] [--steps N] [--replays N]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/operation.hpp"
#include "kernels/cache_write/device.cuh"
#include "kernels/cache_write/plan.hpp"
#include "kernels/common/device_props.hpp"
#include "kernels/common/pdl.cuh"
#include "ops/cache_write/params.hpp"
#include "runtime/case_sets.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/runner.hpp"
#include "runtime/timing_kernels.hpp"
#include "tools/probes/pairs.hpp"

namespace kvbench {
namespace {

using kernels::CacheWriteArgs;
using kernels::FastDiv;
using kernels::Vec;

constexpr unsigned kSlot = 1, kReduce = 2, kDivide = 4, kAll = 7;
constexpr int kVec = 4;

// The kernel of token_head.cu for rows held in registers (REGS vectors a lane), with the parts
// KEEP names; the others replaced as the file's header says.
template <int REGS, unsigned KEEP>
__global__ void __launch_bounds__(256)
    token_head_parts(CacheWriteArgs a, int lanes, FastDiv heads, FastDiv block_div) {
  using In = __nv_bfloat16;
  kernels::pdl_launch_dependents();
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int shift = __ffs(lanes) - 1;
  const std::int64_t row = thread >> shift;
  const int lane = static_cast<int>(thread & (lanes - 1));
  if (row >= a.num_tokens * a.num_heads) return;
  const std::int64_t t = heads.div(static_cast<std::uint32_t>(row));
  const std::int64_t h = row - t * a.num_heads;
  const int first = static_cast<int>(threadIdx.x % 32) & ~(lanes - 1);
  const unsigned mask = lanes == 32 ? 0xFFFFFFFFu : ((1u << lanes) - 1u) << first;
  const In* key = static_cast<const In*>(a.key) + t * a.key_s0 + h * a.key_s1;
  const In* value = static_cast<const In*>(a.value) + t * a.value_s0 + h * a.value_s1;
  kernels::pdl_wait();
  std::int64_t slot = t;
  if constexpr ((KEEP & kSlot) != 0) {
    slot = kernels::physical_slot(a, t);
    if (slot < 0) return;
  }
  std::int64_t block, offset;
  kernels::split_slot(slot, a.block_size, block_div, block, offset);
  const std::int64_t dst = block * a.block_stride + offset * a.slot_stride + h * a.head_stride;
  std::uint8_t* kc = static_cast<std::uint8_t*>(a.key_cache) + dst;
  std::uint8_t* vc = static_cast<std::uint8_t*>(a.value_cache) + dst;
  const int vecs = static_cast<int>(a.head_size / kVec);
  Vec<In, kVec> kx[REGS], vx[REGS];
  float ka = 0.0f, va = 0.0f;
#pragma unroll
  for (int r = 0; r < REGS; ++r) {
    const int j = lane + r * lanes;
    if (j < vecs) {
      kx[r] = kernels::load_vec<In, kVec>(key + kVec * j);
      vx[r] = kernels::load_vec<In, kVec>(value + kVec * j);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        ka = fmaxf(ka, fabsf(kernels::to_float(kx[r].v[i])));
        va = fmaxf(va, fabsf(kernels::to_float(vx[r].v[i])));
      }
    }
  }
  if constexpr ((KEEP & kReduce) != 0) kernels::group_max(ka, va, lanes, mask);
  float ks, vs;
  if constexpr ((KEEP & kDivide) != 0) {
    ks = fmaxf(__fdiv_rn(ka, 448.0f), 1e-6f);
    vs = fmaxf(__fdiv_rn(va, 448.0f), 1e-6f);
    const kernels::Divisor kd(ks), vd(vs);
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
      const int j = lane + r * lanes;
      if (j < vecs) {
        kernels::store_vec(reinterpret_cast<kernels::fp8_e4m3_t*>(kc) + kVec * j,
                           kernels::cast_vec<kernels::fp8_e4m3_t>(kx[r], kd));
        kernels::store_vec(reinterpret_cast<kernels::fp8_e4m3_t*>(vc) + kVec * j,
                           kernels::cast_vec<kernels::fp8_e4m3_t>(vx[r], vd));
      }
    }
  } else {
    ks = fmaxf(ka * (1.0f / 448.0f), 1e-6f);
    vs = fmaxf(va * (1.0f / 448.0f), 1e-6f);
    const float ki = __frcp_rn(ks), vi = __frcp_rn(vs);
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
      const int j = lane + r * lanes;
      if (j < vecs) {
        Vec<kernels::fp8_e4m3_t, kVec> kq, vq;
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          kq.v[i] = kernels::from_float<kernels::fp8_e4m3_t>(kernels::to_float(kx[r].v[i]) * ki);
          vq.v[i] = kernels::from_float<kernels::fp8_e4m3_t>(kernels::to_float(vx[r].v[i]) * vi);
        }
        kernels::store_vec(reinterpret_cast<kernels::fp8_e4m3_t*>(kc) + kVec * j, kq);
        kernels::store_vec(reinterpret_cast<kernels::fp8_e4m3_t*>(vc) + kVec * j, vq);
      }
    }
  }
  if (lane == 0) {
    *reinterpret_cast<float*>(kc + a.head_size) = ks;
    *reinterpret_cast<float*>(vc + a.head_size) = vs;
  }
}

template <unsigned KEEP>
cudaError_t launch_parts(const CacheWriteArgs& a, const kernels::CacheWritePlan& p,
                         cudaStream_t s) {
  const FastDiv heads(static_cast<std::uint32_t>(a.num_heads)), bd = kernels::block_size_div(a);
  const dim3 grid(p.grid.x), block(p.block.x);
  switch (p.row_vecs) {
    case 1:
      return kernels::launch_pdl(token_head_parts<1, KEEP>, grid, block, s, a, p.lanes, heads, bd);
    case 2:
      return kernels::launch_pdl(token_head_parts<2, KEEP>, grid, block, s, a, p.lanes, heads, bd);
    default:
      return cudaErrorInvalidValue;  // the probe's shapes hold a row in one or two vectors a lane
  }
}

struct Part {
  const char* name;
  cudaError_t (*launch)(const CacheWriteArgs&, const kernels::CacheWritePlan&, cudaStream_t);
};
const Part kParts[] = {{"all", launch_parts<kAll>},
                       {"-slot", launch_parts<kAll & ~kSlot>},
                       {"-reduce", launch_parts<kAll & ~kReduce>},
                       {"-divide", launch_parts<kAll & ~kDivide>},
                       {"none", launch_parts<0>}};

struct Options {
  std::vector<std::int64_t> tokens{1, 16, 128, 1024};
  std::int64_t head_size = 128;
  int steps = 20, replays = 200;
};

using probes::BadArgument;
using probes::int_arg;

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw BadArgument(flag + ": expected a value (or an unknown argument)");
    const std::string v = argv[++i];
    if (flag == "--tokens") {
      o.tokens.clear();
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        o.tokens.push_back(int_arg(flag, v.substr(at, comma - at), 1, 1 << 20));
        at = comma + 1;
      }
    } else if (flag == "--head-size") {
      o.head_size = int_arg(flag, v, 4, 256);
      if (o.head_size % 4) throw BadArgument("--head-size: expected a multiple of 4, got " + v);
    } else if (flag == "--steps") {
      o.steps = static_cast<int>(int_arg(flag, v, 2, 1000));
    } else if (flag == "--replays") {
      o.replays = static_cast<int>(int_arg(flag, v, 1, 100000));
    } else {
      throw BadArgument("unknown argument '" + flag + "'");
    }
  }
  return o;
}

Case token_head_case(std::int64_t tokens, std::int64_t head_size) {
  Case c = operation(Kernel::cache_write).default_case();
  c.variant = Variant::optimized;
  c.num_tokens = tokens;
  c.num_heads = 8;
  c.in_dtype = DType::bf16;
  c.out_dtype = DType::fp8_e4m3;
  auto& p = params_of<CacheWriteParams>(c);
  p.head_size = head_size;
  p.block_size = 16;
  p.scale = ScaleMode::per_token_head;
  return c;
}

void probe(const Options& o, std::int64_t tokens, const DeviceInfo& device, CuptiTimer& timer) {
  const Case c = token_head_case(tokens, o.head_size);
  // Which launch the case's launches run: -1 the library's own, else kParts' index.
  int part = -1;
  LaunchOverride launch;
  launch.on<CacheWriteArgs>(Kernel::cache_write, [&part](const CacheWriteArgs& a, cudaStream_t s) {
    if (part < 0) return kernels::launch_cache_write(a, Variant::optimized, s);
    const kernels::CacheWritePlan p =
        kernels::plan_cache_write(a, Variant::optimized, kernels::current_device_props());
    if (!p.error.empty() || p.path != kernels::CacheWritePath::token_head)
      return cudaErrorInvalidValue;
    return kParts[part].launch(a, p, s);
  });
  Row row;
  row.c = c;
  const ValidationOptions options;
  const std::unique_ptr<stages::CaseSets> op =
      stages::make_case_sets(c, case_seed(c, 1), options, launch, row);
  if (!op) throw std::runtime_error(describe(c) + ": " + row.reason);
  const Stream stream;
  const std::size_t inputs = op->layout().inputs_end();
  const DeviceBuffer arena(op->layout().bytes());
  if (!op->build(0, 1, arena.as<unsigned char>(), stream.get(), row))  // validated, as planned
    throw std::runtime_error(describe(c) + ": did not pass: " + row.reason);
  const probes::Fn k = [&](cudaStream_t s) { return op->launch(0, s); };
  const probes::Fn p = [&](cudaStream_t s) {
    return timing::launch_touch(arena.get(), inputs, 0, device.sm_count, s);
  };
  std::printf("\n%s\n", describe(c).c_str());
  std::printf("%-9s %14s %14s %14s %12s\n", "K", "[P K] K us", "[P K] span us", "[K K] K us",
              "[K K] span us");
  const auto line = [&](const char* name) {
    const probes::PairTiming pk = probes::time_pair(p, k, o.steps, o.replays, timer, stream.get());
    const probes::PairTiming kk = probes::time_pair(k, k, o.steps, o.replays, timer, stream.get());
    std::printf("%-9s %14.3f %14.3f %14.3f %12.3f\n", name, pk.second_us, pk.span_us, kk.second_us,
                kk.span_us);
  };
  line("planned");
  for (part = 0; part < static_cast<int>(std::size(kParts)); ++part) line(kParts[part].name);
  part = -1;
}

}  // namespace
}  // namespace kvbench

int main(int argc, char** argv) {
  kvbench::Options o;
  return kvbench::probes::cupti_probe_main(
      "probe_token_head_parts",
      "probe_token_head_parts [--tokens T1,T2,...] [--head-size D] [--steps N] [--replays N]",
      [&] { o = kvbench::parse(argc, argv); },
      [&](const kvbench::DeviceInfo& device, kvbench::CuptiTimer& timer) {
        for (std::int64_t t : o.tokens) kvbench::probe(o, t, device, timer);
      });
}
