#include "core/types.hpp"

#include <array>
#include <deque>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace kvbench {
namespace {

// One table per enum: the single source of the spelling used everywhere.
template <class E>
struct Names;

template <>
struct Names<DType> {
  static constexpr std::string_view kind = "dtype";
  static constexpr std::array<std::pair<DType, std::string_view>, 5> table{{
      {DType::f32, "f32"},
      {DType::f16, "f16"},
      {DType::bf16, "bf16"},
      {DType::fp8_e4m3, "fp8_e4m3"},
      {DType::fp8_e5m2, "fp8_e5m2"},
  }};
};
template <>
struct Names<Kernel> {
  static constexpr std::string_view kind = "kernel";
  static constexpr std::array<std::pair<Kernel, std::string_view>, 3> table{{
      {Kernel::concat_mha_k, "concat_and_cast_mha_k"},
      {Kernel::cache_write, "reshape_and_cache_flash"},
      {Kernel::mla_cache, "concat_and_cache_mla"},
  }};
};
template <>
struct Names<Variant> {
  static constexpr std::string_view kind = "variant";
  static constexpr std::array<std::pair<Variant, std::string_view>, 3> table{{
      {Variant::seed_port, "seed_port"},
      {Variant::optimized, "optimized"},
      {Variant::slot_order, "slot_order"},
  }};
};
template <>
struct Names<Layout> {
  static constexpr std::string_view kind = "layout";
  static constexpr std::array<std::pair<Layout, std::string_view>, 2> table{{
      {Layout::nhd, "nhd"},
      {Layout::hnd, "hnd"},
  }};
};
template <>
struct Names<ScaleMode> {
  static constexpr std::string_view kind = "scale";
  static constexpr std::array<std::pair<ScaleMode, std::string_view>, 4> table{{
      {ScaleMode::none, "none"},
      {ScaleMode::per_tensor, "per_tensor"},
      {ScaleMode::per_head, "per_head"},
      {ScaleMode::per_token_head, "per_token_head"},
  }};
};
template <>
struct Names<SlotPattern> {
  static constexpr std::string_view kind = "slots";
  static constexpr std::array<std::pair<SlotPattern, std::string_view>, 4> table{{
      {SlotPattern::random, "random"},
      {SlotPattern::contiguous, "contiguous"},
      {SlotPattern::padded, "padded"},
      {SlotPattern::skip, "skip"},
  }};
};
template <>
struct Names<StrideMode> {
  static constexpr std::string_view kind = "strides";
  static constexpr std::array<std::pair<StrideMode, std::string_view>, 3> table{{
      {StrideMode::contiguous, "contiguous"},
      {StrideMode::sglang, "sglang"},
      {StrideMode::padded, "padded"},
  }};
};
template <>
struct Names<Status> {
  static constexpr std::string_view kind = "status";
  static constexpr std::array<std::pair<Status, std::string_view>, 5> table{{
      {Status::passed, "passed"},
      {Status::incorrect, "incorrect"},
      {Status::rejected, "rejected"},
      {Status::not_supported, "not_supported"},
      {Status::failed, "failed"},
  }};
};
template <>
struct Names<Verdict> {
  static constexpr std::string_view kind = "verdict";
  static constexpr std::array<std::pair<Verdict, std::string_view>, 8> table{{
      {Verdict::same, "same"},
      {Verdict::faster, "faster"},
      {Verdict::slower, "slower"},
      {Verdict::unknown, "unknown"},
      {Verdict::missing, "missing"},
      {Verdict::added, "new"},  // `new` is a C++ keyword
      {Verdict::incorrect, "incorrect"},
      {Verdict::ambiguous, "ambiguous"},  // the samples cannot tell at the threshold
  }};
};
template <>
struct Names<TimingMode> {
  static constexpr std::string_view kind = "timing mode";
  static constexpr std::array<std::pair<TimingMode, std::string_view>, 3> table{{
      {TimingMode::cold, "cold"},
      {TimingMode::hot, "hot"},
      {TimingMode::graph, "graph"},
  }};
};
template <>
struct Names<L2Flush> {
  static constexpr std::string_view kind = "l2 flush";
  static constexpr std::array<std::pair<L2Flush, std::string_view>, 2> table{{
      {L2Flush::read, "read"},
      {L2Flush::memset, "memset"},
  }};
};
template <>
struct Names<Timer> {
  static constexpr std::string_view kind = "timer";
  static constexpr std::array<std::pair<Timer, std::string_view>, 2> table{{
      {Timer::events, "events"},
      {Timer::cupti, "cupti"},
  }};
};
template <>
struct Names<Context> {
  static constexpr std::string_view kind = "context";
  static constexpr std::array<std::pair<Context, std::string_view>, 4> table{{
      {Context::back_to_back, "back_to_back"},
      {Context::cold, "cold"},
      {Context::after_producer, "after_producer"},
      {Context::layer, "layer"},
  }};
};

template <>
struct Names<Inject> {
  static constexpr std::string_view kind = "inject";
  static constexpr std::array<std::pair<Inject, std::string_view>, 10> table{{
      {Inject::none, "none"},
      {Inject::slot_out_of_range, "slot_out_of_range"},
      {Inject::swa_out_of_range, "swa_out_of_range"},
      {Inject::duplicate_slot, "duplicate_slot"},
      {Inject::zero_scale, "zero_scale"},
      {Inject::negative_scale, "negative_scale"},
      {Inject::nan_scale, "nan_scale"},
      {Inject::inf_scale, "inf_scale"},
      {Inject::short_stride, "short_stride"},
      {Inject::misaligned_cache, "misaligned_cache"},
  }};
};

// The names of the variants from outside kvbench, by value - kFirstExternalVariant (a deque:
// to_string's views stay valid as names are added).
std::deque<std::string>& external_variants() {
  static std::deque<std::string> names;
  return names;
}

template <class E>
std::string_view name_of(E v) {
  if constexpr (std::is_same_v<E, Variant>) {
    if (is_external(v)) {
      const std::size_t i = static_cast<std::size_t>(v) - kFirstExternalVariant;
      return i < external_variants().size() ? std::string_view(external_variants()[i]) : "?";
    }
  }
  for (const auto& [value, name] : Names<E>::table)
    if (value == v) return name;
  return "?";
}

}  // namespace

