#!/usr/bin/env python3
"""Runs the seed's Triton kernels (scripts/seed_triton.py) over a kvbench config's cases and
writes rows in kvbench's result CSV schema with variant `triton`, so they plot and compare
beside the CUDA rows.

  triton_baseline.py CONFIG -o OUT.csv [--kvbench BIN] [--warmup N] [--samples N]
                     [--graph-launches N] [--seed N] [--rotate N|auto] [--case I ...]

The cases come from `kvbench list CONFIG --format csv` (the YAML is not parsed here), the header
from `kvbench schema`; the binary is --kvbench, else $KVBENCH, else build/kvbench
(scripts/kvbench_schema.py). Per case, like `kvbench run`: inputs are random and never zero; the
output buffer is canary-filled, one launch is checked bit for bit (the whole buffer) against a
torch reference that implements SPEC.md; a case that passes is timed as a CUDA graph of
--graph-launches back-to-back launches, replays timed with CUDA events, median per launch (L2 not
flushed). Cases the seed cannot run (see seed_triton.py) get status not_supported and the reason.
Cases that differ only in variant are run once.

--rotate N|auto times the seed's kernels as `kvbench run --rotate` times kvbench's
(docs/measurement.md, "Rotated buffers"): N independent sets of a case's buffers (inputs, caches,
slot mappings with their own random slots, scales), made in one batch and each checked bit for
bit (the whole buffer); the graph holds
--graph-launches rounded up to a multiple of N launches, launch i on set i mod N. `auto` is the
smallest N whose sets together exceed 3x L2, capped by 80% of the free device memory and by
4096 sets, as kvbench's choose_buffer_sets(). Rows carry buffer_sets (schema 2).

Exit status: 0 every case passed or was not_supported; 1 some case was incorrect or failed;
2 bad command line or `kvbench list` failed; 3 cannot write the CSV, or torch or triton is
missing (one line names the interpreter and the fixes: scripts/kvbench_python.py); 4 torch sees
no CUDA device.

Only run_case() and below need torch and triton (imported lazily), so the case parsing, support
rules, geometry and CSV writing are testable without them (tests/test_scripts.py).
"""
import argparse
import csv
import math
import statistics
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_python  # noqa: E402
import kvbench_schema  # noqa: E402

VARIANT = "triton"
PAD = 16           # extra elements per stride in `strides: padded` (src/ops/*/operation.cpp)
SGLANG_V = 128     # V head size after NOPE in kv_b_proj's output (`strides: sglang`)
SGLANG_LORA = 512  # kv_lora_rank: the latent is 512 + ROPE wide
INT32_MAX = 2**31 - 1
SCHEMA_VERSION = "3"       # kvbench's result CSV schema; 2 adds buffer_sets, 3 context
L2_MULTIPLE = 3.0          # rotate auto: the sets together exceed this many times L2
DEVICE_FRACTION = 0.8      # of the free device memory the sets may take
MAX_BUFFER_SETS = 4096     # kvbench's kMaxBufferSets
DTYPE_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
INT_COLUMNS = ("num_tokens", "num_heads", "head_dim", "rope_dim", "block_size")
CONCAT = "concat_and_cast_mha_k"
CACHE = "reshape_and_cache_flash"


class UsageError(Exception):
    pass


# ---- cases and CSV (no torch) ----

