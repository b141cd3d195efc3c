#!/usr/bin/env python3
"""Plots of kvbench result CSVs (schemas 1 and 2), rendered headless (Agg) to PNG.

  plot.py bandwidth CSV [CSV...] [--peak-gbps X] [--theoretical-gbps Y] [--out-dir DIR]
      Bandwidth (GB/s) against num_tokens (log x), one panel per shape (every case column but
      num_tokens, variant and sweep), one line per variant (seed_port, optimized, triton, ...).
      Several CSVs plot together (a CUDA run beside scripts/triton_baseline.py's rows); a variant
      that two CSVs hold (two boards, two contexts) is one line per CSV, its name in the legend,
      and a peak that differs between them one line per CSV. One PNG per kernel: <DIR>/<first
      CSV's stem>_bandwidth_<kernel>.png.
  plot.py compare BASELINE.csv CURRENT.csv [--threshold PCT] [--ignore-variant]
                  [--variants BASE,CURRENT] [--out-dir DIR] [-o PNG]
      Current / baseline median time per case (matched by case columns and variant), one bar
      each on a log axis: PNG, else <DIR>/<current stem>_vs_<baseline stem>.png (for two
      files of one stem, the baseline's directory too: smoke_vs_h200_smoke.png).
      --ignore-variant matches every current variant against the baseline's row of the same
      case (e.g. CUDA against triton).
      --variants BASE,CURRENT, as for `kvbench compare`: BASELINE's rows of variant BASE against
      CURRENT's rows of variant CURRENT, case by case; the two files may be one (a run with
      --variants triton,optimized).
  plot.py decode CSV [CSV...] [--variants optimized,triton] [--max-tokens N] [--out-dir DIR]
                 [-o PNG]
      Per-layer cost of a step: median µs against num_tokens (log-log), one panel per shape
      timed for every listed variant, one line per variant: a rotated kvbench run beside
      triton_baseline.py --rotate on the same config; a variant and context that two CSVs hold is
      one line per CSV. PNG, else <DIR>/<first CSV's stem>_decode.png.

DIR defaults to the directory of the (first / current) CSV. Columns are read by name; extra
columns are ignored. The case columns come from the kvbench binary ($KVBENCH, else build/kvbench;
scripts/kvbench_schema.py). Horizontal lines mark the measured copy peak and the theoretical peak:
--peak-gbps / --theoretical-gbps, else the keys `measured_peak_gbps` and
`theoretical_peak_gbps` at the top level of a JSON sidecar `<csv>.json` when it exists.
Axes: token counts as numbers (1, 16, 128, 1K, 32K), log-scale µs and ratios at plain numbers
(1, 2, 5). The bottom of each figure says, per CSV drawn, its device, commit and how it was
timed (mode, buffer sets, --rotate, hot inputs), from the sidecar, else from the rows. A CSV is
named by its file name, or with as many of its directories as tell it from the others
(h200/smoke.csv beside results/smoke.csv).
CSVs are read as kvbench reads them (scripts/kvbench_schema.py): a file that cannot be read, is
not UTF-8, has a line over 1 MiB, lacks the newline of its last line or a column, or holds a
median_us or gbps that is not a finite non-negative number is refused; so is a sidecar that is
not a JSON object or whose peaks are not finite non-negative numbers (0 or null: not known).
-o must name a .png that is none of the input CSVs or their sidecars.
Exit status: 0 written; 3 bad input, a bad command line or an unwritable PNG (one line on
stderr naming the file, line and column, or the flag), or matplotlib missing
(scripts/kvbench_python.py: run again under the interpreter scripts/setup.sh provisions when it
has it, else one line saying what to do).
"""
import argparse
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_python  # noqa: E402

