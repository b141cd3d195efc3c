/* kvbench plugin ABI: how a kernel built outside kvbench joins its harness.
 *
 * A plugin is a shared object (ELF .so) that exports two symbols:
 *   - `kvbench_plugin_abi_version`: a `uint32_t` holding the KVBENCH_ABI_VERSION it was built
 *     against. kvbench reads it before it calls anything, and refuses a version it does not speak.
 *   - `kvbench_plugin_init`: called once with the host's ABI version and a registrar; it registers
 *     the plugin's variants through `host->add_variant` and returns 0 (non-zero: the plugin
 *     refuses to load, and `host->fail` may have said why).
 * KVBENCH_PLUGIN_EXPORT_ABI below defines the first symbol.
 *
 * Each variant implements one operation. kvbench gives it exactly what its own launchers
 * receive: device pointers into buffers it allocated, canary-guarded and filled with the case's
 * inputs, sizes and strides in elements, dtypes, scales, the slot mapping and the SWA table, and
 * a CUDA stream. The variant enqueues its work on that stream and nothing else: kvbench captures
 * the launches into CUDA graphs, rotates buffer sets, times and validates every output bit
 * against its reference. It must not synchronize the device or allocate during `launch`.
 *
 * Plain C: any compiler, Rust, or an ahead-of-time compiled Triton kernel can implement it.
 * Version 1 covers the operations concat_and_cast_mha_k and reshape_and_cache_flash (docs/spec.md
 * gives their semantics, docs/plugins.md this interface). */
#ifndef KVBENCH_KVBENCH_H
#define KVBENCH_KVBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVBENCH_ABI_VERSION 1u

/* Element types. Fields that hold one are int32_t, so the struct layout does not depend on
 * how a compiler sizes an enum. */
enum kvb_dtype {
  KVB_DTYPE_F32 = 0,
  KVB_DTYPE_F16 = 1,
  KVB_DTYPE_BF16 = 2,
  KVB_DTYPE_FP8_E4M3 = 3, /* OCP e4m3fn: saturating, no inf */
  KVB_DTYPE_FP8_E5M2 = 4
};

/* Operations; a variant implements exactly one. */
enum kvb_op {
  KVB_OP_CONCAT_MLA_K = 1, /* concat_and_cast_mha_k */
  KVB_OP_CACHE_WRITE = 2   /* reshape_and_cache_flash */
};

/* How a cache write scales its inputs before the fp8 cast: out = in / scale. */
enum kvb_scale_mode {
  KVB_SCALE_NONE = 0,       /* k_scale and v_scale are NULL */
  KVB_SCALE_PER_TENSOR = 1, /* k_scale[1], v_scale[1] */
  KVB_SCALE_PER_HEAD = 2    /* k_scale[H], v_scale[H] */
};

/* concat_and_cast_mha_k: k[t, h, :] = cast(concat(k_nope[t, h, :], k_rope[t, 0, :])).
 * All pointers are device memory; strides are in elements; the innermost dimension is dense. */
typedef struct kvb_concat_mla_k_args {
  const void* k_nope; /* [T, H, NOPE], strides (nope_s0, nope_s1, 1), in_dtype */
  const void* k_rope; /* [T, 1, ROPE], strides (rope_s0, -, 1), in_dtype */
  void* k;            /* [T, H, NOPE + ROPE], strides (k_s0, k_s1, 1), out_dtype */
  int64_t num_tokens, num_heads, nope_dim, rope_dim;
  int64_t nope_s0, nope_s1, rope_s0, k_s0, k_s1;
  int32_t in_dtype, out_dtype; /* enum kvb_dtype */
} kvb_concat_mla_k_args;

/* reshape_and_cache_flash: for each token t with slot = slot_mapping[t] >= 0 (after the SWA
 * remap slot = swa_slot_mapping[slot] when that table is given, and skipping skip_slot), write
 * key[t] and value[t] to that slot of key_cache and value_cache, cast to out_dtype (divided by
 * the scale first when scale_mode is not NONE). Tokens with a negative slot are padding.
 * The cache layout is carried by (block_stride, slot_stride, head_stride): NHD caches are
 * [NB, BS, H, D] with strides (.., H*D, D), HND caches [NB, H, BS, D] with (.., D, BS*D).
 * All pointers are device memory; strides are in elements; the innermost dimension is dense. */
