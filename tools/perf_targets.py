#!/usr/bin/env python3
"""The performance targets kvbench's own `optimized` kernels are held to, judged on a result CSV
of configs/perf.yaml (developer tooling: docs/dev/targets.md says where each target and each
peer figure comes from; users read scripts/perf_report.py's tables instead).

usage: tools/perf_targets.py RESULTS.csv [--peers] [--bounds CSV] [--triton CSV] [--previous CSV]
       (reads <csv>.json beside it)

Unrotated targets, on a run of both variants:
- large cases (logical bytes at least 4x the L2 size, the sidecar's device.l2_bytes, else 60 MiB):
  concat at least 95% of the measured copy peak, the cache write at least 93%;
- T <= 128 within 0.5 µs of the graph-mode launch floor; the misses are listed against the
  shape's T=1 time plus their bytes at the copy peak (a model, not a bound), and with --bounds
  (a `kvbench bounds` CSV of the same cases) against the fastest plain write and move of their
  bytes, each judged against that run's own launch floor + 0.5 µs;
- --peers: T <= 128 at or below the best peer (PEERS below);
- `optimized` never slower than `seed_port`.
A run in the after_producer context (the sidecar's settings.context; a kernel writes the case's
inputs right before each launch, as in a decode step) is judged on its T <= 128 cases only, with
--triton (the seed's Triton in the same context; the run's own CSV when it holds both variants):
faster than Triton on every case (a tie at the timer's step is not faster), by 1.5x in geometric
mean (both also by the mean of each case's samples, which resolves below the step), and with
--bounds (`kvbench bounds` of the run, timed in the same context) within 0.3 µs of its plain-move
reference (also by the means where the bounds CSV has `plain_move_mean_us`).
A rotated run (the sidecar's settings.rotate other than 1) is judged per case only. Per case of
`optimized`, with --bounds (its `plain_move_us`, the plain-move reference: the fastest plain kernel
kvbench tries for the case's bytes, which kernels can beat), --triton (a triton_baseline.py CSV
of the same cases) or --previous (a committed run): at least 97% of its plain-move reference;
faster than the seed's Triton on every case and by 1.25x in geometric mean; large cases `same` or
faster than the previous run (5%). A percentage judged against a target prints with one decimal,
or more where one would round it across the target line.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import kvbench_schema  # noqa: E402
import perf_report as pr  # noqa: E402

# Best peer µs per case, T <= 128 (H200, CUDA graphs, same shapes and slots). Source:
# docs/dev/targets.md, "The peers" (the best CUDA peers, and the seed's Triton kernels alone);
# each value is the lowest of the two tables' entries for the case.
PEERS = {
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "1"): 1.83,   # SGLang concat_mla_k
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "16"): 2.20,  # seed Triton
    ("concat_and_cast_mha_k", "128", "bf16", "bf16", "128"): 2.98,  # seed Triton
    ("reshape_and_cache_flash", "8:128", "bf16", "bf16", "1"): 1.36,  # seed Triton
    ("reshape_and_cache_flash", "8:128", "bf16", "bf16", "128"): 1.54,  # seed Triton
    ("reshape_and_cache_flash", "32:128", "bf16", "bf16", "1"): 1.38,  # seed Triton
    ("reshape_and_cache_flash", "32:128", "bf16", "bf16", "128"): 2.18,  # seed Triton
    ("reshape_and_cache_flash", "1:576", "bf16", "bf16", "1"): 1.36,  # seed Triton
    ("reshape_and_cache_flash", "1:576", "bf16", "bf16", "128"): 1.52,  # seed Triton
    ("reshape_and_cache_flash", "8:80", "f16", "f16", "1"): 1.35,  # seed Triton
    ("reshape_and_cache_flash", "8:80", "f16", "f16", "128"): 1.52,  # seed Triton
}
LARGE_GOALS = [("concat_and_cast_mha_k", 95.0), ("reshape_and_cache_flash", 93.0)]
FLOOR_MARGIN_US = 0.5
PLAIN_MOVE_PCT = 97.0
TRITON_GEOMEAN = 1.25
PREVIOUS_BAND = 1.05
# After a producer, T <= 128 (docs/dev/targets.md).
CONTEXT_MAX_TOKENS = 128
CONTEXT_TRITON_GEOMEAN = 1.5
CONTEXT_PLAIN_MOVE_US = 0.3


def peer_key(r):
    shape = r["num_heads"] if r["kernel"].startswith("concat") else f"{r['num_heads']}:{r['head_dim']}"
    return (r["kernel"], shape, r["in_dtype"], r["out_dtype"], r["num_tokens"])


def target_row(label, cases, holds, worst, value, extra=""):
    """One target's table row over `cases`, (x, row) pairs: how many hold (`holds(x)`), the case
    `worst` (min or max) picks by x, and that case's `value(x)`."""
    x, r = worst(cases, key=lambda c: c[0])
    ok = sum(bool(holds(v)) for v, _ in cases)
    print(f"| {label} | {ok}/{len(cases)} hold{extra} | {pr.shape_name(r)} T={r['num_tokens']} | "
          f"{value(x)} | {'yes' if ok == len(cases) else 'no'} |")


