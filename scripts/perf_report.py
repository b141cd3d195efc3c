#!/usr/bin/env python3
"""Markdown report of a `kvbench run configs/perf.yaml` CSV: per-shape tables (µs and % of the
measured copy peak, seed_port beside optimized) and the performance targets (docs/performance.md)
with their worst cases.

usage: scripts/perf_report.py results/h200/perf.csv [--peers] [--pair BASE,NEW] [--bounds CSV]
       (reads <csv>.json beside it)

"large" = logical bytes at least 4x the L2 size (the sidecar's device.l2_bytes, else 60 MiB).
--peers adds the best CUDA/Triton peer times (docs/performance.md, "Peers") for the T <= 128 check.
The T <= 128 misses are listed against the shape's T=1 time plus their bytes at the copy peak;
--bounds adds, from a `kvbench bounds` CSV of the same cases, the fastest plain write of each
miss's output bytes and the fastest plain move of its bytes, each judged against that run's own
launch floor + 0.5 µs.
--pair names the two variants of the per-shape tables (default seed_port,optimized), e.g.
optimized,slot_order for results/h200/slot_order.csv; the targets always judge `optimized`.
"""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_schema  # noqa: E402

AXES = ["sweep", "num_heads", "head_dim", "rope_dim", "block_size", "in_dtype", "out_dtype",
        "layout", "scale", "swa", "strides"]
DECODE_PREFILL = ["1", "16", "128", "1024", "8192", "32768", "65536", "131072"]

# Best peer µs per case (docs/performance.md, "Peers": H200, CUDA graphs, same shapes), T <= 128 only.
PEERS = {
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "1"): 1.83,   # SGLang concat_mla_k
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "16"): 2.20,  # seed Triton
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "128"): 2.98,  # seed Triton
    ("reshape_and_cache_flash", "8:128", "bf16", "bf16", "1"): 1.36,  # seed Triton
    ("reshape_and_cache_flash", "8:128", "bf16", "bf16", "128"): 1.54,
    ("reshape_and_cache_flash", "32:128", "bf16", "bf16", "1"): 1.38,
    ("reshape_and_cache_flash", "32:128", "bf16", "bf16", "128"): 2.18,
    ("reshape_and_cache_flash", "1:576", "bf16", "bf16", "1"): 1.36,
    ("reshape_and_cache_flash", "1:576", "bf16", "bf16", "128"): 1.52,
    ("reshape_and_cache_flash", "8:80", "f16", "f16", "1"): 1.35,
    ("reshape_and_cache_flash", "8:80", "f16", "f16", "128"): 1.52,
}


def peer_key(r):
    shape = r["num_heads"] if r["kernel"].startswith("concat") else f"{r['num_heads']}:{r['head_dim']}"
    return (r["kernel"], shape, r["in_dtype"], r["out_dtype"], r["num_tokens"])


