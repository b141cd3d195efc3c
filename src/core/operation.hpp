// What the op-agnostic code (sweep expansion, the CSV, memory admission, `kvbench bounds`) asks
// of an operation, and the registry that answers by operation. Each operation implements
// Operation in its own folder (src/ops/<op>/operation.cpp); src/ops/registry.cpp lists them, one
// line each. The rest of kvbench looks an operation up here, or switches over Kernel
// exhaustively (-Werror=switch): a new operation never edits a two-way branch.
//
// What core must not link (launch plans: kernel headers; run stages: CUDA) is looked up the same
// way one layer up: each operation's Backend (src/ops/launch.hpp) and OpSets (src/ops/stages.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/columns.hpp"
#include "core/footprint.hpp"

namespace kvbench {

// One YAML axis of an operation: its name and where a value goes. The sweep parser reads the
// YAML scalar by the setter's kind (a positive integer, true/false, or one of an enum's names)
// and reports a bad value with file, line, column and key.
struct Axis {
  enum class Kind { integer, boolean, enumeration };
  std::string name;
  Kind kind = Kind::integer;
  std::function<void(Case&, std::int64_t)> set_int;  // integer: in [1, 2^31-1]
  std::function<void(Case&, bool)> set_bool;         // boolean
  // enumeration: parses a name (std::invalid_argument naming the accepted set when unknown).
  std::function<void(Case&, const std::string&)> set_enum;
  std::string enum_names;  // enumeration: "a, b, c", for a value that is not a scalar
  // A value the enum has but this operation refuses (e.g. a stride mode of the other
  // operation): why, or "" when accepted. Checked after every value of the axis has parsed.
  std::function<std::string(const std::string&)> refuse;
};

// Axis builders over the case header (Case::*) or the operation's parameters (P::*).
template <class T>
Axis header_axis(const std::string& name, T Case::*field);
template <class P, class T>
Axis param_axis(const std::string& name, T P::*field);

// A variant of an operation: its name, one line on why it exists, and whether it runs a case
// (an empty reason when it does; otherwise why not, which becomes the not_supported row's
// reason). An operation lists its variants in one place (its operation.cpp).
struct VariantInfo {
  Variant variant;
  std::string why;
  std::function<std::string(const Case&)> supports;
};

// The CSV's case columns that belong to operations (result_csv.hpp, docs/measurement.md): one
// schema for every operation. An operation fills the columns it has; the others keep these
// fillers, so every row has every column.
struct OpColumns {
  std::int64_t head_dim = 128;  // the operation's head width (concat: NOPE; cache write: D)
  std::int64_t rope_dim = 0;
  std::int64_t block_size = 16;
  // Names the operation reads and writes itself: the shared Layout's and ScaleMode's, or the
  // operation's own (set_columns throws std::invalid_argument naming an unknown one).
  std::string layout = "nhd";
  std::string scale = "none";
  bool swa = false;
  bool kv_interleaved = false;
  SlotPattern slots = SlotPattern::random;
};

// What `kvbench bounds`' scatter floor (runtime/bounds_runner.hpp) copies for a case whose bound
// is a scatter of its rows to their places: per token, `num_heads` rows of K and of V, each
// head_read bytes in its input, written as head_write bytes at the token's destination, head h
// head_stride bytes after head 0, V v_offset bytes after K. Sizes in bytes.
struct ScatterShape {
  std::int64_t input_bytes = 0;  // one input (K or V), as a run of the case allocates it
  std::int64_t dest_bytes = 0;   // the destination (both caches)
  std::int64_t head_read = 0, head_write = 0, head_stride = 0, v_offset = 0;
  std::vector<std::int64_t> dest_strides;  // the strides a destination offset is made of
  // Per token, the byte offset of its K row (head 0) in the destination, or -1 when it writes
  // nothing: the places the case's buffer set of seed `set_seed` writes (as its stages draw them).
  std::function<std::vector<std::int64_t>(std::uint64_t set_seed)> rows;
};

class Operation {
 public:
  virtual ~Operation() = default;
  virtual Kernel kernel() const = 0;
  // A case with every axis at its default (the sweep's starting point).
  virtual Case default_case() const = 0;
  // YAML axes in expansion order, outermost first (docs/sweeps.md lists them).
  virtual const std::vector<Axis>& axes() const = 0;
  virtual const std::vector<VariantInfo>& variants() const = 0;
  virtual std::string describe(const Case& c) const = 0;
  // The case as the gate's reports name it beside its kernel, variant and sweep, from the text of
  // its result row's case-key columns (a row of another build stays text):
  // "T=128 H=8 D=128 BS=16 nhd bf16->bf16 strides=contiguous scale=none slots=random".
  virtual std::string describe_key(const std::function<const std::string&(Col)>& at) const = 0;
  // Geometry and bytes computed with overflow checks; SizeOverflow when a size does not fit.
  virtual void check_sizes(const Case& c) const = 0;
  // Output elements one launch writes when `written_tokens` tokens write (SPEC.md §4): `kvbench
  // bounds` splits a row's bytes into written and read by it. SizeOverflow when it does not fit.
  virtual std::int64_t output_elems(const Case& c, std::int64_t written_tokens) const = 0;
  // What a run of the case allocates (core/footprint.hpp).
  virtual Footprint footprint(const Case& c) const = 0;
  // The CSV's operation columns of c, and back (a case rebuilt from a result row).
  virtual OpColumns columns(const Case& c) const = 0;
  virtual void set_columns(Case& c, const OpColumns& cols) const = 0;
  // `kvbench bounds`: the scatter its bound is (the cache write: its rows to its slots), or
  // nullopt when its bound is the contiguous move of its bytes (concat).
  virtual std::optional<ScatterShape> scatter_shape(const Case& c) const = 0;
};

// The registered operations, in the order of the Kernel enum (src/ops/registry.cpp).
const std::vector<const Operation*>& operations();
// The operation of k; every Kernel value has one (tests/test_registry.cpp).
const Operation& operation(Kernel k);

// A variant from outside kvbench (a plugin's) joins operation k's list; its name is already
// named (name_external_variant, core/types.hpp). Add them before any case is made.
// `origin` says where it comes from ("plugin PATH").
void add_external_variant(Kernel k, VariantInfo v, std::string origin);
// Where variant v comes from: "" for kvbench's own.
std::string variant_origin(Variant v);
// Operation k's variants: its own (Operation::variants), then those added from outside.
std::vector<VariantInfo> variants_of(Kernel k);

// --variants: each case once per variant of `names` that its operation has, instead of its own
// variant, in the order of `cases` then `names`; a case repeated that way is kept once. Cases
// whose operation has none of them are left out. Throws std::invalid_argument for a name that
// is no variant, or one that no case's operation has.
std::vector<Case> with_variants(const std::vector<Case>& cases,
                                const std::vector<std::string>& names);

// "" when the case's operation lists its variant and the variant supports the case; otherwise
// why not: "variant slot_order is a reshape_and_cache_flash variant (it orders slots)".
std::string variant_refusal(const Case& c);

// ---- templates ----

namespace detail {
template <class T>
void set_axis(Axis& a, std::function<T&(Case&)> field) {
  if constexpr (std::is_same_v<T, bool>) {
    a.kind = Axis::Kind::boolean;
    a.set_bool = [field](Case& c, bool v) { field(c) = v; };
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    a.kind = Axis::Kind::integer;
    a.set_int = [field](Case& c, std::int64_t v) { field(c) = v; };
  } else {
    a.kind = Axis::Kind::enumeration;
    a.set_enum = [field](Case& c, const std::string& s) { field(c) = from_string<T>(s); };
    a.enum_names = joined_names<T>();
  }
}
}  // namespace detail

template <class T>
Axis header_axis(const std::string& name, T Case::*field) {
  Axis a;
  a.name = name;
  detail::set_axis<T>(a, [field](Case& c) -> T& { return c.*field; });
  return a;
}

template <class P, class T>
Axis param_axis(const std::string& name, T P::*field) {
  Axis a;
  a.name = name;
  detail::set_axis<T>(a, [field](Case& c) -> T& { return params_of<P>(c).*field; });
  return a;
}

}  // namespace kvbench
