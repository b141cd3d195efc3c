// What the CUPTI probes share: two-kernel graphs replayed many times, each kernel timed on its
// own with the CUPTI timer (runtime/cupti_timer.hpp), and their main. Used by probe_context and
// probe_timer_step; a probe's helpers, not part of kvbench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cupti_timer.hpp"
#include "runtime/device_info.hpp"
#include "runtime/runner.hpp"

namespace kvbench::probes {

using Fn = std::function<cudaError_t(cudaStream_t)>;

// Each kernel's median duration and gap before it, over the complete replays of a graph of
// `steps` repetitions of [a b]; the median replay span.
struct PairTiming {
  double first_us = 0, first_gap_us = 0, second_us = 0, second_gap_us = 0, span_us = 0;
  double first_mean_us = 0, second_mean_us = 0;  // each kernel's mean duration
  std::size_t incomplete = 0, dropped = 0;
};

// [a b] repeated `steps` times in one graph, replayed `timed_replays` times after 20 untimed
// replays; each kernel timed on its own. Throws std::runtime_error when no replay's records add up.
PairTiming time_pair(const Fn& a, const Fn& b, int steps, int timed_replays, CuptiTimer& timer,
                     cudaStream_t stream);

// The functions of the kernels `f` launches (captured once into a graph, never run).
std::vector<void*> functions_of(const Fn& f, cudaStream_t stream);

// One row of a pair's table: graph, kernel, median µs, gap before it µs, span µs.
void print_row(const char* graph, const char* kernel, double us, double gap_us, double span_us);
// Both kernels' rows of a pair, and how many replays or records were left out.
void print_pair(const char* graph, const char* a, const char* b, const PairTiming& t);
// Registers, static shared and local memory of each kernel `f` launches.
void print_attributes(const char* name, const Fn& f, cudaStream_t stream);

// A bad command-line argument: the probe prints it with its usage and exits 2.
class BadArgument : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` as an integer in [lo, hi]; BadArgument naming `flag` otherwise.
std::int64_t int_arg(const std::string& flag, const std::string& text, std::int64_t lo,
                     std::int64_t hi);

// The main of a CUPTI probe named `name`: `parse()` (a BadArgument: the message and `usage`,
// exit 2), the device (none: exit 4), the CUPTI timer (none: exit 1), then `body(device, timer)`
// (an exception: its message, exit 1); 0 after it.
template <class Parse, class Body>
int cupti_probe_main(const char* name, const char* usage, Parse parse, Body body) {
  try {
    parse();
  } catch (const BadArgument& e) {
    std::fprintf(stderr, "%s: %s\nusage: %s\n", name, e.what(), usage);
    return 2;
  }
  DeviceInfo device;
  try {
    device = open_device();
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 4;
  }
  try {
    CuptiTimer* timer = CuptiTimer::get();
    if (!timer) throw std::runtime_error("needs CUPTI: " + CuptiTimer::unavailable_reason());
    std::printf("%s on %s; CUPTI %s (API version %u)\n", name, device.name.c_str(),
                timer->library().c_str(), timer->version());
    body(device, *timer);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
  return 0;
}

}  // namespace kvbench::probes
