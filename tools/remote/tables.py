#!/usr/bin/env python3
"""The tables of the GPU-host runs, from what they left in a folder.

  tables.py ab DIR NAME [NAME ...]   tools/remote/gpu_ab.sh's builds side by side (markdown)
  tables.py delays PLAIN.csv PCT slower|faster
                                      the KVBENCH_PLANT_DELAY_NS that plants PCT% into each case of
                                      PLAIN.csv (rows in case order) for `proof.sh gate`
  tables.py gate WORKDIR              `proof.sh gate`'s table
  tables.py context OUT_DIR           `proof.sh context`'s tables

ab reads DIR/NAME.ROUND.csv for every NAME (one or more rounds each). Per case: each build's time
(the geometric mean of its rounds' medians, µs), its ratio to the first build's, and the round
spread (largest/smallest median of the case in any one build, minus 1: the noise to read the
ratios against). Per sweep and variant, and overall: the geometric mean of each build's ratio to
the first (seed_port rows, unchanged by a kernel experiment, would pull a mixed mean toward 1).
The case key comes from the kvbench binary ($KVBENCH, else build/kvbench). Exit status 1 when a
case is not `passed` in some run or missing from a build.

delays: slower plants PCT% of each case's median; faster, the delay the base build carries so
that the plain kernel is PCT% faster than it. An untimed row gets no delay.

context: (1) the cupti timer against the event timer and Nsight Compute
(configs/studies/cupti.yaml); (2) configs/studies/context.yaml: median µs per case, per context
and variant, with the plain-move reference of `kvbench bounds` in the same context; (3)
perf.yaml's T <= 128 cases after a producer: the seed's Triton over optimized. Whatever is
missing is left out.

CSVs are read as kvbench reads them (scripts/kvbench_schema.py; rows named by their operation,
scripts/kvbench_operations.py): a bad one is one line on stderr naming the file, and exit 2, as
is a bad command line.
"""
import csv
import glob
import inspect
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402


def rows(path):
    """The rows of a CSV kvbench wrote (kvbench_schema.read_result_rows); [] when there is none."""
    if not os.path.exists(path):
        return []
    return [row for _, row in kvbench_schema.read_result_rows(path)[1]]


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


# ---- ab: builds side by side (tools/remote/gpu_ab.sh) ----

# Label order: kernel, sweep and variant first, then the rest of the case key.
FIRST = ["kernel", "sweep", "variant"]
# Values left out of a case's label: the axes' defaults (docs/sweeps.md), and the rope_dim
# of 0 that the cache write's rows carry.
DEFAULTS = {"layout": "nhd", "scale": "none", "swa": "false", "kv_interleaved": "false",
            "strides": "contiguous", "slots": "random", "rope_dim": "0"}


def load_round(path, axes):
    """One round's rows, with every column the table needs and numbers where numbers belong."""
    fieldnames, numbered = kvbench_schema.read_result_rows(path)
    if not numbered:
        raise InputError(f"{path}: no rows")
    missing = [c for c in axes + ["status", "median_us"] if c not in fieldnames]
    if missing:
        raise InputError(f"{path}: no column {missing[0]}")
    kvbench_schema.check_numbers(path, numbered, ("median_us",))
    return [row for _, row in numbered]


def label(r, axes):
    short = FIRST + [c for c in axes if c not in FIRST]
    return " ".join(kvbench_operations.name(r) if c == "kernel" else f"{c}={r[c]}"
                    for c in short if r[c] != "" and DEFAULTS.get(c) != r[c])


def ab(folder, name, *more):
    names = (name,) + more
    try:  # the case key, as `kvbench compare` matches rows
        axes = kvbench_schema.case_key_columns()
    except kvbench_schema.SchemaError as e:
        raise InputError(str(e))
    times, order, labels, groups, runs, bad = {}, [], {}, {}, [], []
    for name in names:
        pattern = re.compile(re.escape(name) + r"\.(\d+)\.csv")
        try:
            rounds = sorted((int(m.group(1)), f) for f in os.listdir(folder)
                            if (m := pattern.fullmatch(f)))
        except OSError as e:
            raise InputError(str(e))
        if not rounds:
            raise InputError(f"no {name}.N.csv in {folder}")
        times[name] = {}
        for p in [os.path.join(folder, f) for _, f in rounds]:
            round_rows = load_round(p, axes)
            keys = [tuple(r[c] for c in axes) for r in round_rows]
            runs.append((os.path.basename(p), set(keys)))
            for key, r in zip(keys, round_rows):
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
    print("| case | " + " | ".join(list(names) + [f"{n}/{base}" for n in names[1:]]) + " | spread |")
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


