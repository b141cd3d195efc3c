#include "core/operation.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace kvbench {
namespace {

std::map<Kernel, std::vector<VariantInfo>>& external_variants() {
  static std::map<Kernel, std::vector<VariantInfo>> added;
  return added;
}

std::map<Variant, std::string>& origins() {
  static std::map<Variant, std::string> where;
  return where;
}

}  // namespace

void add_external_variant(Kernel k, VariantInfo v, std::string origin) {
  origins()[v.variant] = std::move(origin);
  external_variants()[k].push_back(std::move(v));
}

std::string variant_origin(Variant v) {
  const auto it = origins().find(v);
  return it == origins().end() ? "" : it->second;
}

std::vector<VariantInfo> variants_of(Kernel k) {
  std::vector<VariantInfo> all = operation(k).variants();
  const auto it = external_variants().find(k);
  if (it != external_variants().end()) all.insert(all.end(), it->second.begin(), it->second.end());
  return all;
}

std::vector<Case> with_variants(const std::vector<Case>& cases,
                                const std::vector<std::string>& names) {
  std::vector<Variant> wanted;
  for (const std::string& n : names) {
    try {
      wanted.push_back(from_string<Variant>(n));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--variants: ") + e.what() +
                                  "; a plugin's variant needs its --plugin");
    }
  }
  std::vector<Case> out;
  std::set<std::string> seen;
  std::set<Variant> used;
  for (const Case& c : cases) {
    const std::vector<VariantInfo> own = variants_of(c.kernel);
    for (Variant v : wanted) {
      if (std::none_of(own.begin(), own.end(),
                       [v](const VariantInfo& i) { return i.variant == v; }))
        continue;
      Case copy = c;
      copy.variant = v;
      used.insert(v);
      if (seen.insert(copy.sweep + ": " + describe(copy)).second) out.push_back(std::move(copy));
    }
  }
  for (Variant v : wanted)
    if (!used.count(v))
      throw std::invalid_argument("--variants: no case of the config is of an operation that has " +
                                  std::string(to_string(v)));
  return out;
}

std::string variant_refusal(const Case& c) {
  for (const VariantInfo& v : variants_of(c.kernel))
    if (v.variant == c.variant) return v.supports ? v.supports(c) : "";
  // Not this operation's: name the operations that have it.
  std::string owners, why;
  for (const Operation* op : operations())
    for (const VariantInfo& v : variants_of(op->kernel()))
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
