// Memory admission: what a case allocates on the host and on the device, computed from its
// geometry before anything is allocated, and the check against what the machine has free.
// The estimate is pure; reading /proc/meminfo and the cgroup limit is the only I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/case.hpp"

namespace kvbench {

// Bytes a case needs, split so that a runner holding several buffer sets (rotated inputs and
// outputs) can scale the part that repeats: total = fixed + sets * per_set.
struct Footprint {
  std::uint64_t host_fixed = 0, host_per_set = 0;
  std::uint64_t device_fixed = 0, device_per_set = 0;
  std::uint64_t host(int sets = 1) const { return host_fixed + std::uint64_t(sets) * host_per_set; }
  std::uint64_t device(int sets = 1) const {
    return device_fixed + std::uint64_t(sets) * device_per_set;
  }
};

// What a run of `c` allocates, counted buffer by buffer by its operation (Operation::footprint,
// src/ops/<op>/operation.cpp, beside the run stages that allocate it): host buffers are fixed
// (inputs and the reference, made once per case), device buffers are per set (the stages'
// SetLayout). Timer and L2-flush buffers are per process, outside the estimate (allocated
// before any case).
Footprint case_footprint(const Case& c);

// "274.9 GB" (decimal gigabytes, one decimal; MB below 1 GB).
std::string format_bytes(std::uint64_t bytes);

// Host memory a new allocation can take: MemAvailable of /proc/meminfo, capped by the cgroup's
// memory.max less memory.current when there is a limit, less a margin (1/20, at least 1 GiB)
// for the process itself. nullopt when /proc/meminfo cannot be read.
std::optional<std::uint64_t> host_available_bytes();

// Parses the "MemAvailable:  123 kB" line of /proc/meminfo text; nullopt when absent.
std::optional<std::uint64_t> parse_mem_available(const std::string& meminfo);

// The reason a case does not fit, e.g. "needs 274.9 GB host memory, 131.2 GB available", or ""
// when it fits. An unknown availability (nullopt) admits.
std::string admission_refusal(const Footprint& f, int sets, std::optional<std::uint64_t> host_free,
                              std::optional<std::uint64_t> device_free);

}  // namespace kvbench
