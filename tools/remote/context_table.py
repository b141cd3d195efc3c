#!/usr/bin/env python3
"""The short tables of tools/remote/context_proof.sh, from what it left in OUT_DIR.

  context_table.py OUT_DIR

(1) the cupti timer against the event timer and Nsight Compute (configs/studies/cupti.yaml);
(2) configs/studies/context.yaml: median µs per case, per context and variant, with the
    plain-move reference of `kvbench bounds` in the same context; (3) perf.yaml's T <= 128 cases
after a producer: the seed's Triton over optimized. Whatever is missing is left out. CSVs are
read as kvbench reads them (scripts/kvbench_schema.py): a bad one is one line on stderr naming
the file, and exit 2. Rows are named by their operation (scripts/kvbench_operations.py).
"""
import csv
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402

CONTEXTS = ("back_to_back", "cold", "after_producer", "layer")
VARIANTS = ("triton", "seed_port", "optimized")


def rows(path):
    """The rows of a CSV kvbench wrote (kvbench_schema.read_result_rows); [] when there is none."""
    if not os.path.exists(path):
        return []
    return [row for _, row in kvbench_schema.read_result_rows(path)[1]]


def shape(r):
    """The row's shape as its operation names it (kvbench_operations.brief)."""
    return kvbench_operations.brief(r, CASE)


# The case-key columns of a result row but the variant (`kvbench schema --columns`), which a
# `kvbench bounds` CSV has too; listed here, as this runs where no kvbench binary is built.
CASE = ("kernel", "sweep", "num_tokens", "num_heads", "head_dim", "rope_dim", "block_size",
        "in_dtype", "out_dtype", "layout", "scale", "swa", "kv_interleaved", "strides", "slots")


def key(r):
    return tuple(r.get(c, "") for c in CASE)


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else float("nan")


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def ncu_us(path):
    """Median gpu__time_duration.sum (ns in base units) of the kernels ncu printed, in µs."""
    if not os.path.exists(path):
        return None, ""
    header, values, name = None, [], ""
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith('"'):
                continue
            fields = next(csv.reader([line]))
            if header is None:
                if "gpu__time_duration.sum" in fields:
                    header = fields
                continue
            if len(fields) != len(header):
                continue
            v = fields[header.index("gpu__time_duration.sum")].replace(",", "")
            try:
                values.append(float(v) / 1000.0)
                name = fields[header.index("Kernel Name")] if "Kernel Name" in header else name
            except ValueError:
                pass  # the units row
    return (median(values) if values else None), f"{len(values)} kernels, {name[:40]}"


