#include "core/operation.hpp"

namespace kvbench {

std::string variant_refusal(const Case& c) {
  for (const VariantInfo& v : operation(c.kernel).variants())
    if (v.variant == c.variant) return v.supports ? v.supports(c) : "";
  // Not this operation's: name the operations that have it.
  std::string owners, why;
  for (const Operation* op : operations())
    for (const VariantInfo& v : op->variants())
      if (v.variant == c.variant) {
        owners += (owners.empty() ? "" : ", ") + std::string(to_string(op->kernel()));
        if (why.empty()) why = v.why;
      }
  if (owners.empty())
    return "variant " + std::string(to_string(c.variant)) + " is registered for no operation";
  return "variant " + std::string(to_string(c.variant)) + " is a " + owners + " variant (" + why +
         ")";
}

}  // namespace kvbench