std::string_view to_string(DType v) { return name_of(v); }
std::string_view to_string(Kernel v) { return name_of(v); }
std::string_view to_string(Variant v) { return name_of(v); }
std::string_view to_string(Layout v) { return name_of(v); }
std::string_view to_string(ScaleMode v) { return name_of(v); }
std::string_view to_string(SlotPattern v) { return name_of(v); }
std::string_view to_string(StrideMode v) { return name_of(v); }
std::string_view to_string(Status v) { return name_of(v); }
std::string_view to_string(Verdict v) { return name_of(v); }
std::string_view to_string(Inject v) { return name_of(v); }
std::string_view to_string(TimingMode v) { return name_of(v); }
std::string_view to_string(L2Flush v) { return name_of(v); }
std::string_view to_string(Timer v) { return name_of(v); }
std::string_view to_string(Context v) { return name_of(v); }

template <class E>
const std::vector<E>& all_values() {
  static std::vector<E> values;
  std::size_t count = Names<E>::table.size();
  if constexpr (std::is_same_v<E, Variant>) count += external_variants().size();
  if (values.size() != count) {  // first call, or a variant named since
    values.clear();
    for (const auto& entry : Names<E>::table) values.push_back(entry.first);
    if constexpr (std::is_same_v<E, Variant>)
      for (std::size_t i = 0; i < external_variants().size(); ++i)
        values.push_back(static_cast<Variant>(kFirstExternalVariant + i));
  }
  return values;
}

template <class E>
std::string joined_names() {
  std::string out;
  for (E v : all_values<E>()) {
    if (!out.empty()) out += ", ";
    out += name_of(v);
  }
  return out;
}

template <class E>
E from_string(std::string_view text) {
  for (E v : all_values<E>())
    if (name_of(v) == text) return v;
  throw std::invalid_argument("unknown " + std::string(Names<E>::kind) + " '" + std::string(text) +
                              "' (expected one of " + joined_names<E>() + ")");
}

#define KVBENCH_INSTANTIATE(E)                    \
  template E from_string<E>(std::string_view);    \
  template const std::vector<E>& all_values<E>(); \
  template std::string joined_names<E>();
KVBENCH_INSTANTIATE(DType)
KVBENCH_INSTANTIATE(Kernel)
KVBENCH_INSTANTIATE(Variant)
KVBENCH_INSTANTIATE(Layout)
KVBENCH_INSTANTIATE(ScaleMode)
KVBENCH_INSTANTIATE(SlotPattern)
KVBENCH_INSTANTIATE(StrideMode)
KVBENCH_INSTANTIATE(Status)
KVBENCH_INSTANTIATE(Verdict)
KVBENCH_INSTANTIATE(Inject)
KVBENCH_INSTANTIATE(TimingMode)
KVBENCH_INSTANTIATE(L2Flush)
KVBENCH_INSTANTIATE(Timer)
KVBENCH_INSTANTIATE(Context)
#undef KVBENCH_INSTANTIATE

std::size_t size_of(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
      return 1;
  }
  return 0;
}

Variant name_external_variant(const std::string& name) {
  for (Variant v : all_values<Variant>())
    if (name_of(v) == name)
      throw std::invalid_argument("variant name '" + name + "' is taken (" +
                                  (is_external(v) ? "by an earlier plugin" : "by kvbench") + ")");
  if (external_variants().size() >= kMaxExternalVariants)
    throw std::invalid_argument("variant '" + name + "': more than " +
                                std::to_string(kMaxExternalVariants) +
                                " variants from plugins in one process");
  external_variants().push_back(name);
  return static_cast<Variant>(kFirstExternalVariant + external_variants().size() - 1);
}

bool is_external(Variant v) { return static_cast<std::uint16_t>(v) >= kFirstExternalVariant; }

bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }

}  // namespace kvbench