# ---- delays and gate: `proof.sh gate` (tools/remote/recipes/gate.sh) ----

def delays(plain, pct, direction):
    p = float(pct) / 100
    out = []
    for i, (line, r) in enumerate(kvbench_schema.read_result_rows(plain)[1]):
        us = kvbench_schema.number(r.get("median_us") or "", plain, line, "median_us") or 0
        ns = p * us * 1000 if direction == "slower" else p / (1 - p) * us * 1000
        out.append("%d:%d" % (i, round(ns)))
    print(",".join(out))
    return 0


def null_table(w):
    lines = ["| no false alarm: the build against itself | cases | same | slower | faster | "
             "ambiguous | ambiguous before re-measurement |", "|---|---|---|---|---|---|---|"]
    for name, what in (("null_quick", "quick_perf.yaml, events"),
                       ("null_decode", "perf.yaml T <= 128, after_producer, CUPTI")):
        r = rows(os.path.join(w, name + ".csv"))
        if not r:
            continue
        first = min(int(x["rounds"]) for x in r)
        n = {v: sum(x["verdict"] == v for x in r) for v in ("same", "slower", "faster", "ambiguous")}
        again = sum(int(x["rounds"]) > first for x in r)
        lines.append("| %s (%d rounds) | %d | %d | %d | %d | %d | %d (%.1f%%) |" % (
            what, first, len(r), n["same"], n["slower"], n["faster"], n["ambiguous"], again,
            100.0 * again / max(1, len(r))))
    return lines


def power_table(w):
    lines = []
    for path in sorted(glob.glob(os.path.join(w, "power_*.csv"))):
        ctx, pct, direction = os.path.basename(path)[len("power_"):-len(".csv")].rsplit("_", 2)
        cells = []
        for r in rows(path):
            tokens = r["description"].split("T=")[1].split()[0]
            ratio = float(r["ratio"]) if r["ratio"] not in ("", "0") else 0
            cells.append("T=%s %s %+.1f%%" % (tokens, r["verdict"], 100 * (ratio - 1)))
        lines.append((ctx, int(pct), direction, cells))
    lines.sort(key=lambda x: (x[0], x[2] != "slower", x[1]))
    out = ["| planted | context | per case: verdict, measured change |", "|---|---|---|"]
    for ctx, pct, direction, cells in lines:
        out.append("| %d%% %s | %s | %s |" % (pct, direction, ctx, "; ".join(cells)))
    return out


def gate(w):
    out = []
    board = os.path.join(w, "board.txt")
    if os.path.exists(board):
        out.append("board: " + open(board).read().strip())
    notes = os.path.join(w, "notes.txt")
    if os.path.exists(notes):
        out += ["    " + line.rstrip() for line in open(notes) if not line.startswith("power ")]
    out += [""] + null_table(w) + [""] + power_table(w)
    print("\n".join(out))
    return 0


# ---- context: `proof.sh context` (tools/remote/recipes/context.sh) ----

CONTEXTS = ("back_to_back", "cold", "after_producer", "layer")
VARIANTS = ("triton", "seed_port", "optimized")
# The case-key columns of a result row but the variant (`kvbench schema --columns`), which a
# `kvbench bounds` CSV has too; listed here, as this runs where no kvbench binary is built.
CASE = ("kernel", "sweep", "num_tokens", "num_heads", "head_dim", "rope_dim", "block_size",
        "in_dtype", "out_dtype", "layout", "scale", "swa", "kv_interleaved", "strides", "slots")


def shape(r):
    """The row's shape as its operation names it (kvbench_operations.brief)."""
    return kvbench_operations.brief(r, CASE)


def key(r):
    return tuple(r.get(c, "") for c in CASE)


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else float("nan")