# matplotlib from this interpreter, else from the one scripts/setup.sh provisions
# (scripts/kvbench_python.py says why and how).
kvbench_python.require(__file__, "matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import matplotlib.ticker as mticker  # noqa: E402

import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402

SCHEMA_VERSIONS = ("1", "2", "3", "4")  # 2 adds buffer_sets (schema-1 rows timed one set), 3 context, 4 timer


def case_columns():
    """Columns identifying a case: the case key, from the kvbench binary (kvbench_schema.py)."""
    try:
        return kvbench_schema.case_key_columns()
    except kvbench_schema.SchemaError as e:
        raise InputError(f"case key: {e}")


def shape_columns():
    """A shape: the case without the token count, the variant (one line each) and the sweep."""
    return [c for c in case_columns() if c not in ("num_tokens", "variant", "sweep")]


def read_rows(path):
    """Rows of a result CSV as dicts, each with its line number as '_line'; refuses what
    kvbench_schema.read_result_rows refuses, other schemas, missing columns, and a median_us or
    gbps that is not a finite non-negative number."""
    fieldnames, rows = kvbench_schema.read_result_rows(path)
    needed = ["schema_version", "status", "median_us", "gbps"] + case_columns()
    missing = [c for c in needed if c not in fieldnames]
    if missing:
        raise InputError(f"{path}:1: missing column '{missing[0]}'")
    for line, row in rows:
        if row["schema_version"] not in SCHEMA_VERSIONS:
            raise InputError(f"{path}:{line}: schema_version '{row['schema_version']}', "
                             f"this script reads {', '.join(SCHEMA_VERSIONS)}")
        row["_line"] = line
    kvbench_schema.check_numbers(path, rows, ("median_us", "gbps"))
    kvbench_schema.check_rows(path, fieldnames, rows)
    return [row for _, row in rows]


def number(row, column, path):
    """The column's value as a finite non-negative number, None when empty."""
    return kvbench_schema.number(row[column], path, row.get("_line"), column)


def read_sidecar(csv_path):
    """The JSON sidecar <csv>.json as a dict; {} when there is none (kvbench_schema.read_sidecar:
    refused when not a JSON object or when a peak is not a finite non-negative number)."""
    return kvbench_schema.read_sidecar(csv_path)


def peaks(csv_path, peak, theoretical):
    """(measured, theoretical) GB/s: flags first, else the sidecar <csv>.json."""
    meta = read_sidecar(csv_path) if peak is None or theoretical is None else {}
    if peak is None and isinstance(meta.get("measured_peak_gbps"), (int, float)):
        peak = float(meta["measured_peak_gbps"])
    if theoretical is None and isinstance(meta.get("theoretical_peak_gbps"), (int, float)):
        theoretical = float(meta["theoretical_peak_gbps"])
    return peak, theoretical


def plain_number(v):
    """A tick label without exponent: 1, 2, 0.85, 1500 (three significant digits at most)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    digits = max(0, 2 - math.floor(math.log10(abs(v))))
    text = f"{round(v, digits):.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_tokens(v):
    """A token count as a number: 1, 16, 128, 1K, 32K, 1M (K = 1024, M = 1024 K)."""
    if v < 1 or v != int(v):
        return plain_number(v)
    n = int(v)
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def log_ticks(vmin, vmax):
    """Major ticks for a log axis from vmin to vmax, at plain numbers spread over the range:
    decades (1, 10, 100) when three fit, else 1-2-5 (1, 2, 5, 10) when three fit or the range
    spans a decade, else evenly spaced round numbers (0.8, 1, 1.2, ...: a range this narrow
    reads like a linear one)."""
    lo, hi = sorted((vmin, vmax))
    if hi <= 0:
        return []
    lo = lo if lo > 0 else hi / 1000
    first, last = math.floor(math.log10(lo)), math.floor(math.log10(hi))

    def at(subs):
        ticks = [float(f"{m * 10.0 ** e:.12g}") for e in range(first, last + 1) for m in subs]
        return [t for t in ticks if lo <= t <= hi]

    if len(at((1,))) >= 3:
        return at((1,))
    if len(at((1, 2, 5))) >= 3 or hi / lo >= 10:
        return at((1, 2, 5))
    ticks = mticker.MaxNLocator(nbins=6, steps=[1, 2, 5, 10]).tick_values(lo, hi)
    return [float(f"{t:.12g}") for t in ticks if lo <= t <= hi]


def covering_ticks(lo, hi):
    """log_ticks for data from lo to hi, starting at or below lo (the range widened by up to
    25% to find such a tick, so the lowest point sits on a labelled value) and ending at the
    first tick at or above hi when there is one."""
    for widen in (1.0, 1.05, 1.1, 1.15, 1.2, 1.25):
        ticks = log_ticks(lo / widen, hi * widen)
        below = [t for t in ticks if t <= lo]
        if below:
            top = next((t for t in ticks if t >= hi), hi)
            return [t for t in ticks if below[-1] <= t <= top]
    return log_ticks(lo, hi)


def microseconds_axis(ax, values):
    """A log y axis of µs for `values`, labelled at plain numbers (1, 2, 5, not 2×10⁰)
    (covering_ticks); unlabelled minor ticks."""
    ax.set_yscale("log")
    lo, hi = min(values), max(values)
    ticks = covering_ticks(lo, hi) if lo > 0 else []
    if ticks:
        ends = (min(lo, ticks[0]), max(hi, ticks[-1]))
        pad = (ends[1] / ends[0]) ** 0.03
        ax.set_ylim(ends[0] / pad, ends[1] * pad)
        ax.yaxis.set_major_locator(mticker.FixedLocator(ticks))
    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: plain_number(v)))
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())


def tokens_axis(ax, tokens):
    """A log2 x axis of token counts, ticked at the counts plotted (1, 16, 128, 1K, 32K); at
    most 9 of them, else at powers of two."""
    ax.set_xscale("log", base=2)
    values = sorted(set(tokens))
    if len(values) <= 9:
        ax.xaxis.set_major_locator(mticker.FixedLocator(values))
    else:
        ax.xaxis.set_major_locator(mticker.LogLocator(base=2, numticks=9))
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: format_tokens(v)))


def _distinct(rows, column):
    return sorted({row.get(column) or "" for row in rows} - {""})


def timing_line(path, rows, name=None):
    """Where and how the plotted rows of one CSV were timed: device, commit, mode, buffer sets
    (and --rotate), hot inputs, the L2 flush of cold mode. From the sidecar <csv>.json; a CSV
    without one (the older triton_baseline.py's) is described from its rows' columns. name: the
    CSV's name on the figure (source_names), else its file name."""
    meta = read_sidecar(path)
    settings = meta.get("settings") if isinstance(meta.get("settings"), dict) else {}
    device_info = meta.get("device")
    device = device_info.get("name") if isinstance(device_info, dict) else None
    device = device or "/".join(_distinct(rows, "device")) or "device unknown"
    sha = meta.get("git_sha") if isinstance(meta.get("git_sha"), str) else None
    sha = sha or "/".join(s[:7] for s in _distinct(rows, "git_sha"))
    dirty = meta.get("git_dirty") is True or "true" in _distinct(rows, "git_dirty")
    commit = "commit unknown"
    if sha:
        commit = f"commit {sha[:7]}{' (uncommitted changes)' if dirty else ''}"
    mode = settings.get("mode") if isinstance(settings.get("mode"), str) else None
    mode = mode or "/".join(_distinct(rows, "mode")) or "mode unknown"
    how = [f"{mode} mode"]
    if mode == "cold" and settings.get("l2_flush"):
        how[0] += f" (L2 flushed by {settings['l2_flush']})"
    sets = sorted({int(number(row, "buffer_sets", path) or 1) if row.get("buffer_sets") else 1
                   for row in rows})
    if sets:
        span = str(sets[0]) if len(sets) == 1 else f"{sets[0]}–{sets[-1]}"
        how.append(f"{span} buffer set{'' if sets == [1] else 's'} per case")
    rotate = settings.get("rotate")
    if rotate not in (None, "", "1", 1):
        how[-1] += f" (--rotate {rotate})"
    elif sets == [1] and mode != "cold":  # one set, no flush: what fits in L2 runs from it
        l2 = device_info.get("l2_bytes") if isinstance(device_info, dict) else None
        size = f" {l2 / 2**20:.0f} MiB" if isinstance(l2, (int, float)) and l2 > 0 else ""
        how[-1] += f" (unrotated: a case under the{size} L2 runs hot in it)"
    if settings.get("hot_inputs") is True:
        how.append("hot inputs (caches cold)")
    contexts, timers = _distinct(rows, "context"), _distinct(rows, "timer")
    if contexts:
        how.append(f"context {'/'.join(contexts)}")
    if timers:
        how.append(f"{'/'.join(timers)} timer")
    source = "" if meta else " (no sidecar: from the rows)"
    return f"{name or os.path.basename(path)}{source}: {device}, {commit}; {', '.join(how)}"


def add_timing_lines(fig, lines):
    """Writes the timing lines at the bottom of `fig`; returns the fraction of its height they
    take (the bottom of tight_layout's rect)."""
    height = fig.get_figheight()
    fig.text(0.01, 0.06 / height, "\n".join(lines), fontsize=8, color="dimgray",
             ha="left", va="bottom")
    return (0.12 + 0.16 * len(lines)) / height


def shape_label(shape):
    """A panel's title: the shape's description as kvbench gives it for the shape's operation,
    on two lines (kvbench_operations.shape)."""
    return kvbench_operations.shape_label(dict(zip(shape_columns(), shape)), "\n",
                                          case_columns())


def out_path(out_dir, default_dir, name):
    """<out_dir or default_dir>/name, the directory created when missing."""
    directory = out_dir if out_dir else (default_dir or ".")
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, name)


def output_path(output):
    """--output as given, its directory created when missing; None when not given."""
    if output:
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    return output


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def source_names(paths):
    """Each path's name on a figure: its file name, or as many trailing directories more as
    tell it from the other paths (results/h200/smoke.csv and results/smoke.csv: h200/smoke.csv
    and results/smoke.csv). One path given twice keeps its file name."""
    parts = [os.path.abspath(p).split(os.sep) for p in paths]
    names = []
    for mine in parts:
        others = [q for q in parts if q != mine]
        depth = 1
        while depth < len(mine) and any(q[-depth:] == mine[-depth:] for q in others):
            depth += 1
        names.append("/".join(mine[-depth:]))
    return names


def grid_of_panels(n, width=4.6, height=3.4, extra=0.6):
    """A figure of n panels, four to a row: (fig, axes)."""
    cols = min(4, n)
    rows = math.ceil(n / cols)
    return plt.subplots(rows, cols, figsize=(max(width * cols, 7.0), height * rows + extra),
                        squeeze=False)


def finish(fig, axes, n, title, lines, handles, labels, path):
    """Blank unused panels, one legend for the figure (under the title), the timing lines at the
    bottom; saves to `path` and closes."""
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    height = fig.get_figheight()
    fig.suptitle(title, fontsize=11, y=1 - 0.12 / height, va="top")
    # As many entries a row as the figure's width holds (8-point text, about 0.075 in a
    # character, and the line sample); each further row takes 0.2 in more.
    entry = 0.6 + 0.075 * max((len(label) for label in labels), default=0)
    ncol = max(1, min(len(labels), int(fig.get_figwidth() / entry)))
    rows = -(-len(labels) // ncol)
    fig.legend(handles, labels, loc="upper center", ncol=ncol, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.42 / height))
    bottom = add_timing_lines(fig, lines)
    fig.tight_layout(rect=(0, bottom, 1, 1 - (0.5 + 0.2 * rows) / height))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def legend_entries(axes):
    """Each label once, in the order the panels first draw it."""
    handles, labels = [], []
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    return handles, labels


def bandwidth_series(csv_paths):
    """kernel -> shape -> (variant, path) -> [(tokens, gbps)] sorted by tokens, of the passed rows
    with a GB/s figure; and kernel -> path -> the rows drawn. One line per variant and CSV: the
    same variant from two CSVs (two boards, two contexts) is two lines, never one."""
    series = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    drawn = defaultdict(lambda: defaultdict(list))
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
            series[row["kernel"]][shape][(row["variant"], path)].append((tokens, gbps))
            drawn[row["kernel"]][path].append(row)
    for shapes in series.values():
        for lines in shapes.values():
            for points in lines.values():
                points.sort()
    return series, drawn


def line_labels(keys, names):
    """Legend label per line key (text, path): the text, and every line's CSV name after it when
    one text comes from more than one CSV."""
    paths = defaultdict(set)
    for text, path in keys:
        paths[text].add(path)
    shared = any(len(p) > 1 for p in paths.values())
    return {(text, path): text + (f" ({names[path]})" if shared else "") for text, path in keys}


def peak_lines(csv_paths, names, peak, theoretical):
    """[(GB/s, label, style)] of the measured and theoretical peaks: flags first, else each CSV's
    sidecar; a peak that differs between CSVs (two boards) is one line per CSV, named."""
    out = []
    for which, style, flag in (("measured copy peak", "--", peak),
                               ("theoretical peak", ":", theoretical)):
        values = defaultdict(list)  # GB/s -> CSV names
        for path in csv_paths:
            found = peaks(path, peak, theoretical)[0 if style == "--" else 1]
            if found:
                values[found].append(names[path])
        for gbps, of in sorted(values.items()):
            label = f"{which} {gbps:.0f} GB/s"
            out.append((gbps, label + (f" ({', '.join(of)})" if len(values) > 1 else ""), style))
    return out


def plot_bandwidth(csv_paths, peak=None, theoretical=None, out_dir=None):
    """Writes one PNG per kernel; returns their paths."""
    csv_paths = list(dict.fromkeys(csv_paths))
    series, drawn = bandwidth_series(csv_paths)
    if not series:
        raise InputError(f"{', '.join(csv_paths)}: no timed rows to plot")
    names = dict(zip(csv_paths, source_names(csv_paths)))
    written = []
    for kernel, shapes in sorted(series.items()):
        n = len(shapes)
        fig, axes = grid_of_panels(n, height=3.4)
        keys = sorted({k for lines in shapes.values() for k in lines},
                      key=lambda k: (k[0], csv_paths.index(k[1])))
        labels = line_labels(keys, names)
        variants = sorted({v for v, _ in keys})
        colors = {v: plt.cm.tab10(i % 10) for i, v in enumerate(variants)}
        paths = [p for p in csv_paths if p in drawn[kernel]]
        styles = {p: CONTEXT_STYLES[i % len(CONTEXT_STYLES)] for i, p in enumerate(paths)}
        levels = peak_lines(paths, names, peak, theoretical)
        for ax, (shape, lines) in zip(axes.flat, sorted(shapes.items())):
            for key in (k for k in keys if k in lines):
                points = lines[key]
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                        label=labels[key], color=colors[key[0]],
                        linestyle=styles[key[1]] if labels[key] != key[0] else "-")
            for gbps, label, style in levels:
                ax.axhline(gbps, color="black" if style == "--" else "gray", linestyle=style,
                           linewidth=0.8, label=label)
            tokens_axis(ax, [t for points in lines.values() for t, _ in points])
            ax.set_ylim(bottom=0)
            ax.set_title(shape_label(shape), fontsize=8)
            ax.set_xlabel("num_tokens", fontsize=8)
            ax.set_ylabel("GB/s", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="major", alpha=0.3)
        path = out_path(out_dir, os.path.dirname(csv_paths[0]),
                        f"{stem(csv_paths[0])}_bandwidth_{kernel}.png")
        lines = [timing_line(p, drawn[kernel][p], names[p]) for p in paths]
        finish(fig, axes, n, f"{kernel}: bandwidth (logical bytes / median time per launch)",
               lines, *legend_entries(axes), path)
        written.append(path)
    return written