def parse_cases(text):
    """Rows of `kvbench list --format csv` as dicts; integer axes as int, swa/kv_interleaved as
    bool. Raises UsageError naming the line for anything malformed."""
    reader = csv.DictReader(text.splitlines())
    needed = ("case", "kernel", "variant", "sweep", "in_dtype", "out_dtype", "layout", "scale",
              "swa", "kv_interleaved", "strides", "slots") + INT_COLUMNS
    missing = [c for c in needed if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(f"kvbench list output: missing column '{missing[0]}'")
    cases = []
    for row in reader:
        if None in row.values() or None in row:
            raise UsageError(f"kvbench list output line {reader.line_num}: wrong column count")
        case = dict(row)
        try:
            for c in INT_COLUMNS:
                case[c] = int(row[c])
        except ValueError:
            raise UsageError(f"kvbench list output line {reader.line_num}: '{c}' is not an integer")
        for c in ("swa", "kv_interleaved"):
            case[c] = row[c] == "true"
        cases.append(case)
    return cases


def case_key(case):
    """The case's identity without its variant: the triton row of every variant is the same.
    Every column `kvbench list` printed (the binary's case key) but the index and the variant."""
    return tuple(str(v) for k, v in sorted(case.items()) if k not in ("case", "variant"))


def is_pow2(n):
    return n > 0 and (n & (n - 1)) == 0


def concat_geometry(c):
    """Strides and allocation sizes in elements, as src/ops/concat_mla_k's concat_geometry()."""
    T, H, N, R = c["num_tokens"], c["num_heads"], c["head_dim"], c["rope_dim"]
    if c["strides"] == "contiguous":
        g = dict(nope_s1=N, nope_s0=H * N, rope_s0=R, k_s1=N + R, k_s0=H * (N + R))
    elif c["strides"] == "sglang":
        g = dict(nope_s1=N + SGLANG_V, nope_s0=H * (N + SGLANG_V), rope_s0=SGLANG_LORA + R,
                 k_s1=N + R, k_s0=H * (N + R))
    elif c["strides"] == "padded":
        g = dict(nope_s1=N + PAD, nope_s0=H * (N + PAD) + PAD, rope_s0=R + PAD,
                 k_s1=N + R + PAD, k_s0=H * (N + R + PAD) + PAD)
    else:
        raise UsageError(f"unknown strides '{c['strides']}'")
    g.update(nope_elems=T * g["nope_s0"], rope_elems=T * g["rope_s0"], k_elems=T * g["k_s0"])
    return g


def cache_geometry(c):
    """As src/ops/cache_write's cache_geometry(), for the cases the seed supports (NHD, dense
    strides): room for every token plus slack, so untouched slots keep their canary."""
    T, H, D, BS = c["num_tokens"], c["num_heads"], c["head_dim"], c["block_size"]
    num_blocks = -(-(T + T // 8 + 1) // BS) + 1
    extent = BS * H * D
    g = dict(key_s0=H * D, key_s1=D, num_blocks=num_blocks, num_slots=num_blocks * BS,
             block_stride=2 * extent if c["kv_interleaved"] else extent,
             value_offset=extent if c["kv_interleaved"] else num_blocks * extent,
             cache_elems=2 * num_blocks * extent)
    g["logical_slots"] = 2 * g["num_slots"] if c["swa"] else g["num_slots"]
    return g


def unsupported_reason(c):
    """Why the seed cannot run case c faithfully, or None."""
    if c["in_dtype"] not in ("f32", "f16", "bf16"):
        return f"input dtype {c['in_dtype']} (inputs: f32, f16, bf16)"
    if c["out_dtype"] not in DTYPE_SIZE:
        return f"output dtype {c['out_dtype']}"
    T = c["num_tokens"]
    if c["kernel"] == CONCAT:
        for name, v in (("num_heads", c["num_heads"]), ("nope_dim", c["head_dim"]),
                        ("rope_dim", c["rope_dim"])):
            if not is_pow2(v):
                return f"seed: {name}={v} is not a power of two (unmasked tl.arange)"
        g = concat_geometry(c)
        if max(T * g["k_s0"], T * g["nope_s0"], T * g["rope_s0"]) > INT32_MAX:
            return "seed: 32-bit offsets overflow at this token count"
        return None
    if c["kernel"] != CACHE:
        return f"unknown kernel '{c['kernel']}'"
    if c["layout"] != "nhd":
        return f"seed: layout {c['layout']} (the seed writes NHD only)"
    if c["strides"] != "contiguous":
        return f"seed: strides {c['strides']} (the seed assumes head stride = head_size)"
    if c["scale"] == "per_head":
        return "seed: per_head scale (the seed loads one scale per tensor)"
    if c["scale"] == "per_token_head":
        return "seed: per_token_head scale (the seed divides by a caller's scale)"
    if c["slots"] == "skip":
        return "seed: skip slot (the seed has no reserved skip index)"
    if c["swa"] and c["slots"] == "padded":
        return "seed: padding slot -1 with SWA (the seed reads swa_slot_mapping[-1])"
    g = cache_geometry(c)
    if max(T * g["key_s0"], g["num_blocks"] * g["block_stride"]) > INT32_MAX:
        return "seed: 32-bit offsets overflow at this size"
    return None


def logical_bytes(c, swa_lookups=0, written_tokens=None):
    """SPEC.md section 4."""
    T, H, D = c["num_tokens"], c["num_heads"], c["head_dim"]
    i, o = DTYPE_SIZE[c["in_dtype"]], DTYPE_SIZE[c["out_dtype"]]
    if c["kernel"] == CONCAT:
        R = c["rope_dim"]
        return T * H * D * i + T * R * i + T * H * (D + R) * o
    written = T if written_tokens is None else written_tokens
    return 8 * T + 8 * swa_lookups + written * 2 * H * D * (i + o)


def parse_rotate(text):
    """'auto' -> 0, 'N' -> N in [1, MAX_BUFFER_SETS]; UsageError otherwise (kvbench's parse_rotate)."""
    if text == "auto":
        return 0
    if not text.isdigit() or not 1 <= int(text) <= MAX_BUFFER_SETS:
        raise UsageError(f"--rotate: expected auto or an integer in [1, {MAX_BUFFER_SETS}], "
                         f"got '{text}'")
    return int(text)


def choose_sets(setting, set_bytes, set_device_bytes, l2_bytes, free_bytes):
    """The set count, as kvbench's choose_buffer_sets(): an explicit N is kept (None when it does
    not fit in the free memory); auto is the smallest N with N * set_bytes > 3 * L2, capped by
    what fits (at least 1) and by MAX_BUFFER_SETS."""
    fit = (math.floor(DEVICE_FRACTION * free_bytes / set_device_bytes)
           if free_bytes > 0 and set_device_bytes > 0 else MAX_BUFFER_SETS)
    if setting != 0:
        return None if setting > 1 and setting > fit else setting
    if set_bytes <= 0:
        return 1
    wanted = math.floor(L2_MULTIPLE * l2_bytes / set_bytes) + 1
    return int(min(wanted, max(1, fit), MAX_BUFFER_SETS))


def graph_launches(launches, sets):
    """Launches in one graph: `launches` rounded up to a multiple of `sets` (kvbench's)."""
    return -(-max(1, launches) // max(1, sets)) * max(1, sets)


def set_device_bytes(c):
    """Device bytes one set allocates (inputs, output, reference), an estimate for the cap."""
    i, o = DTYPE_SIZE[c["in_dtype"]], DTYPE_SIZE[c["out_dtype"]]
    if c["kernel"] == CONCAT:
        g = concat_geometry(c)
        return (g["nope_elems"] + g["rope_elems"]) * i + 2 * g["k_elems"] * o
    g = cache_geometry(c)
    T, H, D = c["num_tokens"], c["num_heads"], c["head_dim"]
    return 2 * T * H * D * i + 2 * g["cache_elems"] * o + 16 * g["logical_slots"]


def percentile(sorted_values, q):
    """Linear interpolation between order statistics (numpy's default, as src/core/stats.cpp)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_us):
    s = sorted(samples_us)
    mean = statistics.fmean(s)
    stdev = statistics.stdev(s) if len(s) > 1 else 0.0
    return dict(samples=len(s), median_us=percentile(s, 0.5), mean_us=mean, min_us=s[0],
                max_us=s[-1], p10_us=percentile(s, 0.1), p90_us=percentile(s, 0.9),
                rel_stdev=stdev / mean if mean > 0 else 0.0)


def make_row(case, status, device, git_sha, reason="", mismatches=0, written_tokens=0,
             byte_count=0, stats=None, buffer_sets=1, launches=None):
    """One CSV row as a dict keyed by column name; timing columns empty when not timed."""
    row = {k: v for k, v in case.items() if k != "case"}
    for k in ("swa", "kv_interleaved"):
        row[k] = "true" if case[k] else "false"
    row.update(schema_version=SCHEMA_VERSION, variant=VARIANT, status=status, reason=reason,
               mismatches=mismatches, written_tokens=written_tokens, bytes=byte_count,
               buffer_sets=buffer_sets, device=device, git_sha=git_sha)
    if stats:
        row["mode"] = "graph"
        row["context"] = "back_to_back"
        row["samples"] = stats["samples"]
        if launches:
            row["launches_per_sample"] = launches
        for k in ("median_us", "mean_us", "min_us", "max_us", "p10_us", "p90_us"):
            row[k] = f"{stats[k]:.3f}"
        row["rel_stdev"] = f"{stats['rel_stdev']:.5f}"
        row["gbps"] = f"{byte_count / stats['median_us'] / 1e3:.1f}" if stats["median_us"] > 0 else ""
    return row


class RowWriter:
    """Writes kvbench's header, then one whole row per call, flushed (an interrupted run leaves
    every finished row readable). Columns the header lacks are an error, not dropped silently."""

    def __init__(self, path, header):
        self.header = header
        self.file = open(path, "w", newline="")
        self.writer = csv.DictWriter(self.file, fieldnames=header, restval="",
                                     lineterminator="\n")
        self.writer.writeheader()
        self.file.flush()

    def write(self, row):
        unknown = [k for k in row if k not in self.header]
        if unknown:
            raise UsageError(f"column '{unknown[0]}' is not in kvbench's schema")
        self.writer.writerow(row)
        self.file.flush()

    def close(self):
        self.file.close()


def kvbench_output(kvbench, *args):
    try:
        done = subprocess.run([kvbench, *args], capture_output=True, text=True)
    except OSError as e:
        raise UsageError(f"{kvbench}: {e.strerror}")
    if done.returncode != 0:
        raise UsageError(f"{kvbench} {' '.join(args)}: exit {done.returncode}: "
                         f"{done.stderr.strip()}")
    return done.stdout


# ---- on the GPU (torch and triton) ----

def torch_dtype(name):
    import torch
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
            "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}[name]


def random_values(n, dtype_name, gen):
    """n random finite non-zero values: random sign and mantissa, exponent in [-12, 10]."""
    import torch
    sign = torch.randint(0, 2, (n,), generator=gen, device="cuda", dtype=torch.int32) * 2 - 1
    mant = 1 + torch.rand(n, generator=gen, device="cuda", dtype=torch.float32)
    exp = torch.randint(-12, 11, (n,), generator=gen, device="cuda", dtype=torch.int32)
    return (sign * torch.ldexp(mant, exp.float())).to(torch_dtype(dtype_name))


def cast(x, out_name):
    """SPEC.md section 3 in torch: through fp32, one rounding; fp8 saturates to finite (torch's
    .to(float8) turns values past the max into NaN, so clamp first: same result for finite
    values, and clamp keeps NaN)."""
    import torch
    x = x.float()
    if out_name in ("fp8_e4m3", "fp8_e5m2"):
        limit = 448.0 if out_name == "fp8_e4m3" else 57344.0
        x = torch.clamp(x, -limit, limit)
    return x.to(torch_dtype(out_name))


def canary_buffer(elems, dtype_name):
    import torch
    buf = torch.empty(elems, dtype=torch_dtype(dtype_name), device="cuda")
    buf.view(torch.uint8).fill_(0xA5)
    return buf


def mismatch_reason(out, ref):
    """Compares raw bytes of the whole buffers: (count, reason)."""
    import torch
    size = out.element_size()
    a = out.view(torch.uint8).view(-1, size)
    b = ref.view(torch.uint8).view(-1, size)
    bad = (a != b).any(dim=1).nonzero().flatten()
    if bad.numel() == 0:
        return 0, ""
    first = bad[:3].tolist()
    detail = ", ".join(f"element {i}: expected 0x{b[i].flip(0).cpu().numpy().tobytes().hex()} "
                       f"got 0x{a[i].flip(0).cpu().numpy().tobytes().hex()}" for i in first)
    return bad.numel(), f"{bad.numel()} mismatching elements; {detail}"


def setup_concat(c, gen, sets=1):
    """`sets` independent sets of the case's buffers, made in one batch (one set: the draws of an
    unrotated run). Returns (one launch per set, output buffer of every set, reference of every
    set), the buffers flat with `sets` equal parts."""
    import torch
    import seed_triton
    g = concat_geometry(c)
    T, H, N, R = c["num_tokens"], c["num_heads"], c["head_dim"], c["rope_dim"]
    nope_buf = random_values(sets * g["nope_elems"], c["in_dtype"], gen)
    rope_buf = random_values(sets * g["rope_elems"], c["in_dtype"], gen)
    k_buf = canary_buffer(sets * g["k_elems"], c["out_dtype"])
    ref_buf = canary_buffer(sets * g["k_elems"], c["out_dtype"])
    # Every set at once: [sets, T, H, ...] views, each set one part of the flat buffers.
    all_nope = torch.as_strided(nope_buf, (sets, T, H, N), (g["nope_elems"], g["nope_s0"], g["nope_s1"], 1))
    all_rope = torch.as_strided(rope_buf, (sets, T, 1, R), (g["rope_elems"], g["rope_s0"], R, 1))
    ref = torch.as_strided(ref_buf, (sets, T, H, N + R), (g["k_elems"], g["k_s0"], g["k_s1"], 1))
    ref[:, :, :, :N] = cast(all_nope, c["out_dtype"])
    ref[:, :, :, N:] = cast(all_rope, c["out_dtype"]).expand(sets, T, H, R)

    def launch_of(s):
        k_nope = all_nope[s]
        k_rope = all_rope[s]
        k = torch.as_strided(k_buf, (T, H, N + R), (g["k_s0"], g["k_s1"], 1), s * g["k_elems"])
        return lambda: seed_triton.concat_and_cast_mha_k(k, k_nope, k_rope)
    return [launch_of(s) for s in range(sets)], k_buf, ref_buf


def concat_bytes(c, gen):
    """(logical bytes, written tokens) of one set."""
    return logical_bytes(c), c["num_tokens"]


def make_slots(c, g, gen):
    """Slot mapping (and SWA table) like src/ops/cache_write's make_slots() for the patterns the
    seed runs: distinct random or contiguous slots, every 8th token -1 when padded; with SWA a
    table twice the cache's size maps each used logical slot to a distinct physical one, every
    16th used entry -1 (evicted). Returns (slot_mapping, swa_table or None, physical slot per token,
    SWA lookups, written tokens), on the CPU."""
    import torch
    T = c["num_tokens"]
    rng = g["logical_slots"] if c["swa"] else g["num_slots"]
    if c["slots"] == "contiguous":
        start = min(3, rng - T)
        slots = torch.arange(start, start + T, dtype=torch.int64)
    else:
        slots = torch.randperm(rng, generator=gen)[:T].to(torch.int64)
    if c["slots"] == "padded":
        slots[7::8] = -1
    table = None
    lookups = int((slots >= 0).sum())
    physical = slots
    if c["swa"]:
        table = torch.full((g["logical_slots"],), -1, dtype=torch.int64)
        used = slots[slots >= 0]
        phys = torch.randperm(g["num_slots"], generator=gen)[:used.numel()].to(torch.int64)
        phys[15::16] = -1
        table[used] = phys
        physical = torch.where(slots >= 0, table[slots.clamp(min=0)], slots)
    else:
        lookups = 0
    written = int((physical >= 0).sum())
    return slots, table, physical, lookups, written


def cache_bytes(c, gen):
    """(logical bytes, written tokens) of set 0, from its slots (drawn again by setup_cache from a
    generator of the same seed)."""
    import torch
    cpu_gen = torch.Generator().manual_seed(int(gen.initial_seed()))
    _, _, _, lookups, written = make_slots(c, cache_geometry(c), cpu_gen)
    return logical_bytes(c, lookups, written), written


def setup_cache(c, gen, sets=1):
    """As setup_concat: `sets` sets, each with its own random slots, inputs and scales, made in one
    batch (one set: the draws of an unrotated run)."""
    import torch
    import seed_triton
    g = cache_geometry(c)
    T, H, D, BS, NB = c["num_tokens"], c["num_heads"], c["head_dim"], c["block_size"], g["num_blocks"]
    cpu_gen = torch.Generator().manual_seed(int(gen.initial_seed()))
    slot_sets = [make_slots(c, g, cpu_gen) for _ in range(sets)]
    keys = random_values(sets * T * H * D, c["in_dtype"], gen).view(sets, T, H, D)
    values = random_values(sets * T * H * D, c["in_dtype"], gen).view(sets, T, H, D)
    scales = None
    if c["scale"] == "per_tensor":  # positive, not powers of two: the division must round
        scales = [[0.25 + torch.randint(0, 4096, (1,), generator=cpu_gen).item() / 1024 + 1 / 3
                   for _ in range(2)] for _ in range(sets)]

    def views(buf, s):
        shape, strides = (NB, BS, H, D), (g["block_stride"], H * D, D, 1)
        base = s * g["cache_elems"]
        return (torch.as_strided(buf, shape, strides, base),
                torch.as_strided(buf, shape, strides, base + g["value_offset"]))

    cache_buf = canary_buffer(sets * g["cache_elems"], c["out_dtype"])
    ref_buf = canary_buffer(sets * g["cache_elems"], c["out_dtype"])
    # The reference of every set in one indexed write per cache: (set, block, offset) of each
    # written token.
    set_idx, tokens, phys = [], [], []
    for s, (_, _, physical, _, _) in enumerate(slot_sets):
        mask = physical >= 0
        t = torch.nonzero(mask).flatten()
        set_idx.append(torch.full_like(t, s))
        tokens.append(t)
        phys.append(physical[mask])
    set_idx, tokens, phys = (torch.cat(x).cuda() for x in (set_idx, tokens, phys))
    shape = (sets, NB, BS, H, D)
    strides = (g["cache_elems"], g["block_stride"], H * D, D, 1)
    ref_k = torch.as_strided(ref_buf, shape, strides, 0)
    ref_v = torch.as_strided(ref_buf, shape, strides, g["value_offset"])
    kx, vx = keys[set_idx, tokens].float(), values[set_idx, tokens].float()
    if scales:
        d_scales = torch.tensor(scales, dtype=torch.float32, device="cuda")  # [sets, 2]
        kx = kx / d_scales[set_idx, 0].view(-1, 1, 1)  # IEEE fp32 division, then one rounding
        vx = vx / d_scales[set_idx, 1].view(-1, 1, 1)
    ref_k[set_idx, phys // BS, phys % BS] = cast(kx, c["out_dtype"])
    ref_v[set_idx, phys // BS, phys % BS] = cast(vx, c["out_dtype"])

    d_slots = torch.stack([x[0] for x in slot_sets]).cuda()  # [sets, T]
    d_tables = torch.stack([x[1] for x in slot_sets]).cuda() if c["swa"] else None
    d_scales = torch.tensor(scales, dtype=torch.float32, device="cuda") if scales else None

    def launch_of(s):
        key_cache, value_cache = views(cache_buf, s)
        key, value, slots = keys[s], values[s], d_slots[s]
        table = d_tables[s] if d_tables is not None else None
        ks = d_scales[s, 0:1] if d_scales is not None else None
        vs = d_scales[s, 1:2] if d_scales is not None else None
        return lambda: seed_triton.reshape_and_cache_flash(key, value, key_cache, value_cache,
                                                            slots, table, ks, vs)
    return [launch_of(s) for s in range(sets)], cache_buf, ref_buf


def time_graph(launches_by_set, warmup, samples, launches):
    """Per-launch µs: a CUDA graph of `launches` launches (launch i on set i mod N), each replay
    timed with events."""
    import torch
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        launches_by_set[0]()  # outside capture: JIT compilation and autotuning happen here
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for i in range(launches):
            launches_by_set[i % len(launches_by_set)]()
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            graph.replay()
        times = []
        for _ in range(samples):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            graph.replay()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / launches)
    return times


def run_case(c, args, device, git_sha):
    import torch
    reason = unsupported_reason(c)
    if reason:
        return make_row(c, "not_supported", device, git_sha, reason=reason)
    concat = c["kernel"] == CONCAT
    setup, case_bytes = (setup_concat, concat_bytes) if concat else (setup_cache, cache_bytes)
    gen = torch.Generator(device="cuda").manual_seed(args.seed * 1000003 + int(c["case"]))
    try:
        byte_count, written = case_bytes(c, gen)
        free, _ = torch.cuda.mem_get_info()
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        sets = choose_sets(args.rotate_sets, byte_count, set_device_bytes(c), l2, free)
        if sets is None:
            return make_row(c, "failed", device, git_sha,
                            reason=f"rotate {args.rotate_sets} needs "
                                   f"{args.rotate_sets * set_device_bytes(c) / 1e9:.2f} GB of device "
                                   f"memory, {free / 1e9:.2f} GB free")
        launches, out, ref = setup(c, gen, sets)
        for launch in launches:  # every set checked, the whole buffer
            launch()
        torch.cuda.synchronize()
        if sets == 1:
            count, why = mismatch_reason(out, ref)
        else:
            size = out.element_size()
            per_set = (out.view(torch.uint8).view(sets, -1, size) !=
                       ref.view(torch.uint8).view(sets, -1, size)).any(dim=2).sum(dim=1).tolist()
            bad = next((k for k, n in enumerate(per_set) if n), None)
            count, why = 0, ""
            if bad is not None:
                part = out.numel() // sets
                count, why = mismatch_reason(out[bad * part:(bad + 1) * part],
                                             ref[bad * part:(bad + 1) * part])
                why = f"set {bad} of {sets}: {why}" if bad else why
        if count:
            return make_row(c, "incorrect", device, git_sha, reason=why, mismatches=count,
                            written_tokens=written, byte_count=byte_count, buffer_sets=sets)
        del ref
        n = graph_launches(args.graph_launches, sets)
        stats = summarize(time_graph(launches, args.warmup, args.samples, n))
        return make_row(c, "passed", device, git_sha, written_tokens=written,
                        byte_count=byte_count, stats=stats, buffer_sets=sets, launches=n)
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return make_row(c, "failed", device, git_sha, reason="out of device memory")
    except Exception as e:  # a Triton compile error or a CUDA fault: recorded, not fatal
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return make_row(c, "failed", device, git_sha, reason=f"{type(e).__name__}: {first}"[:300])


def main(argv=None):
    p = argparse.ArgumentParser(description="The seed's Triton kernels over a kvbench config")
    p.add_argument("config")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--kvbench", help="the kvbench binary (default $KVBENCH, else build/kvbench)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--graph-launches", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rotate", default="1",
                   help="buffer sets per case, N or auto (kvbench run --rotate); default 1")
    p.add_argument("--case", type=int, nargs="+", dest="only",
                   help="only these cases (numbers as `kvbench list` prints them)")
    args = p.parse_args(argv)
    try:
        args.rotate_sets = parse_rotate(args.rotate)
    except UsageError as e:
        print(f"triton_baseline.py: {e}", file=sys.stderr)
        return 2
    if min(args.warmup, args.samples, args.graph_launches) < 1:
        print("triton_baseline.py: --warmup, --samples, --graph-launches must be positive",
              file=sys.stderr)
        return 2
    try:
        args.kvbench = kvbench_schema.find_binary(args.kvbench)
        cases = parse_cases(kvbench_output(args.kvbench, "list", args.config, "--format", "csv"))
        header = kvbench_output(args.kvbench, "schema").strip().split(",")
        version = kvbench_output(args.kvbench, "--version").strip()
    except (UsageError, kvbench_schema.SchemaError) as e:
        print(f"triton_baseline.py: {e}", file=sys.stderr)
        return 2
    git_sha = version.rsplit("git ", 1)[-1].rstrip(")") if "git " in version else ""
    if args.only:
        known = {int(c["case"]) for c in cases}
        missing = [i for i in args.only if i not in known]
        if missing:
            print(f"triton_baseline.py: --case {missing[0]}: out of range ({len(cases)} cases)",
                  file=sys.stderr)
            return 2
        by_index = {int(c["case"]): c for c in cases}
        cases = [by_index[i] for i in args.only]  # in the order given

    # torch and triton from this interpreter, else $KVBENCH_PYTHON's; else one line, exit 3.
    kvbench_python.require(__file__, "torch", "triton")
    import torch
    import triton
    if not torch.cuda.is_available():
        print(f"triton_baseline.py: torch {torch.__version__} in {sys.executable} sees no CUDA "
              f"device (a CPU-only build, or no GPU here)", file=sys.stderr)
        return 4
    device = torch.cuda.get_device_name(0)
    print(f"triton_baseline: {len(cases)} cases, torch {torch.__version__}, triton "
          f"{triton.__version__}, {device}, writing {args.output}", file=sys.stderr)
    try:
        out = RowWriter(args.output, header)
    except OSError as e:
        print(f"triton_baseline.py: {args.output}: {e.strerror}", file=sys.stderr)
        return 3
    seen, bad = set(), 0
    for c in cases:
        key = case_key(c)
        if key in seen:
            continue
        seen.add(key)
        row = run_case(c, args, device, git_sha)
        try:
            out.write(row)
        except OSError as e:
            print(f"triton_baseline.py: {args.output}: {e.strerror}", file=sys.stderr)
            return 3
        bad += row["status"] in ("incorrect", "failed")
        timing = (f"{row['median_us']:>10} us {row['gbps']:>8} GB/s, {row['buffer_sets']} sets"
                  if row.get("median_us") else row["reason"])
        print(f"[{c['case']}] {row['status']:<13} {c['kernel']} {c['sweep']} T={c['num_tokens']} "
              f"H={c['num_heads']} D={c['head_dim']} {c['in_dtype']}->{c['out_dtype']}: {timing}",
              flush=True)
    out.close()
    print(f"{len(seen)} cases, {bad} incorrect or failed; results in {args.output}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
