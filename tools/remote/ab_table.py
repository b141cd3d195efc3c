#!/usr/bin/env python3
"""Markdown table of an A/B run (tools/remote/gpu_ab.sh): kvbench builds on the same config and board.

usage: tools/remote/ab_table.py DIR NAME [NAME ...]

Reads DIR/NAME.ROUND.csv for every NAME (one or more rounds each). Per case: each build's time
(the geometric mean of its rounds' medians, µs), its ratio to the first build's, and the round
spread (largest/smallest median of the case in any one build, minus 1: the noise to read the
ratios against). Per sweep and variant, and overall: the geometric mean of each build's ratio to
the first (seed_port rows, unchanged by a kernel experiment, would pull a mixed mean toward 1).
The case key comes from the kvbench binary ($KVBENCH, else build/kvbench; scripts/kvbench_schema.py).
Exit status 1 when a case is not `passed` in some run or missing from a build, 2 on bad input.
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402

# Label order: kernel, sweep and variant first, then the rest of the case key.
FIRST = ["kernel", "sweep", "variant"]
# Values left out of a case's label: the axes' defaults (docs/sweeps.md), and the rope_dim
# of 0 that the cache write's rows carry.
DEFAULTS = {"layout": "nhd", "scale": "none", "swa": "false", "kv_interleaved": "false",
            "strides": "contiguous", "slots": "random", "rope_dim": "0"}


def load(path, axes):
    """The rows of a result CSV, read as kvbench reads it (kvbench_schema.read_result_rows)."""
    fieldnames, rows = kvbench_schema.read_result_rows(path)
    if not rows:
        raise InputError(f"{path}: no rows")
    missing = [c for c in axes + ["status", "median_us"] if c not in fieldnames]
    if missing:
        raise InputError(f"{path}: no column {missing[0]}")
    kvbench_schema.check_numbers(path, rows, ("median_us",))
    return [row for _, row in rows]


def label(r, axes):
    short = FIRST + [c for c in axes if c not in FIRST]
    return " ".join(kvbench_operations.name(r) if c == "kernel" else f"{c}={r[c]}"
                    for c in short if r[c] != "" and DEFAULTS.get(c) != r[c])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder, names = argv[1], argv[2:]
    try:  # the case key, as `kvbench compare` matches rows
        axes = kvbench_schema.case_key_columns()
    except kvbench_schema.SchemaError as e:
        print(f"ab_table.py: {e}", file=sys.stderr)
        return 2
    times, order, labels, groups, runs = {}, [], {}, {}, []
    bad = []
    for name in names:
        pattern = re.compile(re.escape(name) + r"\.(\d+)\.csv")
        try:
            rounds = sorted((int(m.group(1)), f) for f in os.listdir(folder)
                            if (m := pattern.fullmatch(f)))
        except OSError as e:
            print(f"ab_table.py: {e}", file=sys.stderr)
            return 2
        paths = [os.path.join(folder, f) for _, f in rounds]
        if not paths:
            print(f"ab_table.py: no {name}.N.csv in {folder}", file=sys.stderr)
            return 2
        times[name] = {}
        for p in paths:
            try:
                rows = load(p, axes)
            except InputError as e:
                print(f"ab_table.py: {e}", file=sys.stderr)
                return 2
            keys = [tuple(r[c] for c in axes) for r in rows]
            runs.append((os.path.basename(p), set(keys)))
            for key, r in zip(keys, rows):
                if key not in labels:
                    order.append(key)
                    labels[key], groups[key] = label(r, axes), (r["sweep"], r["variant"])
                if r["status"] != "passed" or not r["median_us"]:
                    bad.append(f"{os.path.basename(p)}: {labels[key]}: {r['status']}")
                    continue
                times[name].setdefault(key, []).append(float(r["median_us"]))
    for run, keys in runs:
        bad += [f"{run}: {labels[k]}: missing" for k in order if k not in keys]
    base = names[0]
    print("| case | " + " | ".join(names + [f"{n}/{base}" for n in names[1:]]) + " | spread |")
    print("|---|" + "---:|" * (2 * len(names)))
    ratios = {n: {} for n in names[1:]}
    for key in order:
        cells, spread = [], 0.0
        for n in names:
            ts = times[n].get(key)
            cells.append(f"{geomean(ts):.3f}" if ts else "–")
            if ts:
                spread = max(spread, max(ts) / min(ts) - 1)
        b = times[base].get(key)
        for n in names[1:]:
            t = times[n].get(key)
            if b and t:
                ratios[n][key] = geomean(t) / geomean(b)
                cells.append(f"{ratios[n][key]:.3f}")
            else:
                cells.append("–")
                bad.append(f"{labels[key]}: not timed in {base if not b else n}")
        print(f"| {labels[key]} | " + " | ".join(cells) + f" | {100 * spread:.1f}% |")
    if len(names) > 1:
        print()
        print("| sweep | variant | cases | " + " | ".join(f"{n}/{base}" for n in names[1:]) + " |")
        print("|---|---|---:|" + "---:|" * (len(names) - 1))
        for group in list(dict.fromkeys(groups[k] for k in order)) + [None]:
            keys = [k for k in order if group is None or groups[k] == group]
            cells = [f"{geomean([ratios[n][k] for k in keys if k in ratios[n]]):.4f}"
                     for n in names[1:]]
            sweep, variant = group or ("**all**", "")
            print(f"| {sweep} | {variant} | {len(keys)} | " + " | ".join(cells) + " |")
    for line in dict.fromkeys(bad):
        print(f"not passed or missing: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
