#!/usr/bin/env python3
"""Plots of kvbench result CSVs (schemas 1 and 2), rendered headless (Agg) to PNG.

  plot.py bandwidth CSV [CSV...] [--peak-gbps X] [--theoretical-gbps Y] [--out-dir DIR]
      Bandwidth (GB/s) against num_tokens (log x), one panel per shape (every case column but
      num_tokens, variant and sweep), one line per variant (seed_port, optimized, triton, ...).
      Several CSVs are merged: a CUDA run and scripts/triton_baseline.py's rows plot together.
      One PNG per kernel: <DIR>/<first CSV's stem>_bandwidth_<kernel>.png.
  plot.py compare BASELINE.csv CURRENT.csv [--threshold PCT] [--ignore-variant] [--out-dir DIR]
      Current / baseline median time per case (matched by case columns and variant), one bar
      each: <DIR>/<current stem>_vs_<baseline stem>.png. --ignore-variant matches every current
      variant against the baseline's row of the same case (e.g. CUDA against triton).
  plot.py decode CSV [CSV...] [--variants optimized,triton] [--max-tokens N] [--out-dir DIR]
      Per-layer cost of a step: median µs against num_tokens (log-log), one panel per shape
      timed for every listed variant, one line per variant: a rotated kvbench run beside
      triton_baseline.py --rotate on the same config. <DIR>/<first CSV's stem>_decode.png.

DIR defaults to the directory of the (first / current) CSV. Columns are read by name; extra
columns are ignored. The case columns come from the kvbench binary ($KVBENCH, else build/kvbench;
scripts/kvbench_schema.py). Horizontal lines mark the measured copy peak and the theoretical peak:
--peak-gbps / --theoretical-gbps, else the keys `measured_peak_gbps` and
`theoretical_peak_gbps` at the top level of a JSON sidecar `<csv>.json` when it exists.
Exit status: 0 written, 1 bad input (message on stderr), 2 bad command line.
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_schema  # noqa: E402

SCHEMA_VERSIONS = ("1", "2")  # 2 adds buffer_sets; schema-1 rows timed one set


def case_columns():
    """Columns identifying a case: the case key, from the kvbench binary (kvbench_schema.py)."""
    try:
        return kvbench_schema.case_key_columns()
    except kvbench_schema.SchemaError as e:
        raise InputError(f"case key: {e}")


def shape_columns():
    """A shape: the case without the token count, the variant (one line each) and the sweep."""
    return [c for c in case_columns() if c not in ("num_tokens", "variant", "sweep")]


class InputError(Exception):
    pass


def read_rows(path):
    """Rows of a result CSV as dicts; refuses other schemas and missing columns."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            needed = ["schema_version", "status", "median_us", "gbps"] + case_columns()
            missing = [c for c in needed if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{path}:1: missing column '{missing[0]}'")
            rows = []
            for row in reader:
                line = reader.line_num
                if row["schema_version"] not in SCHEMA_VERSIONS:
                    raise InputError(f"{path}:{line}: schema_version '{row['schema_version']}', "
                                     f"this script reads {', '.join(SCHEMA_VERSIONS)}")
                if None in row.values():
                    raise InputError(f"{path}:{line}: too few columns (truncated line?)")
                row["_line"] = line
                rows.append(row)
            return rows
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")


def number(row, column, path):
    text = row[column]
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{path}:{row['_line']}: column '{column}': '{text}' is not a number")
    return v if math.isfinite(v) else None


def peaks(csv_path, peak, theoretical):
    """(measured, theoretical) GB/s: flags first, else the sidecar <csv>.json."""
    sidecar = csv_path + ".json"
    if (peak is None or theoretical is None) and os.path.exists(sidecar):
        try:
            with open(sidecar) as f:
                meta = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{sidecar}: {e}")
        if isinstance(meta, dict):
            if peak is None and isinstance(meta.get("measured_peak_gbps"), (int, float)):
                peak = float(meta["measured_peak_gbps"])
            if theoretical is None and isinstance(meta.get("theoretical_peak_gbps"), (int, float)):
                theoretical = float(meta["theoretical_peak_gbps"])
    return peak, theoretical


def shape_label(shape):
    s = dict(zip(shape_columns(), shape))
    if s["kernel"] == "concat_and_cast_mha_k":
        text = f"H={s['num_heads']} NOPE={s['head_dim']} ROPE={s['rope_dim']}"
    else:
        text = f"H={s['num_heads']} D={s['head_dim']} BS={s['block_size']} {s['layout']}"
    text += f"\n{s['in_dtype']}->{s['out_dtype']} strides={s['strides']}"
    if s["kernel"] != "concat_and_cast_mha_k":
        text += f" scale={s['scale']} slots={s['slots']}"
        text += " swa" if s["swa"] == "true" else ""
        text += " kv_interleaved" if s["kv_interleaved"] == "true" else ""
    return text


def out_path(out_dir, default_dir, name):
    directory = out_dir if out_dir else (default_dir or ".")
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, name)


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def plot_bandwidth(csv_paths, peak=None, theoretical=None, out_dir=None):
    """Writes one PNG per kernel; returns their paths."""
    peak, theoretical = peaks(csv_paths[0], peak, theoretical)
    # kernel -> shape -> variant -> [(tokens, gbps)]
    series = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    shape_cols = shape_columns()
    for path in csv_paths:
        for row in read_rows(path):
            if row["status"] != "passed":
                continue
            gbps = number(row, "gbps", path)
            tokens = number(row, "num_tokens", path)
            if gbps is None or tokens is None:
                continue
            shape = tuple(row[c] for c in shape_cols)
            series[row["kernel"]][shape][row["variant"]].append((tokens, gbps))
    if not series:
        raise InputError(f"{', '.join(csv_paths)}: no timed rows to plot")

    written = []
    for kernel, shapes in sorted(series.items()):
        n = len(shapes)
        cols = min(4, n)
        rows = math.ceil(n / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(max(4.6 * cols, 7.0), 3.6 * rows + 0.4), squeeze=False)
        variants = sorted({v for per_shape in shapes.values() for v in per_shape})
        colors = {v: plt.cm.tab10(i % 10) for i, v in enumerate(variants)}
        for ax, (shape, per_variant) in zip(axes.flat, sorted(shapes.items())):
            for variant, points in sorted(per_variant.items()):
                points.sort()
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                        label=variant, color=colors[variant])
            if peak:
                ax.axhline(peak, color="black", linestyle="--", linewidth=0.8,
                           label=f"measured copy peak {peak:.0f}")
            if theoretical:
                ax.axhline(theoretical, color="gray", linestyle=":", linewidth=0.8,
                           label=f"theoretical peak {theoretical:.0f}")
            ax.set_xscale("log", base=2)
            ax.set_ylim(bottom=0)
            ax.set_title(shape_label(shape), fontsize=8)
            ax.set_xlabel("num_tokens", fontsize=8)
            ax.set_ylabel("GB/s", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=6, loc="lower right")
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        fig.suptitle(f"{kernel}: bandwidth (logical bytes / median time)", fontsize=11)
        fig.tight_layout(rect=(0, 0, 1, 0.97))  # leave room for the suptitle
        path = out_path(out_dir, os.path.dirname(csv_paths[0]),
                        f"{stem(csv_paths[0])}_bandwidth_{kernel}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def plot_compare(baseline_path, current_path, threshold=5.0, out_dir=None, ignore_variant=False):
    """Current / baseline median per case matched in both; returns the PNG's path."""
    case_cols, shape_cols = case_columns(), shape_columns()

    def timed(path):
        out = {}
        for row in read_rows(path):
            med = number(row, "median_us", path)
            if row["status"] == "passed" and med:
                out[tuple(row[c] for c in case_cols)] = med
        return out

    variant_at = case_cols.index("variant")

    def match(key):
        return key[:variant_at] + key[variant_at + 1:] if ignore_variant else key

    cur = timed(current_path)
    base = {}
    for k, med in timed(baseline_path).items():
        if match(k) in base:
            raise InputError(f"{baseline_path}: two variants of one case; drop --ignore-variant")
        base[match(k)] = med
    keys = [k for k in cur if match(k) in base]
    if not keys:
        raise InputError(f"{current_path}: no timed case in common with {baseline_path}")
    ratios = [cur[k] / base[match(k)] for k in keys]
    band = threshold / 100.0
    colors = ["tab:red" if r > 1 + band else "tab:green" if r < 1 / (1 + band) else "tab:gray"
              for r in ratios]
    labels = []
    for k in keys:
        c = dict(zip(case_cols, k))
        labels.append(f"{c['variant']} {c['sweep']} T={c['num_tokens']} "
                      + shape_label(tuple(c[s] for s in shape_cols)).replace("\n", " "))
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.22 * len(keys) + 1.2)))
    y = range(len(keys))
    ax.barh(list(y), [r - 1 for r in ratios], left=1, color=colors)
    ax.axvline(1, color="black", linewidth=0.8)
    for edge in (1 + band, 1 / (1 + band)):
        ax.axvline(edge, color="gray", linestyle=":", linewidth=0.8)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("current / baseline median time (< 1 is faster)")
    ax.set_title(f"{os.path.basename(current_path)} vs {os.path.basename(baseline_path)} "
                 f"({len(keys)} cases; dotted: ±{threshold:g}%)", fontsize=10)
    fig.tight_layout()
    path = out_path(out_dir, os.path.dirname(current_path),
                    f"{stem(current_path)}_vs_{stem(baseline_path)}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_decode(csv_paths, variants=("optimized", "triton"), max_tokens=None, out_dir=None):
    """Per-layer cost of a step: median µs against num_tokens, one panel per shape, one line per
    variant (e.g. optimized from a rotated kvbench run, triton from triton_baseline.py --rotate on
    the same config). The title says how many buffer sets the rows were timed over (61 sets: one
    DeepSeek-V3 step, each layer writing its own cache). Returns the PNG's path."""
    series = defaultdict(lambda: defaultdict(list))  # shape -> variant -> [(tokens, us)]
    shape_cols = shape_columns()
    sets = set()
    for path in csv_paths:
        for row in read_rows(path):
            if row["status"] != "passed" or row["variant"] not in variants:
                continue
            us, tokens = number(row, "median_us", path), number(row, "num_tokens", path)
            if us is None or tokens is None or (max_tokens and tokens > max_tokens):
                continue
            series[tuple(row[c] for c in shape_cols)][row["variant"]].append((tokens, us))
            sets.add(row.get("buffer_sets") or "1")
    shapes = {k: v for k, v in series.items() if len(v) == len(variants)}  # both sides present
    if not shapes:
        raise InputError(f"{', '.join(csv_paths)}: no shape timed for every one of "
                         f"{', '.join(variants)}")
    n = len(shapes)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(4.6 * cols, 7.0), 3.4 * rows + 0.6),
                             squeeze=False)
    colors = {v: plt.cm.tab10(i % 10) for i, v in enumerate(variants)}
    for ax, (shape, per_variant) in zip(axes.flat, sorted(shapes.items())):
        for variant in variants:
            points = sorted(per_variant[variant])
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                    label=variant, color=colors[variant])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(shape_label(shape), fontsize=8)
        ax.set_xlabel("num_tokens (decode: tokens per step)", fontsize=8)
        ax.set_ylabel("µs per layer", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    counts = sorted(int(x) for x in sets)
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    fig.suptitle(f"per-layer µs of one step (median; {span} buffer sets per case)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    path = out_path(out_dir, os.path.dirname(csv_paths[0]), f"{stem(csv_paths[0])}_decode.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    bw = sub.add_parser("bandwidth", help="bandwidth against num_tokens, per shape")
    bw.add_argument("csv", nargs="+")
    bw.add_argument("--peak-gbps", type=float, help="measured copy peak (GB/s)")
    bw.add_argument("--theoretical-gbps", type=float, help="theoretical peak (GB/s)")
    bw.add_argument("--out-dir")
    cmp_ = sub.add_parser("compare", help="current / baseline median per case")
    cmp_.add_argument("baseline")
    cmp_.add_argument("current")
    cmp_.add_argument("--threshold", type=float, default=5.0, help="percent band drawn (default 5)")
    cmp_.add_argument("--ignore-variant", action="store_true",
                      help="match cases whatever their variant (CUDA against triton)")
    cmp_.add_argument("--out-dir")
    dec = sub.add_parser("decode", help="per-layer µs against num_tokens, per shape, variants "
                                        "side by side (rotated runs)")
    dec.add_argument("csv", nargs="+", help="result CSVs (kvbench and triton_baseline.py rows)")
    dec.add_argument("--variants", default="optimized,triton",
                     help="comma-separated, the lines drawn (default optimized,triton)")
    dec.add_argument("--max-tokens", type=float, help="only num_tokens up to this")
    dec.add_argument("--out-dir")
    args = parser.parse_args(argv)
    try:
        if args.command == "bandwidth":
            paths = plot_bandwidth(args.csv, args.peak_gbps, args.theoretical_gbps, args.out_dir)
        elif args.command == "decode":
            paths = [plot_decode(args.csv, tuple(args.variants.split(",")), args.max_tokens,
                                 args.out_dir)]
        else:
            paths = [plot_compare(args.baseline, args.current, args.threshold, args.out_dir,
                                  args.ignore_variant)]
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