def shape_name(r):
    if r["kernel"].startswith("concat"):
        s = f"concat H={r['num_heads']} {r['in_dtype']}->{r['out_dtype']} {r['strides']}"
    else:
        s = (f"cache H={r['num_heads']} D={r['head_dim']} BS={r['block_size']} "
             f"{r['in_dtype']}->{r['out_dtype']} {r['layout']}")
        if r["scale"] != "none":
            s += f" scale={r['scale']}"
        if r["swa"] == "true":
            s += " swa"
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--pair", default="seed_port,optimized")
    ap.add_argument("--bounds")
    args = ap.parse_args()
    pair = args.pair.split(",")
    if len(pair) != 2 or not all(pair):
        ap.error(f"--pair: '{args.pair}' is not two variant names separated by a comma")
    base, new = pair
    with open(args.csv, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    meta = {}
    if os.path.exists(args.csv + ".json"):
        with open(args.csv + ".json") as f:
            meta = json.load(f)
    l2 = float(meta.get("device", {}).get("l2_bytes", 60 * 2**20))
    floor = meta.get("launch_floor_us", {}).get("graph", {}).get("median_us")
    peak = meta.get("measured_peak_gbps")

    bad = [r for r in rows if r["status"] != "passed"]
    print(f"{len(rows)} rows, {len(rows) - len(bad)} passed; measured copy peak {peak:.0f} GB/s; "
          f"graph-mode launch floor {floor:.2f} us\n" if peak and floor else f"{len(rows)} rows\n")

    # Per-shape tables: one row per shape, one column per token count: base → new.
    shapes = {}
    for r in rows:
        if r["status"] == "passed":
            shapes.setdefault(shape_name(r), {}).setdefault(r["num_tokens"], {})[r["variant"]] = r
    for kernel in ["concat", "cache"]:
        ts = [t for t in DECODE_PREFILL if any(t in v for k, v in shapes.items() if k.startswith(kernel))]
        if not ts:
            continue
        print(f"| {kernel}: µs {base} → {new} (% of copy peak) | " + " | ".join(f"T={t}" for t in ts) + " |")
        print("|---|" + "---|" * len(ts))
        for name in sorted(k for k in shapes if k.startswith(kernel)):
            cells = []
            for t in ts:
                v = shapes[name].get(t, {})
                if base in v and new in v:
                    o = v[new]
                    cells.append(f"{float(v[base]['median_us']):.1f} → **{float(o['median_us']):.2f}** "
                                 f"({float(o['pct_of_measured_peak']):.0f}%)")
                else:
                    cells.append("")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()

    # Targets.
    opt = [r for r in rows if r["variant"] == "optimized" and r["status"] == "passed"]
    print("| target | cases | worst case | value | holds |")
    print("|---|---|---|---|---|")
    for kernel, goal in [("concat_and_cast_mha_k", 95.0), ("reshape_and_cache_flash", 93.0)]:
        large = [r for r in opt if r["kernel"] == kernel and float(r["bytes"]) >= 4 * l2]
        if large:
            w = min(large, key=lambda r: float(r["pct_of_measured_peak"]))
            holds = sum(float(r["pct_of_measured_peak"]) >= goal for r in large)
            print(f"| {kernel} large ≥ {goal:.0f}% of copy peak | {holds}/{len(large)} hold | "
                  f"{shape_name(w)} T={w['num_tokens']} | {float(w['pct_of_measured_peak']):.1f}% | "
                  f"{'yes' if holds == len(large) else 'no'} |")
    small = [r for r in opt if int(r["num_tokens"]) <= 128]
    if floor and small:
        over = [r for r in small if float(r["median_us"]) > floor + 0.5]
        # Misses whose bytes alone take more than 0.5 µs at the measured copy peak.
        heavy = sum(float(r["bytes"]) / (peak * 1e3) > 0.5 for r in over) if peak else 0
        w = max(small, key=lambda r: float(r["median_us"]) - floor)
        print(f"| T ≤ 128 within 0.5 µs of the launch floor ({floor:.2f} µs) | "
              f"{len(small) - len(over)}/{len(small)} hold ({heavy} misses move more than 0.5 µs "
              f"of bytes at the copy peak) | {shape_name(w)} T={w['num_tokens']} | "
              f"{float(w['median_us']):.2f} µs | {'yes' if not over else 'no'} |")
    if args.peers:
        checked = [(r, PEERS[peer_key(r)]) for r in small
                   if peer_key(r) in PEERS and r["strides"] == "contiguous" and r["layout"] == "nhd"
                   and r["swa"] == "false" and r["scale"] == "none" and r["block_size"] in ("16", "64")]
        if checked:
            w = max(checked, key=lambda rp: float(rp[0]["median_us"]) / rp[1])
            ok = sum(float(r["median_us"]) <= p for r, p in checked)
            print(f"| T ≤ 128 at or below the best peer | {ok}/{len(checked)} hold | "
                  f"{shape_name(w[0])} T={w[0]['num_tokens']} | {float(w[0]['median_us']):.2f} vs "
                  f"{w[1]:.2f} µs | {'yes' if ok == len(checked) else 'no'} |")
    pairs = {}
    for r in rows:
        if r["status"] == "passed":
            pairs.setdefault(tuple(r[c] for c in AXES + ["num_tokens"]), {})[r["variant"]] = r
    ratios = [(float(v["optimized"]["median_us"]) / float(v["seed_port"]["median_us"]), v["optimized"])
              for v in pairs.values() if "optimized" in v and "seed_port" in v]
    if ratios:
        worst, r = max(ratios, key=lambda x: x[0])
        print(f"| optimized never slower than seed_port | {sum(x <= 1.0 for x, _ in ratios)}/{len(ratios)} hold | "
              f"{shape_name(r)} T={r['num_tokens']} | {worst:.2f}x seed_port's time | "
              f"{'yes' if worst <= 1.0 else 'no'} |")
    bounds = read_bounds(args.bounds) if args.bounds else None
    if floor and peak and small:
        floor_misses(opt, small, floor, peak, bounds)
    return 0


def read_bounds(path):
    """Rows of a `kvbench bounds` CSV by case key (the axis columns it copies from the result
    rows; the key comes from the kvbench binary, scripts/kvbench_schema.py)."""
    key = kvbench_schema.case_key_columns()
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = key + ["launch_floor_us", "write_floor_us", "move_floor_us"]
    missing = [c for c in need if rows and c not in rows[0]]
    if not rows or missing:
        sys.exit(f"perf_report.py: {path}: not a kvbench bounds CSV "
                 f"({'no rows' if not rows else 'missing column ' + missing[0]})")
    return {tuple(r[c] for c in key): r for r in rows}


def floor_misses(opt, small, floor, peak, bounds=None):
    """The T <= 128 misses against a latency + transfer model: the same shape's T=1 time (one
    launch, one dependent read, one write) plus the case's bytes at the measured copy peak; with
    `bounds`, also the fastest plain write and move of the same bytes (`kvbench bounds`)."""
    bar = floor + 0.5
    over = [r for r in small if float(r["median_us"]) > bar]
    if not over:
        return
    one = {tuple(r[c] for c in AXES): float(r["median_us"]) for r in opt if r["num_tokens"] == "1"}
    extra = " write floor µs | move floor µs |" if bounds is not None else ""
    print(f"\n| T ≤ 128 miss (bar {bar:.2f} µs) | T | µs | T=1 µs | bytes at copy peak µs | "
          "T=1 + bytes µs | µs over T=1 + bytes |" + extra)
    print("|---|---|---|---|---|---|---|" + "---|---|" * (bounds is not None))
    bound, excess, faster, no_t1 = 0, [], 0, 0
    found, write_over, move_over, bars = 0, 0, 0, set()
    for r in sorted(over, key=lambda r: (shape_name(r), int(r["num_tokens"]))):
        t1 = one.get(tuple(r[c] for c in AXES))
        us, xfer = float(r["median_us"]), float(r["bytes"]) / (peak * 1e3)
        cells = ""
        if bounds is not None:
            b = bounds.get(tuple(r[c] for c in kvbench_schema.case_key_columns()))
            cells = " | |"
            if b:
                found += 1
                own_bar = float(b["launch_floor_us"]) + 0.5
                bars.add(round(own_bar, 2))
                write_over += float(b["write_floor_us"]) > own_bar
                move_over += float(b["move_floor_us"]) > own_bar
                cells = f" {float(b['write_floor_us']):.2f} | {float(b['move_floor_us']):.2f} |"
        if t1 is None:  # no T=1 row of that shape in the CSV: listed, no model
            no_t1 += 1
            print(f"| {shape_name(r)} | {r['num_tokens']} | {us:.2f} | | {xfer:.2f} | | |" + cells)
            continue
        model = t1 + xfer
        bound += model > bar
        faster += us < model
        if model <= bar:
            excess.append(us - model)
        print(f"| {shape_name(r)} | {r['num_tokens']} | {us:.2f} | {t1:.2f} | {xfer:.2f} | "
              f"{model:.2f} | {us - model:+.2f} |" + cells)
    print(f"\n{len(over)} misses: {bound} have T=1 + bytes above the bar"
          + (f", {len(excess)} below it (at most {max(excess):+.2f} µs over T=1 + bytes)"
             if excess else "")
          + (f", {no_t1} without a T=1 row" if no_t1 else "")
          + f"; {faster} run faster than T=1 + bytes (a model, not a bound).")
    if bounds is not None:
        own = "/".join(f"{x:.2f}" for x in sorted(bars)) or "none"
        print(f"\nFloors (`kvbench bounds`, the fastest of the plain kernels it tries; its own bar "
              f"{own} µs): {found} of {len(over)} misses found; for {write_over} the fastest write "
              f"of their output bytes alone takes longer than that bar, for {move_over} the "
              f"fastest move of their bytes does.")

if __name__ == "__main__":
    sys.exit(main())