def unrotated_targets(rows, opt, small, l2, floor, peak, peers):
    shape_name = pr.shape_name
    print("| target | cases | worst case | value | holds |")
    print("|---|---|---|---|---|")
    for kernel, goal in LARGE_GOALS:
        large = [r for r in opt if r["kernel"] == kernel and float(r["bytes"]) >= 4 * l2]
        if large:
            target_row(f"{kernel} large ≥ {goal:.0f}% of copy peak",
                       [(float(r["pct_of_measured_peak"]), r) for r in large],
                       lambda x: x >= goal, min, lambda x: pr.against(x, goal))
    if floor and small:
        over = [r for r in small if float(r["median_us"]) > floor + FLOOR_MARGIN_US]
        # Misses whose bytes alone take more than the margin at the measured copy peak.
        heavy = sum(float(r["bytes"]) / (peak * 1e3) > FLOOR_MARGIN_US for r in over) if peak else 0
        w = max(small, key=lambda r: float(r["median_us"]) - floor)
        print(f"| T ≤ 128 within {FLOOR_MARGIN_US} µs of the launch floor ({floor:.2f} µs) | "
              f"{len(small) - len(over)}/{len(small)} hold ({heavy} misses move more than "
              f"{FLOOR_MARGIN_US} µs of bytes at the copy peak) | {shape_name(w)} T={w['num_tokens']} | "
              f"{float(w['median_us']):.2f} µs | {'yes' if not over else 'no'} |")
    if peers:
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
            pairs.setdefault(tuple(r[c] for c in pr.shape_columns() + ["num_tokens"]), {})[r["variant"]] = r
    ratios = [(float(v["optimized"]["median_us"]) / float(v["seed_port"]["median_us"]), v["optimized"])
              for v in pairs.values() if "optimized" in v and "seed_port" in v]
    if ratios:
        target_row("optimized never slower than seed_port", ratios, lambda x: x <= 1.0, max,
                   lambda x: f"{x:.2f}x seed_port's time")


def floor_misses(opt, small, floor, peak, bounds=None):
    """The T <= 128 misses against a latency + transfer model: the same shape's T=1 time (one
    launch, one dependent read, one write) plus the case's bytes at the measured copy peak; with
    `bounds`, also the fastest plain write and move of the same bytes (`kvbench bounds`)."""
    shape_name = pr.shape_name
    bar = floor + FLOOR_MARGIN_US
    over = [r for r in small if float(r["median_us"]) > bar]
    if not over:
        return
    one = {tuple(r[c] for c in pr.shape_columns()): float(r["median_us"]) for r in opt if r["num_tokens"] == "1"}
    extra = " write floor µs | move floor µs |" if bounds is not None else ""
    print(f"\n| T ≤ 128 miss (bar {bar:.2f} µs) | T | µs | T=1 µs | bytes at copy peak µs | "
          "T=1 + bytes µs | µs over T=1 + bytes |" + extra)
    print("|---|---|---|---|---|---|---|" + "---|---|" * (bounds is not None))
    bound, excess, faster, no_t1 = 0, [], 0, 0
    found, write_over, move_over, bars = 0, 0, 0, set()
    for r in sorted(over, key=lambda r: (shape_name(r), int(r["num_tokens"]))):
        t1 = one.get(tuple(r[c] for c in pr.shape_columns()))
        us, xfer = float(r["median_us"]), float(r["bytes"]) / (peak * 1e3)
        cells = ""
        if bounds is not None:
            b = bounds.get(tuple(r[c] for c in kvbench_schema.case_key_columns()))
            cells = " | |"
            if b:
                found += 1
                own_bar = float(b["launch_floor_us"]) + FLOOR_MARGIN_US
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


def triton_targets(speedup, geomean_target, ties=False):
    """The two rows against the seed's Triton: faster on every case (a tie is not; `ties` counts
    them), and the geometric mean of Triton's time over optimized's at least `geomean_target`."""
    tied = f" ({sum(x == 1.0 for x, _ in speedup)} tie)" if ties else ""
    target_row("faster than the seed's Triton", speedup, lambda x: x > 1.0, min, lambda x: f"{x:.2f}x",
               tied)
    g = pr.geomean([x for x, _ in speedup])
    print(f"| geometric mean over the seed's Triton at least {geomean_target}x | "
          f"{len(speedup)} cases | | {g:.3f}x | {'yes' if g >= geomean_target else 'no'} |")