def faster_tie_slower(ratios):
    """optimized faster / tie / slower, from Triton's time over optimized's."""
    return (f"{sum(r > 1 for r in ratios)} / {sum(r == 1 for r in ratios)} / "
            f"{sum(r < 1 for r in ratios)}")


def ncu_us(path):
    """Median gpu__time_duration.sum (ns in base units) of the kernels ncu printed, in µs."""
    if not os.path.exists(path):
        return None
    header, values = None, []
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
            try:
                values.append(float(fields[header.index("gpu__time_duration.sum")].replace(",", "")) / 1000)
            except ValueError:
                pass  # the units row
    return median(values) if values else None


def cupti_windows(path):
    """The window by events per launch of each case, in order, from a run's `kvbench: cupti:` lines."""
    if not os.path.exists(path):
        return []
    pat = re.compile(r"kvbench: cupti: (.*): launch ([-\d.]+) us, gap before it ([-\d.]+) us, "
                     r"replay span ([-\d.]+) us, producer ([-\d.]+) us, window by events "
                     r"([-\d.]+) us per launch")
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                out[m.group(1)] = float(m.group(6))
    return list(out.values())


def crosscheck(d):
    ev, cu = rows(os.path.join(d, "xc_events.csv")), rows(os.path.join(d, "xc_cupti.csv"))
    if not ev or not cu:
        return
    windows = cupti_windows(os.path.join(d, "xc_cupti.log"))
    print("## cupti timer cross-checks (configs/studies/cupti.yaml)\n")
    print("| case | events µs/launch | cupti launch µs | cupti span/launches | cupti windows by "
          "events µs/launch | ncu µs | cupti/events | cupti/ncu |")
    print("|---|---|---|---|---|---|---|---|")
    fmt = lambda v: f"{v:.3f}" if v is not None else ""  # noqa: E731
    for i, (e, c) in enumerate(zip(ev, cu)):
        name = f"{i} {shape(e)} T={e['num_tokens']} {e['variant']}"
        if e["status"] != "passed" or c["status"] != "passed":
            print(f"| {name} | {e['status']} | {c['status']} {c['reason'][:60]} | | | | | |")
            continue
        em, cm = float(e["median_us"]), float(c["median_us"])
        span = float(c["span_us"]) / int(c["launches_per_sample"]) if c.get("span_us") else None
        win = windows[i] if i < len(windows) else None
        n = ncu_us(os.path.join(d, f"ncu_{i}.log")) if i < 3 else None
        print(f"| {name} | {em:.3f} | {cm:.3f} | {fmt(span)} | {fmt(win)} | {fmt(n)} | "
              f"{100 * (cm / em - 1):+.2f}% | {(f'{100 * (cm / n - 1):+.2f}%' if n else '')} |")
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
        ratios = [t[(ctx, "triton")] / t[(ctx, "optimized")] for t in table.values()
                  if (ctx, "triton") in t and (ctx, "optimized") in t]
        if not ratios:
            continue
        gaps = [t[(ctx, "optimized")] - bounds[k][ctx] for k, t in table.items()
                if ctx in bounds.get(k, {}) and (ctx, "optimized") in t]
        print(f"| {ctx} | {geomean(ratios):.3f} ({len(ratios)}) | {faster_tie_slower(ratios)} | "
              + (f"{max(gaps):.3f} |" if gaps else "|"))
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
    for kernel in sorted({k[0] for k in pairs}) + [None]:
        ratios = [v["triton"] / v["optimized"] for k, v in pairs.items() if kernel in (None, k[0])]
        print(f"| {kernel or 'all'} | {len(ratios)} | {geomean(ratios):.3f} | "
              f"{faster_tie_slower(ratios)} |")
    print()


def context(d="results/context_proof"):
    crosscheck(d)
    contexts(d)
    after_producer(d)
    return 0


COMMANDS = {"ab": ab, "delays": delays, "gate": gate, "context": context}


def main(argv):
    command = COMMANDS.get(argv[1]) if len(argv) > 1 else None
    try:  # a command that does not take these arguments: the usage, exit 2
        inspect.signature(command).bind(*argv[2:])
    except (TypeError, ValueError):
        print("usage:\n" + "\n".join(__doc__.splitlines()[2:8]), file=sys.stderr)
        return 2
    try:
        return command(*argv[2:])
    except InputError as e:
        print(f"tables.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
