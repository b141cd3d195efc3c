# concat_and_cast_mha_k as two torch copies, run through kvbench as variant `torch_concat`:
#   PYTHONPATH=python python3 examples/python/torch_concat.py run configs/smoke.yaml \
#       --variants torch_concat,optimized -o out.csv
import sys

import kvbench


def supports(args):  # None, or why the case is not_supported
    if args.out_dtype.startswith("fp8"):
        return "torch's fp8 casts do not saturate (SPEC.md §3 asks for satfinite)"
    return None


@kvbench.variant("torch_concat", op="concat_and_cast_mha_k", why="two torch copies",
                 supports=supports)
def launch(args, stream):
    import torch  # in the worker, at the first launch

    k, nope, rope = (kvbench.torch_view(b) for b in (args.k, args.k_nope, args.k_rope))
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):  # enqueue only: no sync, no alloc
        k[..., : args.nope_dim].copy_(nope)  # each copy casts with round-to-nearest-even
        k[..., args.nope_dim :].copy_(rope.expand(-1, args.num_heads, -1))  # rope to every head


if __name__ == "__main__":
    sys.exit(kvbench.main(sys.argv[1:]))