def per_case_targets(compared, l2, previous_given):
    """Each optimized case against its plain-move reference, the seed's Triton and the previous
    run."""
    pct = [(100 * b / us, r) for r, us, b, _, _, _ in compared if b]
    speedup = [(t / us, r) for r, us, _, t, _, _ in compared if t]
    slower_large = [(us / p, r) for r, us, _, _, p, _ in compared if p and float(r["bytes"]) >= 4 * l2]
    print("\n| target (optimized, per case) | cases | worst case | value | holds |")
    print("|---|---|---|---|---|")
    if pct:
        target_row(f"at least {PLAIN_MOVE_PCT:.0f}% of its plain-move reference", pct,
                   lambda x: x >= PLAIN_MOVE_PCT, min, lambda x: pr.against(x, PLAIN_MOVE_PCT))
    if speedup:
        triton_targets(speedup, TRITON_GEOMEAN)
    if previous_given:
        band = round(100 * (PREVIOUS_BAND - 1))
        if slower_large:
            target_row(f"large (>= 4x L2) same or faster than the previous run ({band}%)",
                       slower_large, lambda x: x <= PREVIOUS_BAND, max, lambda x: f"{x:.3f}x its time")
        else:
            print(f"| large (>= 4x L2) same or faster than the previous run ({band}%) | "
                  "0 cases matched | | | |")


def mean_speedups(compared, triton):
    """(Triton's mean µs over optimized's, row) per case where both rows have a mean: the mean of
    a case's samples resolves differences below the timer's step, which medians tie on
    (docs/measurement.md, "Resolution")."""
    key_columns = [c for c in kvbench_schema.case_key_columns() if c != "variant"]
    tri = pr.timed(triton, "triton", ignore_variant=True, column="mean_us")
    out = []
    for r, _, _, _, _, _ in compared:
        t = tri.get(tuple(r[c] for c in key_columns))
        if t and r.get("mean_us"):
            out.append((t / float(r["mean_us"]), r))
    return out


def context_targets(compared, triton):
    """T <= 128 after a producer: each case against the seed's Triton and its plain-move reference,
    both timed in the same context."""
    compared = [c for c in compared if int(c[0]["num_tokens"]) <= CONTEXT_MAX_TOKENS]
    speedup = [(t / us, r) for r, us, _, t, _, _ in compared if t]
    over = [(us - b, r) for r, us, b, _, _, _ in compared if b]
    print(f"\n| target (optimized after a producer, T ≤ {CONTEXT_MAX_TOKENS}) | cases | worst case | "
          "value | holds |")
    print("|---|---|---|---|---|")
    if speedup:
        triton_targets(speedup, CONTEXT_TRITON_GEOMEAN, ties=True)
    by_mean = mean_speedups(compared, triton) if triton else []
    if by_mean:
        target_row("faster than the seed's Triton, by the mean of the samples", by_mean,
                   lambda x: x > 1.0, min, lambda x: f"{x:.3f}x")
        g = pr.geomean([x for x, _ in by_mean])
        print(f"| geometric mean over the seed's Triton at least {CONTEXT_TRITON_GEOMEAN}x, by the mean of "
              f"the samples | {len(by_mean)} cases | | "
              f"{g:.3f}x | {'yes' if g >= CONTEXT_TRITON_GEOMEAN else 'no'} |")
    if over:
        target_row(f"within {CONTEXT_PLAIN_MOVE_US} µs of its plain-move reference", over,
                   lambda x: x <= CONTEXT_PLAIN_MOVE_US, max, lambda x: f"{x:+.3f} µs")
    # Bounds CSVs with `plain_move_mean_us` (the plain kernels' lowest mean) judge it by the means
    # as well: medians differ by whole timer steps.
    over_mean = [(float(r["mean_us"]) - float(b["plain_move_mean_us"]), r)
                 for r, _, _, _, _, b in compared
                 if b and b.get("plain_move_mean_us") and r.get("mean_us")]
    if over_mean:
        target_row(f"within {CONTEXT_PLAIN_MOVE_US} µs of its plain-move reference, by the mean of "
                   "the samples", over_mean, lambda x: x <= CONTEXT_PLAIN_MOVE_US, max,
                   lambda x: f"{x:+.3f} µs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--bounds")
    ap.add_argument("--triton")
    ap.add_argument("--previous")
    args = ap.parse_args()
    rows, meta = pr.load(args.csv)
    l2 = float(meta.get("device", {}).get("l2_bytes", 60 * 2**20))
    floor = meta.get("launch_floor_us", {}).get("graph", {}).get("median_us")
    peak = meta.get("measured_peak_gbps")
    print(pr.header_line(rows, meta))
    opt = [r for r in rows if r["variant"] == "optimized" and r["status"] == "passed"]
    small = [r for r in opt if int(r["num_tokens"]) <= 128]
    bounds = pr.read_bounds(args.bounds) if args.bounds else None
    settings = meta.get("settings", {})
    if settings.get("context") == "after_producer":
        triton = pr.read_rows(args.triton, "triton") if args.triton else None
        context_targets(pr.compare(opt, bounds, triton, None), triton)
        return 0
    # The unrotated targets judge an unrotated run; a rotated one is judged per case only.
    rotate = settings.get("rotate", 1)
    if rotate in (None, 1, "1"):
        unrotated_targets(rows, opt, small, l2, floor, peak, args.peers)
        if floor and peak and small:
            floor_misses(opt, small, floor, peak, bounds)
    if bounds is not None or args.triton or args.previous:
        triton = pr.read_rows(args.triton, "triton") if args.triton else None
        previous = pr.read_rows(args.previous, "previous") if args.previous else None
        per_case_targets(pr.compare(opt, bounds, triton, previous), l2, previous is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
