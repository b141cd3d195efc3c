"""The seed's two Triton kernels (../shared/seed/seed_kernels.py, SGLang), for
scripts/triton_baseline.py. Same logic as the seed, limitations included, on purpose: this is
the baseline kvbench's CUDA kernels are measured against.

- concat_and_cast_mha_k: one program per token; unmasked tl.arange over heads, NOPE and ROPE,
  so H, NOPE and ROPE must be powers of two. Strides are compile-time constants. The cast is
  the store's implicit conversion to k's dtype.
- reshape_and_cache_flash: one program per (token, block of 4 heads); masked over heads and
  head_size (any sizes). Assumes key/value head stride = head_size and an NHD cache whose slot
  stride is H*D; one block stride for both caches; no skip slot; a per-tensor scale only. The
  SWA remap happens before the `< 0` test (the seed bug SPEC.md section 2 describes). Offsets
  are 32-bit products (the seed overflows past ~65-87K tokens).

Imports triton at module level (the JIT needs `tl` as a module global): import this module only
where torch and triton exist. Run as a program it only checks that they import here.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_python  # noqa: E402

kvbench_python.require(__file__, "torch", "triton")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def concat_and_cast_mha_k_kernel(
    k_ptr, k_nope_ptr, k_rope_ptr,
    head_cnt: tl.constexpr, k_stride0: tl.constexpr, k_stride1: tl.constexpr,
    nope_stride0: tl.constexpr, nope_stride1: tl.constexpr, rope_stride0: tl.constexpr,
    nope_dim: tl.constexpr, rope_dim: tl.constexpr,
):
    token = tl.program_id(0)
    heads = tl.arange(0, head_cnt)
    k_head_ptr = k_ptr + token * k_stride0 + heads[:, None] * k_stride1

    nope_offs = tl.arange(0, nope_dim)
    nope = tl.load(k_nope_ptr + token * nope_stride0 + heads[:, None] * nope_stride1 + nope_offs[None, :])
    tl.store(k_head_ptr + nope_offs[None, :], nope)

    # One rope row per token, broadcast over the heads by the store.
    rope_offs = tl.arange(0, rope_dim)
    rope = tl.load(k_rope_ptr + token * rope_stride0 + rope_offs[None, :])
    tl.store(k_head_ptr + nope_dim + rope_offs[None, :], rope)


def concat_and_cast_mha_k(k, k_nope, k_rope):
    """k [T, H, NOPE+ROPE], k_nope [T, H, NOPE], k_rope [T, 1, ROPE] (torch tensors, any strides
    with a unit innermost stride)."""
    assert k.dim() == 3 and k_nope.dim() == 3 and k_rope.dim() == 3
    assert k.shape[0] == k_nope.shape[0] == k_rope.shape[0]
    assert k.shape[1] == k_nope.shape[1] and k_rope.shape[1] == 1
    assert k.shape[-1] == k_nope.shape[-1] + k_rope.shape[-1]
    concat_and_cast_mha_k_kernel[(k.shape[0],)](
        k, k_nope, k_rope, k.shape[1], k.stride(0), k.stride(1),
        k_nope.stride(0), k_nope.stride(1), k_rope.stride(0), k_nope.shape[-1], k_rope.shape[-1],
    )


@triton.jit
def reshape_and_cache_flash_kernel(
    key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_mapping_ptr, swa_slot_mapping_ptr,
    k_scale_ptr, v_scale_ptr, block_stride, key_stride, value_stride, num_heads, head_size, block_size,
    HEAD_BLOCK: tl.constexpr, BLOCK_D: tl.constexpr, HAS_SWA: tl.constexpr, USE_SCALE: tl.constexpr,
):
    token = tl.program_id(0)
    head_block = tl.program_id(1)
    slot = tl.load(slot_mapping_ptr + token)
    if HAS_SWA:
        slot = tl.load(swa_slot_mapping_ptr + slot)  # before the `< 0` test, as in the seed
    if slot < 0:
        return
    block = slot // block_size
    offset_in_block = slot % block_size

    heads = head_block * HEAD_BLOCK + tl.arange(0, HEAD_BLOCK)
    dims = tl.arange(0, BLOCK_D)
    offs = heads[:, None] * head_size + dims[None, :]  # head stride = head_size
    mask = (heads < num_heads)[:, None] & (dims[None, :] < head_size)
    k = tl.load(key_ptr + token * key_stride + offs, mask=mask)
    v = tl.load(value_ptr + token * value_stride + offs, mask=mask)
    if USE_SCALE:
        k = k / tl.load(k_scale_ptr)
        v = v / tl.load(v_scale_ptr)
    target = block * block_stride + offset_in_block * num_heads * head_size + offs  # NHD
    tl.store(key_cache_ptr + target, k, mask=mask)
    tl.store(value_cache_ptr + target, v, mask=mask)


def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                            swa_slot_mapping=None, k_scale=None, v_scale=None):
    """key/value [T, H, D]; key_cache/value_cache [NB, BS, H, D] views sharing one block stride;
    slot_mapping [T] int64; optional swa_slot_mapping [S] int64; optional fp32 scales [1]."""
    num_tokens, num_heads, head_size = key.shape
    head_block = 4
    grid = (num_tokens, triton.cdiv(num_heads, head_block))
    reshape_and_cache_flash_kernel[grid](
        key, value, key_cache, value_cache, slot_mapping, swa_slot_mapping,
        k_scale if k_scale is not None else key, v_scale if v_scale is not None else key,
        key_cache.stride(0), key.stride(0), value.stride(0), num_heads, head_size, key_cache.shape[1],
        HEAD_BLOCK=head_block, BLOCK_D=triton.next_power_of_2(head_size),
        HAS_SWA=swa_slot_mapping is not None, USE_SCALE=k_scale is not None,
    )


if __name__ == "__main__":
    print(f"seed_triton.py: torch and triton import in {sys.executable}; this module holds the "
          f"kernels scripts/triton_baseline.py runs", file=sys.stderr)