def cupti_lines(path):
    """CASE -> (window by events per launch, span) from a run's `kvbench: cupti:` lines."""
    out = {}
    if not os.path.exists(path):
        return out
    pat = re.compile(r"kvbench: cupti: (.*): launch ([-\d.]+) us, gap before it ([-\d.]+) us, "
                     r"replay span ([-\d.]+) us, producer ([-\d.]+) us, window by events "
                     r"([-\d.]+) us per launch")
    with open(path, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                out[m.group(1)] = float(m.group(6))
    return out


def crosscheck(d):
    ev, cu = rows(os.path.join(d, "xc_events.csv")), rows(os.path.join(d, "xc_cupti.csv"))
    if not ev or not cu:
        return
    windows = list(cupti_lines(os.path.join(d, "xc_cupti.log")).values())
    print("## cupti timer cross-checks (configs/studies/cupti.yaml)\n")
    print("| case | events µs/launch | cupti launch µs | cupti span/launches | cupti windows by "
          "events µs/launch | ncu µs | cupti/events | cupti/ncu |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (e, c) in enumerate(zip(ev, cu)):
        if e["status"] != "passed" or c["status"] != "passed":
            print(f"| {i} {shape(e)} T={e['num_tokens']} {e['variant']} | {e['status']} | "
                  f"{c['status']} {c['reason'][:60]} | | | | | |")
            continue
        em, cm = float(e["median_us"]), float(c["median_us"])
        span = float(c["span_us"]) / int(c["launches_per_sample"]) if c.get("span_us") else None
        win = windows[i] if i < len(windows) else None
        n, _ = ncu_us(os.path.join(d, f"ncu_{i}.log")) if i < 3 else (None, "")
        fmt = lambda v: f"{v:.3f}" if v is not None else ""
        print(f"| {i} {shape(e)} T={e['num_tokens']} {e['variant']} | {em:.3f} | {cm:.3f} | "
              f"{fmt(span)} | {fmt(win)} | {fmt(n)} | {100 * (cm / em - 1):+.2f}% | "
              f"{(f'{100 * (cm / n - 1):+.2f}%' if n else '')} |")
    print()


def contexts(d):
    table, bounds = {}, {}
    for ctx in CONTEXTS:
        for r in rows(os.path.join(d, f"{ctx}.csv")):
            if r["status"] == "passed" and r.get("median_us"):
                table.setdefault(key(r), {})[(ctx, r["variant"])] = float(r["median_us"])
                table[key(r)]["name"] = f"{shape(r)} T={r['num_tokens']}"
        for b in rows(os.path.join(d, f"bounds_{ctx}.csv")):
            bounds.setdefault(key(b), {})[ctx] = float(b["plain_move_us"])
    if not table:
        return
    print("## configs/studies/context.yaml, cupti timer: median µs (triton / seed_port / "
          "optimized / plain move)\n")
    print("| case | " + " | ".join(CONTEXTS) + " |")
    print("|---|" + "---|" * len(CONTEXTS))
    for k in sorted(table):
        cells = []
        for ctx in CONTEXTS:
            v = [table[k].get((ctx, var)) for var in VARIANTS] + [bounds.get(k, {}).get(ctx)]
            cells.append(" / ".join(f"{x:.2f}" if x is not None else "-" for x in v))
        print(f"| {table[k]['name']} | " + " | ".join(cells) + " |")
    print("\n| context | Triton / optimized (geomean) | optimized faster / tie / slower | "
          "optimized − plain move, max µs |")
    print("|---|---|---|---|")
    for ctx in CONTEXTS:
        pairs = [(t[(ctx, "triton")], t[(ctx, "optimized")]) for t in table.values()
                 if (ctx, "triton") in t and (ctx, "optimized") in t]
        if not pairs:
            continue
        over = [bounds.get(k, {}).get(ctx) for k in table]
        gaps = [table[k][(ctx, "optimized")] - b for k, b in zip(table, over)
                if b is not None and (ctx, "optimized") in table[k]]
        print(f"| {ctx} | {geomean([a / b for a, b in pairs]):.3f} ({len(pairs)}) | "
              f"{sum(b < a for a, b in pairs)} / {sum(a == b for a, b in pairs)} / "
              f"{sum(b > a for a, b in pairs)} | {max(gaps):.3f} |" if gaps else
              f"| {ctx} | {geomean([a / b for a, b in pairs]):.3f} ({len(pairs)}) | "
              f"{sum(b < a for a, b in pairs)} / {sum(a == b for a, b in pairs)} / "
              f"{sum(b > a for a, b in pairs)} | |")
    print()


def after_producer(d):
    got = {}
    for r in rows(os.path.join(d, "after_producer_perf.csv")):
        if r["status"] == "passed" and r.get("median_us"):
            got.setdefault(key(r), {})[r["variant"]] = float(r["median_us"])
    pairs = {k: v for k, v in got.items() if "triton" in v and "optimized" in v}
    if not pairs:
        return
    print("## perf.yaml T <= 128 after a producer, cupti timer: Triton / optimized\n")
    print("| kernel | cases | geomean | optimized faster / tie / slower |")
    print("|---|---|---|---|")
    for kernel in sorted({k[0] for k in pairs}):
        ratios = [v["triton"] / v["optimized"] for k, v in pairs.items() if k[0] == kernel]
        print(f"| {kernel} | {len(ratios)} | {geomean(ratios):.3f} | "
              f"{sum(r > 1 for r in ratios)} / {sum(r == 1 for r in ratios)} / "
              f"{sum(r < 1 for r in ratios)} |")
    allr = [v["triton"] / v["optimized"] for v in pairs.values()]
    print(f"| all | {len(allr)} | {geomean(allr):.3f} | {sum(r > 1 for r in allr)} / "
          f"{sum(r == 1 for r in allr)} / {sum(r < 1 for r in allr)} |\n")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "results/context_proof"
    try:
        crosscheck(d)
        contexts(d)
        after_producer(d)
    except InputError as e:
        print(f"context_table.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
