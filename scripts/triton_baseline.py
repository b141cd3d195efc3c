#!/usr/bin/env python3
"""The seed's Triton kernels (scripts/seed_triton.py) through kvbench's harness, as variant
`triton` of concat_and_cast_mha_k and reshape_and_cache_flash (the kvbench Python package,
docs/python.md). kvbench makes the inputs, checks every output bit against its reference,
rotates buffer sets, times, and writes the rows and the sidecar, as for its own kernels.

  triton_baseline.py CONFIG -o OUT.csv [kvbench run flags]
  triton_baseline.py list CONFIG [kvbench list flags]

The first runs `kvbench run CONFIG -o OUT.csv --variants triton` with the flags given (--rotate,
--case, --context, --timer, --seed, --mode, --baseline, ...: docs/cli.md); the second lists the
cases that would run (no GPU, no torch). A --variants of your own replaces `triton` (e.g.
--variants triton,optimized: both in one CSV). Cases the seed cannot run faithfully are
`not_supported` with the reason (supports() below).

Exit status: kvbench's (docs/cli.md); 3 also when torch or triton is missing (one line names the
interpreter and the fixes: scripts/kvbench_python.py) or libkvbench.so cannot be loaded.

The workers kvbench starts import this file again (not as __main__) and launch the kernels on
the case's stream; torch and triton are imported only there, at the first launch.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "python"))  # the repository's package
import kvbench  # noqa: E402
import kvbench_python  # noqa: E402

VARIANT = "triton"
WHY = "the seed's Triton kernel (scripts/seed_triton.py), the baseline kvbench's CUDA is measured against"
INT32_MAX = 2**31 - 1
INPUT_DTYPES = ("f32", "f16", "bf16")


def is_pow2(n):
    return n > 0 and (n & (n - 1)) == 0


def dtype_reason(a):
    if a.in_dtype not in INPUT_DTYPES:
        return f"input dtype {a.in_dtype} (inputs: {', '.join(INPUT_DTYPES)})"
    return None


def concat_supports(a):
    """Why the seed's concat_and_cast_mha_k cannot run this case faithfully, or None."""
    why = dtype_reason(a)
    if why:
        return why
    for name, v in (("num_heads", a.num_heads), ("nope_dim", a.nope_dim),
                    ("rope_dim", a.rope_dim)):
        if not is_pow2(v):
            return f"seed: {name}={v} is not a power of two (unmasked tl.arange)"
    T = a.num_tokens
    if max(T * a.k_s0, T * a.nope_s0, T * a.rope_s0) > INT32_MAX:
        return "seed: 32-bit offsets overflow at this token count"
    return None


def cache_supports(a):
    """Why the seed's reshape_and_cache_flash cannot run this case faithfully, or None. kvbench's
    cache writes have contiguous or padded strides; padded ones are the head strides above
    head_size. The seed's bug with SWA and padding slots (it reads swa_slot_mapping[-1]) is not
    refused: the slot pattern is not in the arguments, and kvbench's guard entry there makes the
    seed write a slot no token maps to, which validation reports as `incorrect`."""
    why = dtype_reason(a)
    if why:
        return why
    # The seed addresses slot o, head h at o*H*D + h*D: NHD. With one head or one slot per
    # block an HND cache is the same bytes, and the seed writes it right.
    nhd = ((a.block_size == 1 or a.slot_stride == a.num_heads * a.head_size) and
           (a.num_heads == 1 or a.head_stride == a.head_size))
    if not nhd:
        return f"seed: layout {a.layout} (the seed writes NHD only)"
    if a.key_s1 != a.head_size or a.value_s1 != a.head_size:
        return "seed: strides padded (the seed assumes head stride = head_size)"
    if a.scale_mode == "per_head":
        return "seed: per_head scale (the seed loads one scale per tensor)"
    if a.skip_slot >= 0:
        return "seed: skip slot (the seed has no reserved skip index)"
    num_blocks = a.num_slots // a.block_size
    if max(a.num_tokens * a.key_s0, num_blocks * a.block_stride) > INT32_MAX:
        return "seed: 32-bit offsets overflow at this size"
    return None


@kvbench.variant(VARIANT, op="concat_and_cast_mha_k", why=WHY, supports=concat_supports)
def launch_concat(a, stream):
    import torch
    import seed_triton
    view = kvbench.torch_view
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        seed_triton.concat_and_cast_mha_k(view(a.k), view(a.k_nope), view(a.k_rope))


@kvbench.variant(VARIANT, op="reshape_and_cache_flash", why=WHY, supports=cache_supports)
def launch_cache(a, stream):
    import torch
    import seed_triton
    view = kvbench.torch_view
    swa = view(a.swa_slot_mapping) if a.swa_slot_mapping is not None else None
    ks = view(a.k_scale) if a.k_scale is not None else None
    vs = view(a.v_scale) if a.v_scale is not None else None
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        seed_triton.reshape_and_cache_flash(view(a.key), view(a.value), view(a.key_cache),
                                            view(a.value_cache), view(a.slot_mapping), swa, ks, vs)


def kvbench_args(argv):
    """kvbench's command line for this script's: `list CONFIG ...` or `CONFIG ...` (run), with
    --variants triton unless the flags name variants."""
    command = ["list", *argv[1:]] if argv[:1] == ["list"] else ["run", *argv]
    if not any(a == "--variants" or a.startswith("--variants=") for a in command):
        command += ["--variants", VARIANT]
    return command


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n", 2)[1], file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 3
    command = kvbench_args(argv)
    if command[0] == "run":
        # torch and triton from this interpreter, else $KVBENCH_PYTHON's; else one line, exit 3.
        kvbench_python.require(__file__, "torch", "triton")
    return kvbench.main(command)


if __name__ == "__main__":
    sys.exit(main())
