// Every categorical axis of kvbench, each an enum class with one to_string / from_string pair
// shared by YAML, CSV and CLI. from_string throws std::invalid_argument naming the value and the
// accepted set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvbench {

enum class DType { f32, f16, bf16, fp8_e4m3, fp8_e5m2 };
// The operations, by the kernel they write; each is registered in src/ops/registry.cpp, in this
// order.
enum class Kernel { concat_mha_k, cache_write, mla_cache };
// The variants' names. Which operation has which, and why each exists, each operation lists in
// one place (its variants(), src/ops/<op>/operation.cpp); a variant's launch decisions are its
// plan's (kernels/<op>/plan.cpp). These are kvbench's own; a variant from outside (a plugin's,
// docs/plugins.md) takes a value from kFirstExternalVariant up when it is named
// (name_external_variant), and from then on prints and parses like these.
enum class Variant : std::uint16_t { seed_port, optimized, slot_order };
inline constexpr std::uint16_t kFirstExternalVariant = 256;
// How many variants from outside one process may name (well inside the 16-bit values).
inline constexpr std::size_t kMaxExternalVariants = 4096;
enum class Layout { nhd, hnd };
// none, per_tensor, per_head: a caller's fp32 scale divides the inputs (SPEC.md §2).
// per_token_head: no caller scale; each (token, head) row of K and V is quantized to e4m3 by a
// scale from its own amax, stored after the row (SPEC.md §7).
enum class ScaleMode { none, per_tensor, per_head, per_token_head };
// random: distinct random slots; contiguous: one run of consecutive slots; padded: random with
// every 8th token -1 (CUDA-graph padding); skip: random with every 8th token on skip_slot.
enum class SlotPattern { random, contiguous, padded, skip };
// contiguous: dense strides. sglang (concat only): k_nope is a view of [T, H, NOPE + 128]
// and k_rope a view of the 512 + ROPE wide latent, as SGLang's MLA prefill passes them.
// padded: every non-innermost stride grows by 16 elements (inputs and outputs).
enum class StrideMode { contiguous, sglang, padded };
// Deliberate bad input, to show rejection end to end (docs/validation.md): the generated inputs
// are corrupted in one way before validation, so the case must come back `rejected`.
enum class Inject {
  none,
  slot_out_of_range,  // one token's physical slot = NB*BS
  swa_out_of_range,   // one token's logical slot = the SWA table size (needs swa: true)
  duplicate_slot,     // two written tokens on one physical slot
  zero_scale,         // k_scale[0] = 0 (needs a scale)
  negative_scale,     // k_scale[0] < 0
  nan_scale,          // k_scale[0] = NaN
  inf_scale,          // k_scale[0] = +inf
  short_stride,       // an input head stride one element below the head size
  misaligned_cache,   // cache entries off their 16-byte alignment (fp8_ds_mla)
};
// The outcome of one case, as CUTLASS's profiler reports it.
enum class Status { passed, incorrect, rejected, not_supported, failed };
// The regression gate's judgement of one case, current run against baseline (core/gate.hpp).
enum class Verdict { same, faster, slower, unknown, missing, added, incorrect, ambiguous };
// How a case is timed (docs/measurement.md). cold: L2 flushed before each sample, one launch;
// hot: back-to-back launches; graph: launches captured in a CUDA graph, timed per replay.
enum class TimingMode { cold, hot, graph };
// How cold mode empties L2: read a 2x-L2 buffer (leaves clean lines) or memset it (leaves dirty
// lines whose write-backs land in the timed kernel; kept for comparison).
enum class L2Flush { read, memset };
// What reads the time of a graph replay (docs/measurement.md, "The CUPTI timer"). events: two
// CUDA events around the replay, divided by its launches; cupti: each kernel's own start and end
// from the CUPTI Activity API (graph mode only).
enum class Timer { events, cupti };
// What runs right before each timed launch (docs/measurement.md, "Contexts"). back_to_back:
// nothing (the launches follow each other); cold: an L2 flush; after_producer: a kernel
// rewriting the case's inputs (settings.hot_inputs); layer: a kernel streaming
// settings.layer_mib of weights, then the producer. The predecessor is not counted.
enum class Context { back_to_back, cold, after_producer, layer };

std::string_view to_string(DType v);
std::string_view to_string(Kernel v);
std::string_view to_string(Variant v);
std::string_view to_string(Layout v);
std::string_view to_string(ScaleMode v);
std::string_view to_string(SlotPattern v);
std::string_view to_string(StrideMode v);
std::string_view to_string(Status v);
std::string_view to_string(Verdict v);
std::string_view to_string(Inject v);
std::string_view to_string(TimingMode v);
std::string_view to_string(L2Flush v);
std::string_view to_string(Timer v);
std::string_view to_string(Context v);

// from_string<E>("bf16") -> E; throws std::invalid_argument("unknown dtype 'x' (expected one of
// f32, f16, ...)").
template <class E>
E from_string(std::string_view text);

// Every value of an enum, in declaration order (for help texts and error messages).
template <class E>
const std::vector<E>& all_values();

// "a, b, c" for error messages.
template <class E>
std::string joined_names();

// Names a variant from outside kvbench: its value (the next from kFirstExternalVariant on),
// known to to_string, from_string and all_values from then on. A name already taken (one of
// kvbench's, or named before) or past kMaxExternalVariants throws std::invalid_argument. Name
// variants before any case is made: the names are process-wide and not guarded for threads.
Variant name_external_variant(const std::string& name);
bool is_external(Variant v);

std::size_t size_of(DType t);
bool is_fp8(DType t);

}  // namespace kvbench
