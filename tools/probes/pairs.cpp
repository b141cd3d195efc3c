#include "tools/probes/pairs.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/kernel_records.hpp"
#include "core/stats.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_resources.hpp"

namespace kvbench::probes {
namespace {

// A graph captured from `body` on `stream`.
struct Graph {
  cudaGraph_t g = nullptr;
  Graph(const std::function<void(cudaStream_t)>& body, cudaStream_t stream) {
    KVB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      body(stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &g);
      if (g) cudaGraphDestroy(g);
      throw;
    }
    KVB_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
  }
  ~Graph() {
    if (g) cudaGraphDestroy(g);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // The functions of its kernel nodes, in no particular order.
  std::vector<void*> kernel_functions() const {
    std::size_t n = 0;
    KVB_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
    std::vector<cudaGraphNode_t> nodes(n);
    KVB_CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
    std::vector<void*> out;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      KVB_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
      if (type != cudaGraphNodeTypeKernel) continue;
      cudaKernelNodeParams p{};
      if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) {
        cudaGetLastError();
        p.func = nullptr;  // a node this API cannot describe: counted, not inspected
      }
      out.push_back(p.func);
    }
    return out;
  }
};

}  // namespace

std::vector<void*> functions_of(const Fn& f, cudaStream_t stream) {
  const Graph g([&](cudaStream_t s) { KVB_CUDA_CHECK(f(s)); }, stream);
  return g.kernel_functions();
}

PairTiming time_pair(const Fn& a, const Fn& b, int steps, int timed_replays, CuptiTimer& timer,
                     cudaStream_t stream) {
  timer.start();  // before the graph is made, so CUPTI sees it made
  ReplayShape shape;
  shape.steps = static_cast<std::size_t>(steps);
  shape.producer = functions_of(a, stream).size();
  shape.launch = functions_of(b, stream).size();
  const Graph graph(
      [&](cudaStream_t s) {
        for (int i = 0; i < steps; ++i) {
          KVB_CUDA_CHECK(a(s));
          KVB_CUDA_CHECK(b(s));
        }
      },
      stream);
  const GraphExec exec(graph.g);
  for (int i = 0; i < 20; ++i) KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  timer.take();
  std::vector<ReplayTiming> replays;
  for (int r = 0; r < timed_replays; ++r) {
    KVB_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
    replays.push_back(time_replay(timer.take(), shape));
  }
  timer.stop();
  std::vector<double> first, first_gap, second, second_gap, span;
  PairTiming t;
  for (const ReplayTiming& r : replays) {
    t.dropped += r.dropped;
    if (!r.complete) {
      ++t.incomplete;
      continue;
    }
    for (const UnitTiming& u : r.producers) {
      first.push_back(u.duration_us);
      if (u.has_gap) first_gap.push_back(u.gap_us);
    }
    for (const UnitTiming& u : r.launches) {
      second.push_back(u.duration_us);
      second_gap.push_back(u.gap_us);
    }
    span.push_back(r.span_us);
  }
  if (span.empty())
    throw std::runtime_error("no replay's kernel records add up: " + replays.front().problem);
  t.first_us = median_of(first);
  t.first_gap_us = median_of(first_gap);
  t.second_us = median_of(second);
  t.first_mean_us = summarize(first).mean_us;
  t.second_mean_us = summarize(second).mean_us;
  t.second_gap_us = median_of(second_gap);
  t.span_us = median_of(span);
  return t;
}

void print_row(const char* graph, const char* kernel, double us, double gap_us, double span_us) {
  std::printf("%-22s %-8s %10.3f %12.3f %10.3f\n", graph, kernel, us, gap_us, span_us);
}

void print_pair(const char* graph, const char* a, const char* b, const PairTiming& t) {
  print_row(graph, a, t.first_us, t.first_gap_us, t.span_us);
  print_row("", b, t.second_us, t.second_gap_us, t.span_us);
  if (t.incomplete || t.dropped)
    std::printf("%-22s (%zu replays left out, %zu invalid records)\n", "", t.incomplete, t.dropped);
}

void print_attributes(const char* name, const Fn& f, cudaStream_t stream) {
  for (void* fn : functions_of(f, stream)) {
    if (!fn) {
      std::printf("  %s: a kernel node whose function cannot be read\n", name);
      continue;
    }
    cudaFuncAttributes a{};
    KVB_CUDA_CHECK(cudaFuncGetAttributes(&a, fn));
    std::printf("  %s: %d registers, %zu B static shared, %zu B local, max %d threads, sm_%d\n",
                name, a.numRegs, a.sharedSizeBytes, a.localSizeBytes, a.maxThreadsPerBlock,
                a.binaryVersion);
  }
}

std::int64_t int_arg(const std::string& flag, const std::string& text, std::int64_t lo,
                     std::int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < lo || v > hi)
    throw BadArgument(flag + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got '" + text + "'");
  return v;
}

}  // namespace kvbench::probes
