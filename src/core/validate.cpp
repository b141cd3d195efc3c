#include "core/validate.hpp"

#include <cmath>
#include <limits>

namespace kvbench {

std::string check_scales(const std::vector<float>& k_scale, const std::vector<float>& v_scale) {
  for (const auto* scales : {&k_scale, &v_scale})
    for (std::size_t i = 0; i < scales->size(); ++i) {
      const float s = (*scales)[i];
      if (std::isfinite(s) && s > 0) continue;
      const std::string name =
          std::string(scales == &k_scale ? "k_scale" : "v_scale") + "[" + std::to_string(i) + "]";
      const char* what = std::isnan(s)   ? "NaN"
                         : std::isinf(s) ? "infinite"
                         : s == 0        ? "zero"
                                         : "negative";
      return name + " is " + what + " (" + std::to_string(s) +
             "); scales must be positive and finite";
    }
  return "";
}

}  // namespace kvbench