def plot_compare(baseline_path, current_path, threshold=5.0, out_dir=None, ignore_variant=False,
                 output=None, variants=None):
    """Current / baseline median per case matched in both; returns the PNG's path. variants:
    (base, current), each file's rows of that variant only, matched across variants."""
    case_cols, shape_cols = case_columns(), shape_columns()
    if variants:
        ignore_variant = True

    def timed(path, variant=None):
        out = {}
        for row in read_rows(path):
            if variant and row["variant"] != variant:
                continue
            med = number(row, "median_us", path)
            if row["status"] == "passed" and med:
                out[tuple(row[c] for c in case_cols)] = (med, row)
        return out

    variant_at = case_cols.index("variant")

    def match(key):
        return key[:variant_at] + key[variant_at + 1:] if ignore_variant else key

    cur = timed(current_path, variants[1] if variants else None)
    base = {}
    for k, med_row in timed(baseline_path, variants[0] if variants else None).items():
        if match(k) in base:
            raise InputError(f"{baseline_path}: two variants of one case; drop --ignore-variant")
        base[match(k)] = med_row
    keys = [k for k in cur if match(k) in base]
    if not keys:
        what = f" (variant {variants[1]} against {variants[0]})" if variants else ""
        raise InputError(f"{current_path}: no timed case in common with {baseline_path}{what}")
    ratios = [cur[k][0] / base[match(k)][0] for k in keys]
    for k, r in zip(keys, ratios):
        if not 0 < r < math.inf:  # times kvbench writes are far from this
            raise InputError(f"{current_path}:{cur[k][1]['_line']}: median_us "
                             f"{cur[k][0]:g} against {base[match(k)][0]:g}: a ratio beyond a "
                             f"float's range")
    band = threshold / 100.0
    colors = ["tab:red" if r > 1 + band else "tab:green" if r < 1 / (1 + band) else "tab:gray"
              for r in ratios]
    labels = []
    for k in keys:
        c = dict(zip(case_cols, k))
        labels.append(f"{c['variant']} {c['sweep']} T={format_tokens(float(c['num_tokens']))} "
                      + shape_label(tuple(c[s] for s in shape_cols)).replace("\n", " "))
    base_name, cur_name = source_names([baseline_path, current_path])
    lines = [timing_line(baseline_path, [base[match(k)][1] for k in keys], base_name),
             timing_line(current_path, [cur[k][1] for k in keys], cur_name)]
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.22 * len(keys) + 1.2 + 0.16 * len(lines))))
    y = range(len(keys))
    ax.barh(list(y), [r - 1 for r in ratios], left=1, color=colors)
    ax.axvline(1, color="black", linewidth=0.8)
    for edge in (1 + band, 1 / (1 + band)):
        ax.axvline(edge, color="gray", linestyle=":", linewidth=0.8)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_ylim(len(keys) - 0.5, -0.5)  # first case on top
    # Ratios multiply: a log axis draws 2x slower and 2x faster the same length.
    ax.set_xscale("log")
    ticks = covering_ticks(min(ratios + [1 / (1 + band)]), max(ratios + [1 + band]))
    ax.xaxis.set_major_locator(mticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: plain_number(v)))
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_xlabel("current / baseline median time (log scale; < 1 is faster)")
    names = [cur_name, base_name]
    if variants:  # which rows of each file
        names = [f"{n} ({v})" for n, v in zip(names, (variants[1], variants[0]))]
    ax.set_title(f"{names[0]} vs {names[1]}: "
                 f"{len(keys)} cases\nred slower, green faster than the dotted "
                 f"±{threshold:g}% band", fontsize=10)
    bottom = add_timing_lines(fig, lines)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    # In the current CSV's directory: the baseline's name says which baseline when the stems
    # are one (results/smoke_vs_h200_smoke.png).
    against = stem(baseline_path)
    if against == stem(current_path) and baseline_path != current_path:
        against = os.path.splitext(base_name)[0].replace("/", "_")
    path = output_path(output) or out_path(out_dir, os.path.dirname(current_path),
                                           f"{stem(current_path)}_vs_{against}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


CONTEXT_ORDER = ("back_to_back", "cold", "after_producer", "layer")
CONTEXT_STYLES = ("-", "--", ":", "-.")


def context_rank(context):
    return (CONTEXT_ORDER.index(context) if context in CONTEXT_ORDER else len(CONTEXT_ORDER),
            context)


def plot_decode(csv_paths, variants=("optimized", "triton"), max_tokens=None, out_dir=None,
                output=None):
    """Per-layer cost of a step: median µs against num_tokens, one panel per shape, one line per
    variant (e.g. optimized from a rotated kvbench run, triton from triton_baseline.py --rotate on
    the same config). Rows of several contexts (the `context` column, schema 3; one CSV per
    context, say) give one line per variant and context: the colour says the variant, the line
    style the context; a variant and context from two CSVs is one line per CSV (marker and legend
    name the CSV). The bottom lines say how each CSV was timed (61 sets: one DeepSeek-V3
    step, each layer writing its own cache). Returns the PNG's path."""
    csv_paths = list(dict.fromkeys(csv_paths))
    # shape -> (variant, context, path) -> [(tokens, us, row)]
    series = defaultdict(lambda: defaultdict(list))
    shape_cols = shape_columns()
    for path in csv_paths:
        for row in read_rows(path):
            if row["status"] != "passed" or row["variant"] not in variants:
                continue
            us, tokens = number(row, "median_us", path), number(row, "num_tokens", path)
            if us is None or tokens is None or (max_tokens is not None and tokens > max_tokens):
                continue
            series[tuple(row[c] for c in shape_cols)][
                (row["variant"], row.get("context") or "", path)].append((tokens, us, row))
    # Shapes timed for every variant (in some context).
    shapes = {k: v for k, v in series.items() if {var for var, _, _ in v} == set(variants)}
    if not shapes:
        raise InputError(f"{', '.join(csv_paths)}: no shape timed for every one of "
                         f"{', '.join(variants)}")
    keys = sorted({k for lines in shapes.values() for k in lines},
                  key=lambda k: (variants.index(k[0]), context_rank(k[1]), csv_paths.index(k[2])))
    contexts = sorted({ctx for _, ctx, _ in keys}, key=context_rank)
    styles = {c: CONTEXT_STYLES[i % len(CONTEXT_STYLES)] for i, c in enumerate(contexts)}
    names = dict(zip(csv_paths, source_names(csv_paths)))
    texts = {k: k[0] if len(contexts) == 1 else f"{k[0]}, {k[1] or 'no context'}" for k in keys}
    labels = line_labels({(texts[k], k[2]) for k in keys}, names)
    markers = {p: "osD^v"[i % 5] for i, p in enumerate(csv_paths)}
    n = len(shapes)
    fig, axes = grid_of_panels(n, height=3.2)
    colors = {v: plt.cm.tab10(i % 10) for i, v in enumerate(variants)}
    plotted = defaultdict(list)  # path -> rows drawn
    for ax, (shape, lines) in zip(axes.flat, sorted(shapes.items())):
        tokens, values = [], []
        for key in (k for k in keys if k in lines):
            points = sorted(lines[key], key=lambda p: p[0])
            label = labels[(texts[key], key[2])]
            ax.plot([p[0] for p in points], [p[1] for p in points], markersize=3, label=label,
                    marker=markers[key[2]] if label != texts[key] else "o",
                    color=colors[key[0]], linestyle=styles[key[1]])
            tokens += [p[0] for p in points]
            values += [p[1] for p in points]
            plotted[key[2]] += [p[2] for p in points]
        tokens_axis(ax, tokens)
        microseconds_axis(ax, values)
        ax.set_title(shape_label(shape), fontsize=8)
        ax.set_xlabel("num_tokens (decode: tokens per step)", fontsize=8)
        ax.set_ylabel("µs per layer", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
    path = output_path(output) or out_path(out_dir, os.path.dirname(csv_paths[0]),
                                           f"{stem(csv_paths[0])}_decode.png")
    lines = [timing_line(p, plotted[p], names[p]) for p in csv_paths if plotted[p]]
    title = ("per-layer µs of one step (median per launch)" if len(contexts) == 1 else
             "median µs per launch by variant (colour) and context (line style)")
    finish(fig, axes, n, title, lines, *legend_entries(axes), path)
    return path


def number_flag(zero_ok):
    """A flag's parser: a finite number above 0 (--peak-gbps, --theoretical-gbps), or 0 and above
    when zero_ok (--threshold, --max-tokens)."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and (v >= 0 if zero_ok else v > 0)):
            raise argparse.ArgumentTypeError(
                f"'{text}' is not a finite number {'0 or above' if zero_ok else 'above 0'}")
        return v
    return parse


def check_output(output, inputs):
    """Refuses an -o that is not a .png, or that is one of the input CSVs or their sidecars
    <csv>.json (the same file by device and inode, or the same path), before anything is
    written."""
    if not output:
        return
    for path in inputs:
        for source in (path, kvbench_schema.sidecar_path(path)):
            if kvbench_schema.same_file(output, source):
                raise InputError(f"-o {output}: the same file as the input {source}")
    if not output.lower().endswith(".png"):
        raise InputError(f"-o {output}: not a .png (plot.py writes PNG only)")


def main(argv=None):
    """Exit 0 when written; 3 on a bad command line, bad input or a PNG that cannot be written,
    with one line on stderr (kvbench_schema.ArgumentParser for the command line)."""
    parser = kvbench_schema.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    bw = sub.add_parser("bandwidth", help="bandwidth against num_tokens, per shape")
    bw.add_argument("csv", nargs="+")
    bw.add_argument("--peak-gbps", type=number_flag(False), help="measured copy peak (GB/s)")
    bw.add_argument("--theoretical-gbps", type=number_flag(False), help="theoretical peak (GB/s)")
    bw.add_argument("--out-dir")
    cmp_ = sub.add_parser("compare", help="current / baseline median per case")
    cmp_.add_argument("baseline")
    cmp_.add_argument("current")
    cmp_.add_argument("--threshold", type=number_flag(True), default=5.0,
                      help="percent band drawn (default 5)")
    cmp_.add_argument("--ignore-variant", action="store_true",
                      help="match cases whatever their variant (CUDA against triton)")
    cmp_.add_argument("--variants", metavar="BASE,CURRENT",
                      help="BASELINE's rows of variant BASE against CURRENT's of variant CURRENT "
                           "(the two files may be one)")
    cmp_.add_argument("--out-dir")
    cmp_.add_argument("-o", "--output", help="the PNG to write (default <DIR>/<current "
                                             "stem>_vs_<baseline stem>.png)")
    dec = sub.add_parser("decode", help="per-layer µs against num_tokens, per shape, variants "
                                        "side by side (rotated runs)")
    dec.add_argument("csv", nargs="+", help="result CSVs (kvbench and triton_baseline.py rows)")
    dec.add_argument("--variants", default="optimized,triton",
                     help="comma-separated, the lines drawn (default optimized,triton)")
    dec.add_argument("--max-tokens", type=number_flag(True), help="only num_tokens up to this")
    dec.add_argument("--out-dir")
    dec.add_argument("-o", "--output", help="the PNG to write (default <DIR>/<first CSV's "
                                            "stem>_decode.png)")
    args = parser.parse_args(argv)
    pair = None
    if args.command == "compare" and args.variants is not None:
        pair = tuple(args.variants.split(","))
        if len(pair) != 2 or not all(pair):
            parser.error(f"--variants {args.variants!r}: expected BASE,CURRENT (two variant names)")
    try:
        if args.command != "bandwidth":
            check_output(args.output, args.csv if args.command == "decode"
                         else [args.baseline, args.current])
        if args.command == "bandwidth":
            paths = plot_bandwidth(args.csv, args.peak_gbps, args.theoretical_gbps, args.out_dir)
        elif args.command == "decode":
            paths = [plot_decode(args.csv, tuple(args.variants.split(",")), args.max_tokens,
                                 args.out_dir, args.output)]
        else:
            paths = [plot_compare(args.baseline, args.current, args.threshold, args.out_dir,
                                  args.ignore_variant, args.output, pair)]
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 3
    except OSError as e:  # the PNG or its directory cannot be written
        print(f"plot.py: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 3
    try:
        for p in paths:
            print(p)
        sys.stdout.flush()
    except OSError as e:  # standard output cannot be written (> /dev/full, a closed pipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # drop what is left
        print(f"plot.py: standard output: {e.strerror or e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
