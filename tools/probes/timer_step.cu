// Whether the CUPTI timer's mean resolves below its timestamp step. Kernel timestamps step by a
// fixed amount on some boards (0.256 µs on the H100s measured), so two short kernels less than a
// step apart often share a median. If a kernel's start falls at a random phase of that step, the
// mean of many quantized durations still estimates the true one. The probe times a one-warp kernel
// that spins for a given number of SM cycles, over a ladder of cycle counts finer than the step,
// in graphs of [S S] pairs (each kernel timed on its own, tools/probes/pairs.hpp), and prints per
// rung the second kernel's median and mean with their distance from a least-squares line through
// all rungs' means: a staircase for the median, and for the mean a line if the mean resolves.
// A probe, not a test: it asserts nothing about the figures. It exits 1 when a CUDA call fails
// or CUPTI cannot be loaded, 2 on a bad argument, 4 without a CUDA device.
// Usage: probe_timer_step [--max-cycles N] [--rung N] [--steps N] [--replays N]
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"
#include "runtime/cupti_timer.hpp"
#include "tools/probes/pairs.hpp"

namespace kvbench {
namespace {

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

struct Options {
  std::int64_t max_cycles = 2048, rung = 32;
  int steps = 20, replays = 200;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      throw probes::BadArgument(flag + ": expected a value (or an unknown argument)");
    const std::string v = argv[++i];
    if (flag == "--max-cycles") {
      o.max_cycles = probes::int_arg(flag, v, 1, 1 << 24);
    } else if (flag == "--rung") {
      o.rung = probes::int_arg(flag, v, 1, 1 << 20);
    } else if (flag == "--steps") {
      o.steps = static_cast<int>(probes::int_arg(flag, v, 2, 1000));
    } else if (flag == "--replays") {
      o.replays = static_cast<int>(probes::int_arg(flag, v, 1, 100000));
    } else {
      throw probes::BadArgument("unknown argument '" + flag + "'");
    }
  }
  if (o.max_cycles / o.rung < 2)
    throw probes::BadArgument("--max-cycles must hold at least two rungs of --rung");
  return o;
}

struct Rung {
  std::int64_t cycles;
  probes::PairTiming t;
};

// The least-squares line y = a + b x through the points.
void fit(const std::vector<double>& x, const std::vector<double>& y, double& a, double& b) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  a = (sy - b * sx) / n;
}

void probe(const Options& o, CuptiTimer& timer) {
  const Stream stream;
  std::vector<Rung> rungs;
  for (std::int64_t c = 0; c <= o.max_cycles; c += o.rung) {
    const probes::Fn s = [c](cudaStream_t st) {
      spin<<<1, 32, 0, st>>>(c);
      return cudaGetLastError();
    };
    rungs.push_back({c, probes::time_pair(s, s, o.steps, o.replays, timer, stream.get())});
  }
  std::vector<double> x, mean, median;
  for (const Rung& r : rungs) {
    x.push_back(static_cast<double>(r.cycles));
    mean.push_back(r.t.second_mean_us);
    median.push_back(r.t.second_us);
  }
  double a = 0, b = 0;
  fit(x, mean, a, b);
  std::printf(
      "\n[S S] pairs, S one warp spinning for N SM cycles; %d pairs per replay, %d "
      "replays per rung\n",
      o.steps, o.replays);
  std::printf("%8s %10s %10s %10s %12s %12s\n", "cycles", "median us", "mean us", "line us",
              "mean - line", "median - line");
  double worst_mean = 0, worst_median = 0;
  for (std::size_t i = 0; i < rungs.size(); ++i) {
    const double line = a + b * x[i];
    worst_mean = std::fmax(worst_mean, std::fabs(mean[i] - line));
    worst_median = std::fmax(worst_median, std::fabs(median[i] - line));
    std::printf("%8lld %10.3f %10.4f %10.4f %12.4f %12.4f\n", static_cast<long long>(x[i]),
                median[i], mean[i], line, mean[i] - line, median[i] - line);
  }
  std::printf("line: %.4f us + %.3f us per 1000 cycles (an SM clock of %.0f MHz)\n", a, b * 1000,
              b > 0 ? 1.0 / b : 0.0);
  std::printf("largest distance from the line: mean %.4f us, median %.4f us\n", worst_mean,
              worst_median);
}

}  // namespace
}  // namespace kvbench

int main(int argc, char** argv) {
  kvbench::Options o;
  return kvbench::probes::cupti_probe_main(
      "probe_timer_step", "probe_timer_step [--max-cycles N] [--rung N] [--steps N] [--replays N]",
      [&] { o = kvbench::parse(argc, argv); },
      [&](const kvbench::DeviceInfo&, kvbench::CuptiTimer& timer) { kvbench::probe(o, timer); });
}
