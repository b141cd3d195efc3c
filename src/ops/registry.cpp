// The registry: every operation kvbench runs, one line each, in the order of the Kernel enum
// (core/types.hpp). What an operation is lives in its folder (src/ops/<op>/); everything else
// looks it up here (core/operation.hpp). What core must not link has its own list beside this
// file, one line per operation each: the backends (launch.cpp: plans, plugin ABI) and the run
// stages (stages.cpp: CUDA).
#include <stdexcept>

#include "core/operation.hpp"
#include "ops/cache_write/operation.hpp"
#include "ops/concat_mha_k/operation.hpp"
#include "ops/mla_cache/operation.hpp"

namespace kvbench {

const std::vector<const Operation*>& operations() {
  static const std::vector<const Operation*> all = [] {
    std::vector<const Operation*> v = {
        &concat_operation(),
        &cache_write_operation(),
        &mla_cache_operation(),
    };
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i]->kernel() != all_values<Kernel>().at(i))
        throw std::logic_error("the registry's operation " + std::to_string(i) + " is " +
                               std::string(to_string(v[i]->kernel())) + ", not the Kernel enum's");
    return v;
  }();
  return all;
}

const Operation& operation(Kernel k) {
  for (const Operation* op : operations())
    if (op->kernel() == k) return *op;
  throw std::logic_error("no operation registered for " + std::string(to_string(k)));
}

}  // namespace kvbench
