// make_case_sets (runtime/case_sets.hpp): each case to its operation's run stages. CUDA code,
// which core does not link: the registry's (src/ops/registry.cpp) exhaustive switch for it.
#include "ops/cache_write/stages.hpp"

#include "ops/concat_mla_k/stages.hpp"
#include "ops/mla_cache/stages.hpp"
#include "runtime/case_sets.hpp"

namespace kvbench::stages {

std::unique_ptr<CaseSets> make_case_sets(const Case& c, std::uint64_t seed,
                                         const ValidationOptions& options,
                                         const LaunchOverride& override_launch, Row& row) {
  switch (c.kernel) {
    case Kernel::concat_mla_k:
      return concat_sets(c, seed, options, override_launch, row);
    case Kernel::cache_write:
      return cache_write_sets(c, seed, options, override_launch, row);
    case Kernel::concat_and_cache_mla:
      return mla_cache_sets(c, seed, options, override_launch, row);
  }
  return nullptr;
}

}  // namespace kvbench::stages
