// concat_and_cast_mha_k's run stages (runtime/case_sets.hpp), looked up by src/ops/stages.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/case_sets.hpp"

namespace kvbench::stages {

// nullptr when the case is refused before any allocation (row.status and reason set).
std::unique_ptr<CaseSets> concat_sets(const Case& c, std::uint64_t seed,
                                      const ValidationOptions& options,
                                      const LaunchOverride& override_launch, Row& row);

}  // namespace kvbench::stages
