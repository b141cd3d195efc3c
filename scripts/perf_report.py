#!/usr/bin/env python3
"""Markdown report of a `kvbench run configs/perf.yaml` CSV: per-shape tables (µs and % of the
measured copy peak, seed_port beside optimized) and the performance targets (docs/performance.md)
with their worst cases.

usage: scripts/perf_report.py results/h200/perf.csv [--peers] [--pair BASE,NEW] [--bounds CSV]
                              [--triton CSV] [--previous CSV] [--cases]
       (reads <csv>.json beside it)

"large" = logical bytes at least 4x the L2 size (the sidecar's device.l2_bytes, else 60 MiB).
--peers adds the best CUDA/Triton peer times (docs/performance.md, "Peers") for the T <= 128 check.
The T <= 128 misses are listed against the shape's T=1 time plus their bytes at the copy peak;
--bounds adds, from a `kvbench bounds` CSV of the same cases, the fastest plain write of each
miss's output bytes and the fastest plain move of its bytes, each judged against that run's own
launch floor + 0.5 µs.
--pair names the two variants of the per-shape tables (default seed_port,optimized), e.g.
optimized,slot_order for results/h200/slot_order.csv; the targets always judge `optimized`.

Per case of `optimized` (docs/measurement.md, "Rotated buffers"):
- pct_of_bound: the case's own bound (`bound_us` of a `kvbench bounds` CSV of this run: the scatter
  of its rows to its slots for the cache write, the contiguous move for concat) / its median;
- the ratio to the seed's Triton: the `triton` row of the same case in --triton (a
  triton_baseline.py CSV of the same config, timed the same way), Triton µs / optimized µs;
- the ratio to a previous committed run (--previous, e.g. results/h200/perf.csv): µs / previous µs.
The targets they feed: every case at least 97% of its bound; faster than the seed's Triton on
every case and by 1.25x in geometric mean; large cases (>= 4x L2) `same` or `faster` than the
previous run (5%). Rows timed over several buffer sets whose sets together stay within 3x L2 (the
4096-set cap) are counted as not fully cold. --cases prints the per-case table (long).
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
    ap.add_argument("--triton")
    ap.add_argument("--previous")
    ap.add_argument("--cases", action="store_true")
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
    # A CSV without the base variant (a run of one variant) gets the new one's cells alone.
    with_base = any(r["variant"] == base for r in rows)
    for kernel in ["concat", "cache"]:
        ts = [t for t in DECODE_PREFILL if any(t in v for k, v in shapes.items() if k.startswith(kernel))]
        if not ts:
            continue
        title = f"{base} → {new}" if with_base else new
        print(f"| {kernel}: µs {title} (% of copy peak) | " + " | ".join(f"T={t}" for t in ts) + " |")
        print("|---|" + "---|" * len(ts))
        for name in sorted(k for k in shapes if k.startswith(kernel)):
            cells = []
            for t in ts:
                v = shapes[name].get(t, {})
                if new in v and (base in v or not with_base):
                    o = v[new]
                    was = f"{float(v[base]['median_us']):.1f} → " if with_base else ""
                    cells.append(f"{was}**{float(o['median_us']):.2f}** "
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
    if bounds is not None or args.triton or args.previous:
        triton = read_rows(args.triton, "triton") if args.triton else None
        previous = read_rows(args.previous, "previous") if args.previous else None
        per_case(opt, l2, bounds, triton, previous, args.cases)
    return 0


def read_rows(path, what):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"perf_report.py: {path}: {e.strerror}")
    missing = [c for c in kvbench_schema.case_key_columns() + ["status", "median_us"]
               if rows and c not in rows[0]]
    if not rows or missing:
        sys.exit(f"perf_report.py: {path}: not a result CSV for --{what} "
                 f"({'no rows' if not rows else 'missing column ' + missing[0]})")
    return rows


def timed(rows, variant=None, ignore_variant=False):
    """{case key: median µs} of the passed rows (of `variant`); key without the variant if asked."""
    out, key_columns = {}, kvbench_schema.case_key_columns()
    for r in rows:
        if r["status"] != "passed" or not r["median_us"] or (variant and r["variant"] != variant):
            continue
        key = tuple(r[c] for c in key_columns if not (ignore_variant and c == "variant"))
        out[key] = float(r["median_us"])
    return out


def geomean(values):
    import math
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def per_case(opt, l2, bounds, triton, previous, print_cases):
    """Each optimized case against its bound, the seed's Triton and the previous run."""
    tri = timed(triton, "triton", ignore_variant=True) if triton else {}
    prev = timed(previous, "optimized") if previous else {}
    lines, pct, speedup, slower_large, not_cold = [], [], [], [], 0
    key_columns = kvbench_schema.case_key_columns()
    for r in sorted(opt, key=lambda r: (shape_name(r), int(r["num_tokens"]))):
        key = tuple(r[c] for c in key_columns)
        us = float(r["median_us"])
        sets = int(r.get("buffer_sets") or 1)
        not_cold += sets > 1 and sets * float(r["bytes"]) <= 3 * l2
        cells = [shape_name(r), r["num_tokens"], str(sets), f"{us:.2f}"]
        b = bounds.get(key) if bounds is not None else None
        if b and b.get("bound_us"):
            p = 100 * float(b["bound_us"]) / us
            pct.append((p, r))
            cells += [f"{float(b['bound_us']):.2f}", f"{p:.1f}%"]
        else:
            cells += ["", ""]
        t = tri.get(tuple(r[c] for c in key_columns if c != "variant"))
        if t:
            speedup.append((t / us, r))
            cells += [f"{t:.2f}", f"{t / us:.2f}x"]
        else:
            cells += ["", ""]
        p_us = prev.get(key)
        if p_us:
            ratio = us / p_us
            if float(r["bytes"]) >= 4 * l2:
                slower_large.append((ratio, r))
            cells += [f"{p_us:.2f}", f"{ratio:.3f}"]
        else:
            cells += ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    if print_cases:
        print("\n| case | T | sets | µs | bound µs | % of bound | Triton µs | Triton / this | "
              "previous µs | this / previous |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(lines))
    print("\n| target (optimized, per case) | cases | worst case | value | holds |")
    print("|---|---|---|---|---|")
    if pct:
        w, r = min(pct, key=lambda x: x[0])
        ok = sum(p >= 97.0 for p, _ in pct)
        print(f"| at least 97% of its own bound | {ok}/{len(pct)} hold | {shape_name(r)} "
              f"T={r['num_tokens']} | {w:.1f}% | {'yes' if ok == len(pct) else 'no'} |")
    if speedup:
        w, r = min(speedup, key=lambda x: x[0])
        ok = sum(x > 1.0 for x, _ in speedup)
        g = geomean([x for x, _ in speedup])
        print(f"| faster than the seed's Triton | {ok}/{len(speedup)} hold | {shape_name(r)} "
              f"T={r['num_tokens']} | {w:.2f}x | {'yes' if ok == len(speedup) else 'no'} |")
        print(f"| geometric mean over the seed's Triton at least 1.25x | {len(speedup)} cases | | "
              f"{g:.3f}x | {'yes' if g >= 1.25 else 'no'} |")
    if previous is not None:
        if slower_large:
            w, r = max(slower_large, key=lambda x: x[0])
            ok = sum(x <= 1.05 for x, _ in slower_large)
            print(f"| large (>= 4x L2) same or faster than the previous run (5%) | "
                  f"{ok}/{len(slower_large)} hold | {shape_name(r)} T={r['num_tokens']} | "
                  f"{w:.3f}x its time | {'yes' if ok == len(slower_large) else 'no'} |")
        else:
            print("| large (>= 4x L2) same or faster than the previous run (5%) | 0 cases matched | "
                  "| | |")
    if not_cold:
        print(f"\n{not_cold} rows were rotated over sets that together stay within 3x L2 "
              "(kvbench's 4096-set cap): not fully cold.")


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
                write = float(b["write_floor_us"]) if b["write_floor_us"] else None
                write_over += write is not None and write > own_bar
                move_over += float(b["move_floor_us"]) > own_bar
                cells = (f" {write:.2f} |" if write is not None else " |") + \
                    f" {float(b['move_floor_us']):.2f} |"
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
