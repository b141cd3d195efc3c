#include "core/case.hpp"

#include "core/operation.hpp"

namespace kvbench {

std::string describe(const Case& c) { return operation(c.kernel).describe(c); }

void check_sizes(const Case& c) { operation(c.kernel).check_sizes(c); }

}  // namespace kvbench