typedef struct kvb_cache_write_args {
  const void* key;                 /* [T, H, D], strides (key_s0, key_s1, 1), in_dtype */
  const void* value;               /* [T, H, D], strides (value_s0, value_s1, 1), in_dtype */
  void* key_cache;                 /* [NB, (BS, H | H, BS), D], out_dtype */
  void* value_cache;               /* same geometry as key_cache */
  const int64_t* slot_mapping;     /* [T]; < 0: padding, not written */
  const int64_t* swa_slot_mapping; /* [S]: logical -> physical slot, or NULL (no SWA remap) */
  const float* k_scale;            /* [1] or [H] by scale_mode, or NULL */
  const float* v_scale;            /* same shape as k_scale */
  int64_t num_tokens, num_heads, head_size, block_size;
  int64_t key_s0, key_s1, value_s0, value_s1;
  int64_t block_stride, slot_stride, head_stride;
  int64_t num_slots;           /* NB * BS: physical slots of each cache */
  int64_t skip_slot;           /* physical slot never written, or -1 */
  int32_t scale_mode;          /* enum kvb_scale_mode */
  int32_t in_dtype, out_dtype; /* enum kvb_dtype */
} kvb_cache_write_args;

/* What a variant receives: `op` says which member is set; the others are NULL. */
typedef struct kvb_args {
  uint32_t struct_size; /* sizeof(kvb_args) in the host: members past it are absent */
  int32_t op;           /* enum kvb_op */
  const kvb_concat_mla_k_args* concat_mla_k;
  const kvb_cache_write_args* cache_write;
} kvb_args;

/* One variant of one operation. */
typedef struct kvb_variant {
  /* [a-z0-9_], 1 to 32 characters, none of kvbench's own and no other plugin's; a plugin may give
   * one name to a variant of each operation. It is the CSV's `variant` column and the name
   * configs select it by. */
  const char* name;
  const char* why; /* one line: why this variant exists */
  int32_t op;      /* enum kvb_op */
  /* NULL when the case is supported, else a reason (a string that lives as long as the plugin):
   * the case becomes `not_supported` with that reason. Called on the host, before any launch,
   * possibly in a process without a GPU. NULL pointer: every case is supported. */
  const char* (*supports)(const kvb_args* args);
  /* Enqueues the work on `stream` (a cudaStream_t). 0: enqueued. Non-zero: the case is `failed`,
   * with the text written to message (NUL-terminated, at most message_size bytes). */
  int32_t (*launch)(const kvb_args* args, void* stream, char* message, size_t message_size);
} kvb_variant;

/* What kvbench hands kvbench_plugin_init. */
typedef struct kvb_host {
  uint32_t abi_version; /* KVBENCH_ABI_VERSION of the host */
  void* context;        /* pass back unchanged */
  /* Registers a copy of *variant (its strings must outlive the plugin's use). 0: accepted;
   * non-zero: refused (kvbench reports why and stops before any GPU work). */
  int32_t (*add_variant)(void* context, const kvb_variant* variant);
  /* Says why init fails; the text names the plugin in kvbench's one-line error. */
  void (*fail)(void* context, const char* message);
} kvb_host;

/* The entry point every plugin exports. */
typedef int32_t (*kvb_plugin_init_fn)(uint32_t abi_version, const kvb_host* host);

#if defined(_WIN32)
#define KVBENCH_PLUGIN_API __declspec(dllexport)
#else
#define KVBENCH_PLUGIN_API __attribute__((visibility("default")))
#endif

/* Defines `kvbench_plugin_abi_version` for the version this header gives. */
#ifdef __cplusplus
#define KVBENCH_PLUGIN_EXPORT_ABI \
  extern "C" KVBENCH_PLUGIN_API const uint32_t kvbench_plugin_abi_version = KVBENCH_ABI_VERSION
#else
#define KVBENCH_PLUGIN_EXPORT_ABI \
  KVBENCH_PLUGIN_API const uint32_t kvbench_plugin_abi_version = KVBENCH_ABI_VERSION
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVBENCH_KVBENCH_H */
