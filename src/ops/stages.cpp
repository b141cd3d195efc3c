// make_case_sets (runtime/case_sets.hpp): each case to its operation's run stages. CUDA code,
// which core and the backends (ops/launch.hpp) do not link: this layer's registry, one line per
// operation in the order of the Kernel enum.
#include "ops/cache_write/stages.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "ops/concat_mha_k/stages.hpp"
#include "ops/mla_cache/stages.hpp"
#include "runtime/case_sets.hpp"

namespace kvbench::stages {
namespace {

using MakeSets = std::unique_ptr<CaseSets> (*)(const Case&, std::uint64_t, const ValidationOptions&,
                                               const LaunchOverride&, Row&);

const std::vector<MakeSets>& all_sets() {
  static const std::vector<MakeSets> all = [] {
    std::vector<MakeSets> v = {
        concat_sets,
        cache_write_sets,
        mla_cache_sets,
    };
    if (v.size() != all_values<Kernel>().size())
      throw std::logic_error("the run stages' registry has " + std::to_string(v.size()) +
                             " operations, the Kernel enum " +
                             std::to_string(all_values<Kernel>().size()));
    return v;
  }();
  return all;
}

}  // namespace

std::unique_ptr<CaseSets> make_case_sets(const Case& c, std::uint64_t seed,
                                         const ValidationOptions& options,
                                         const LaunchOverride& override_launch, Row& row) {
  return all_sets().at(static_cast<std::size_t>(c.kernel))(c, seed, options, override_launch, row);
}

}  // namespace kvbench::stages
