// A benchmark case: one point of a sweep. A common header that every operation has (sweep,
// operation, variant, dtypes, tokens, heads, stride mode, injected input) and the operation's own
// parameters (src/ops/<op>/params.hpp), held behind OpParams so that core carries a case without
// knowing any operation: no field means one thing for one operation and another for the next.
// Pure data and pure functions: no CUDA, no YAML, no I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/types.hpp"

namespace kvbench {

// An operation's own parameters. Each operation derives one final struct from it (its
// params.hpp); op code reads it with params_of<P>(case).
class OpParams {
 public:
  virtual ~OpParams() = default;
  virtual Kernel kernel() const = 0;  // the operation these parameters belong to
  virtual std::unique_ptr<OpParams> clone() const = 0;
};

// OpParams by value: copying a case copies its parameters.
class ParamsBox {
 public:
  ParamsBox() = default;
  template <class P, class = std::enable_if_t<std::is_base_of_v<OpParams, P>>>
  ParamsBox(P p) : p_(std::make_unique<P>(std::move(p))) {}  // NOLINT: implicit by design
  ParamsBox(const ParamsBox& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  ParamsBox& operator=(const ParamsBox& o) {
    if (this != &o) p_ = o.p_ ? o.p_->clone() : nullptr;
    return *this;
  }
  ParamsBox(ParamsBox&&) noexcept = default;
  ParamsBox& operator=(ParamsBox&&) noexcept = default;
  const OpParams* get() const { return p_.get(); }
  OpParams* get() { return p_.get(); }

 private:
  std::unique_ptr<OpParams> p_;
};

// One point of a sweep. A case is made by its operation (operation(k).default_case(), core/
// operation.hpp), which sets `kernel` and `params` together.
struct Case {
  std::string sweep;  // name of the sweep it came from
  Kernel kernel{};    // its operation's default_case() sets it
  Variant variant = Variant::seed_port;
  DType in_dtype = DType::bf16;
  DType out_dtype = DType::bf16;
  StrideMode strides = StrideMode::contiguous;  // the operation's axis says which modes it takes
  std::int64_t num_tokens = 1;
  std::int64_t num_heads = 1;
  Inject inject = Inject::none;  // deliberate bad input
  ParamsBox params;              // the operation's own (src/ops/<op>/params.hpp)
};

// The parameters of case c as operation P's. Throws std::logic_error when c belongs to another
// operation (a bug: the registry hands each case to its own operation).
template <class P>
const P& params_of(const Case& c) {
  const auto* p = dynamic_cast<const P*>(c.params.get());
  if (!c.params.get())
    throw std::logic_error("a " + std::string(to_string(c.kernel)) +
                           " case without parameters (make cases with default_case())");
  if (c.params.get()->kernel() != c.kernel)
    throw std::logic_error("a " + std::string(to_string(c.kernel)) + " case holds " +
                           std::string(to_string(c.params.get()->kernel())) + " parameters");
  if (!p || c.kernel != P::kKernel)
    throw std::logic_error("a " + std::string(to_string(c.kernel)) + " case read as " +
                           std::string(to_string(P::kKernel)));
  return *p;
}
template <class P>
P& params_of(Case& c) {
  return const_cast<P&>(params_of<P>(static_cast<const Case&>(c)));
}

// Short human-readable identity, e.g. "reshape_and_cache_flash T=128 H=8 D=128 bf16->bf16 ...",
// written by the case's operation.
std::string describe(const Case& c);

// Computes every size of the case (geometry and bytes, at most tokens written); throws
// SizeOverflow naming the operands when one does not fit. The sweep parser calls it per case.
void check_sizes(const Case& c);

}  // namespace kvbench
