#!/usr/bin/env python3
"""Markdown tables of a kvbench result CSV: per shape (µs and % of the measured copy peak, one
column per token count, seed_port beside optimized), and per case of `optimized` against its
plain-move reference, the seed's Triton and a previous run.

usage: scripts/perf_report.py RESULTS.csv [--pair BASE,NEW] [--bounds CSV] [--triton CSV]
                              [--previous CSV] [--cases]
       (reads <csv>.json beside it for the copy peak and the launch floor)

--pair names the two variants of the per-shape tables (default seed_port,optimized), e.g.
optimized,slot_order for results/h200/slot_order.csv; a CSV of one variant gets its cells alone.

With --bounds, --triton or --previous, each `optimized` case (docs/measurement.md, "Rotated
buffers") is set against:
- its plain-move reference (`plain_move_us` of a `kvbench bounds` CSV of this run, `bound_us` in
  CSVs of earlier builds: the fastest plain kernel kvbench tries that moves its bytes,
  contiguously or, for the cache write, scattered to its slots; earlier builds give the scatter
  alone for the cache write; not a lower bound, kernels beat it): that µs / its µs,
  `% of plain move`;
- the seed's Triton (the `triton` row of the same case in a triton_baseline.py CSV of the same
  config, timed the same way): Triton µs / its µs;
- a previous run (e.g. results/h200/perf.csv): its µs / the previous µs;
and a table per token count summarises them (geometric means and ranges). A row set beside an
optimized one must share its GPU model (`device`), and for --triton and --bounds its timing too
(`mode`, `buffer_sets`, `context`, `timer`, where both rows have them): a Triton row of another
context, or floors of another board, is refused naming both rows (exit 3), as is a RESULTS.csv
without a passed `optimized` row. --cases adds the table
of every case (long), with the bounds CSV's write and move floors of each. Percentages print
with one decimal, so that 96.76% never reads as 97%. The performance targets
that kvbench's own kernels are held to are developer tooling: tools/perf_targets.py, docs/dev/targets.md.

Every CSV is read as kvbench reads it (scripts/kvbench_schema.py): a file that cannot be read,
is not UTF-8, has a line over 1 MiB, lacks the newline of its last line, has no rows, lacks a
column or holds a time that is not a finite non-negative number is refused with one line on
stderr naming the file (and line and column) and exit 3; so are a bad sidecar and a bad command
line. Exit 0 otherwise.
"""
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_operations  # noqa: E402
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError, SchemaError  # noqa: E402

# Columns read as numbers, checked in every row that has them (empty is no value).
NUMBER_COLUMNS = ("median_us", "mean_us", "pct_of_measured_peak", "bytes")
BOUNDS_NUMBER_COLUMNS = ("median_us", "launch_floor_us", "write_floor_us", "move_floor_us",
                         "plain_move_us", "bound_us", "plain_move_mean_us")
INTEGER_COLUMNS = ("num_tokens", "buffer_sets")


def fail(error):
    """One line on stderr and exit 3: bad input, a bad command line or an unwritable output."""
    print(f"perf_report.py: {error}", file=sys.stderr)
    raise SystemExit(3)


def exits_on_bad_input(reader):
    """`reader`, with an InputError (or a missing kvbench binary) made one line and exit 3:
    tools/perf_targets.py calls these readers from its own main."""
    @functools.wraps(reader)
    def read(*args):
        try:
            return reader(*args)
        except (InputError, SchemaError) as e:
            fail(e)
    return read


def result_rows(path, what, needed, numbers, integers=INTEGER_COLUMNS):
    """The rows of a CSV kvbench writes, as dicts: refused when it has no rows or lacks one of
    the columns `needed` (`what` says what it should be), or when a value of the columns
    `numbers` or `integers` is not one."""
    fieldnames, rows = kvbench_schema.read_result_rows(path)
    missing = [c for c in needed if c not in fieldnames]
    if not rows or missing:
        raise InputError(f"{path}: not {what} "
                         f"({'no rows' if not rows else 'missing column ' + missing[0]})")
    kvbench_schema.check_numbers(path, rows, numbers, integers)
    kvbench_schema.check_rows(path, fieldnames, rows)
    return [dict(row, _line=line) for line, row in rows]


def shape_columns():
    """The columns that name a shape: the case key (from the kvbench binary) less the variant
    and the token count, so the variants and token counts of one shape line up."""
    return [c for c in kvbench_schema.case_key_columns() if c not in ("variant", "num_tokens")]


DECODE_PREFILL = ["1", "16", "128", "1024", "8192", "32768", "65536", "131072"]

def shape_name(r):
    """The row's shape as the tables print it, by its operation (kvbench_operations.brief)."""
    return kvbench_operations.brief(r)


@exits_on_bad_input
def load(path):
    """The rows of a result CSV and its sidecar (empty when there is none)."""
    rows = result_rows(path, "a result CSV", kvbench_schema.case_key_columns()
                       + ["status", "median_us"], NUMBER_COLUMNS)
    meta = kvbench_schema.read_sidecar(path)
    for keys in (("launch_floor_us", "graph", "median_us"), ("device", "l2_bytes")):
        kvbench_schema.sidecar_number(meta, kvbench_schema.sidecar_path(path), *keys)
    return rows, meta


def header_line(rows, meta):
    floor = meta.get("launch_floor_us", {}).get("graph", {}).get("median_us")
    peak = meta.get("measured_peak_gbps")
    passed = sum(r["status"] == "passed" for r in rows)
    if peak and floor:
        return (f"{len(rows)} rows, {passed} passed; measured copy peak {peak:.0f} GB/s; "
                f"graph-mode launch floor {floor:.2f} us\n")
    return f"{len(rows)} rows, {passed} passed\n"


def shape_tables(rows, base, new):
    """Per-shape tables: one row per shape, one column per token count: base → new."""
    shapes = {}  # operation name -> shape name -> tokens -> variant -> row
    for r in rows:
        if r["status"] == "passed":
            shapes.setdefault(kvbench_operations.name(r), {}).setdefault(
                shape_name(r), {}).setdefault(r["num_tokens"], {})[r["variant"]] = r
    # A CSV without the base variant (a run of one variant) gets the new one's cells alone.
    with_base = any(r["variant"] == base for r in rows)
    known = [op.name for op in kvbench_operations.OPERATIONS.values()]
    for op in known + sorted(set(shapes) - set(known)):
        ts = [t for t in DECODE_PREFILL if any(t in v for v in shapes.get(op, {}).values())]
        if not ts:
            continue
        title = f"{base} → {new}" if with_base else new
        print(f"| {op}: µs {title} (% of copy peak) | " + " | ".join(f"T={t}" for t in ts) + " |")
        print("|---|" + "---|" * len(ts))
        for name in sorted(shapes[op]):
            cells = []
            for t in ts:
                v = shapes[op][name].get(t, {})
                if new in v and (base in v or not with_base):
                    o = v[new]
                    was = f"{float(v[base]['median_us']):.1f} → " if with_base else ""
                    pct = o.get("pct_of_measured_peak")  # empty without a calibrated peak
                    cells.append(f"{was}**{float(o['median_us']):.2f}**"
                                 + (f" ({float(pct):.1f}%)" if pct else ""))
                else:
                    cells.append("")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()


def main():
    """Exit 0 when done; 3 on a bad command line, a bad input file or sidecar, or a standard
    output that cannot be written, with one line on stderr (kvbench_schema.ArgumentParser)."""
    ap = kvbench_schema.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--pair", default="seed_port,optimized")
    ap.add_argument("--bounds")
    ap.add_argument("--triton")
    ap.add_argument("--previous")
    ap.add_argument("--cases", action="store_true")
    args = ap.parse_args()
    pair = args.pair.split(",")
    if len(pair) != 2 or not all(pair):
        ap.error(f"--pair: '{args.pair}' is not two variant names separated by a comma")
    try:
        report(args, pair)
        sys.stdout.flush()
    except (InputError, SchemaError) as e:
        fail(e)
    except OSError as e:  # standard output cannot be written (> /dev/full, a closed pipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # drop what is left
        fail(f"standard output: {e.strerror or e}")
    return 0


def report(args, pair):
    """The tables of args.csv (and of --bounds, --triton, --previous), on standard output."""
    rows, meta = load(args.csv)
    bounds = read_bounds(args.bounds) if args.bounds else None
    triton = read_rows(args.triton, "triton") if args.triton else None
    previous = read_rows(args.previous, "previous") if args.previous else None
    print(header_line(rows, meta))
    shape_tables(rows, *pair)
    if args.bounds or args.triton or args.previous:
        opt = [r for r in rows if r["variant"] == "optimized" and r["status"] == "passed"]
        if not opt:
            raise InputError(f"{args.csv}: no passed row of variant optimized to set beside "
                             "--bounds, --triton or --previous")
        timed_alike(opt, args.csv, bounds, args.bounds, "--bounds", BOUNDS_ALIKE)
        timed_alike(opt, args.csv, triton and {key_of(r): r for r in triton
                                               if r["variant"] == "triton"},
                    args.triton, "--triton", TRITON_ALIKE)
        timed_alike(opt, args.csv, previous and {key_of(r): r for r in previous
                                                 if r["variant"] == "optimized"},
                    args.previous, "--previous", PREVIOUS_ALIKE)
        compared = compare(opt, bounds, triton, previous)
        summary(compared, bounds, triton, previous)
        l2 = kvbench_schema.sidecar_number(meta, kvbench_schema.sidecar_path(args.csv), "device",
                                           "l2_bytes")
        l2 = 60 * 2**20 if l2 is None else l2
        not_cold = sum(int(r.get("buffer_sets") or 1) > 1
                       and int(r.get("buffer_sets") or 1) * float(r["bytes"]) <= 3 * l2 for r in opt)
        if not_cold:
            print(f"\n{not_cold} rows were rotated over sets that together stay within 3x L2 "
                  "(a run before schema 4 capped at 4096 sets, or a context after a producer): "
                  "not fully cold.")
        if args.cases:
            case_table(compared, bounds, triton, previous)


# The columns a row set beside an optimized row must share with it (where both have them): the
# same GPU model, and for the seed's Triton and the plain-move references the same timing (a
# Triton row of another context, or a floor timed by another timer, makes a ratio of two
# measurements). A previous run is compared on its model only: a rotated run beside an
# unrotated previous one is how its large cases are gated.
BOUNDS_ALIKE = ("device", "buffer_sets", "context", "timer")
TRITON_ALIKE = ("device", "mode", "buffer_sets", "context", "timer")
PREVIOUS_ALIKE = ("device",)


def key_of(r, variant=None):
    """The case key of row r, its variant replaced by `variant` when given."""
    return tuple(variant if variant and c == "variant" else r[c]
                 for c in kvbench_schema.case_key_columns())


def timed_alike(opt, path, others, other_path, flag, columns):
    """InputError naming both rows for the first optimized row whose match in `others` ({case
    key: row}, keyed as optimized rows are; None when the flag was not given) differs in one of
    `columns` where both have a value."""
    if not others:
        return
    for r in opt:
        o = others.get(key_of(r, None if flag != "--triton" else "triton"))
        if o is None or o.get("status", "passed") != "passed" or not o.get("median_us"):
            continue  # untimed: not set beside it
        for c in columns:
            mine, theirs = r.get(c) or "", o.get(c) or ""
            if c == "buffer_sets":  # rows of schema 1 have none: one set
                mine, theirs = mine or "1", theirs or "1"
            if mine and theirs and mine != theirs:
                raise InputError(
                    f"{other_path}:{o['_line']}: {c} '{theirs}', but {path}:{r['_line']}'s is "
                    f"'{mine}' ({flag} rows must be timed as the rows they are set beside)")


@exits_on_bad_input
def read_rows(path, what):
    """The rows of the result CSV given to --`what` (--triton, --previous)."""
    return result_rows(path, f"a result CSV for --{what}", kvbench_schema.case_key_columns()
                       + ["status", "median_us"], NUMBER_COLUMNS)


def timed(rows, variant=None, ignore_variant=False, column="median_us"):
    """{case key: µs of `column`} of the passed rows (of `variant`) that have it; key without the
    variant if asked."""
    out, key_columns = {}, kvbench_schema.case_key_columns()
    for r in rows:
        if r["status"] != "passed" or not r.get(column) or (variant and r["variant"] != variant):
            continue
        key = tuple(r[c] for c in key_columns if not (ignore_variant and c == "variant"))
        out[key] = float(r[column])
    return out


def against(value, target, decimals=1, suffix="%"):
    """value with `decimals` decimals, or more where fewer would round it onto the other side of
    `target` (96.96 against 97 prints 96.96, never 97.0): a printed figure never reads as meeting
    a target line that the value misses, nor as missing one it meets."""
    while True:
        text = f"{value:.{decimals}f}"
        if (float(text) >= target) == (value >= target) or decimals >= 9:
            return text + suffix
        decimals += 1


def geomean(values):
    import math
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def compare(opt, bounds, triton, previous):
    """Per optimized case, sorted by shape and T: (row, µs, plain-move µs, Triton µs, previous µs),
    None where the other CSV has no passed row of the case."""
    tri = timed(triton, "triton", ignore_variant=True) if triton else {}
    prev = timed(previous, "optimized") if previous else {}
    key_columns = kvbench_schema.case_key_columns()
    out = []
    for r in sorted(opt, key=lambda r: (shape_name(r), int(r["num_tokens"]))):
        key = tuple(r[c] for c in key_columns)
        b = bounds.get(key) if bounds is not None else None
        out.append((r, float(r["median_us"]),
                    plain_move_us(b),
                    tri.get(tuple(r[c] for c in key_columns if c != "variant")),
                    prev.get(key), b))
    return out


def case_table(compared, bounds, triton, previous):
    """Every case: its µs, then the comparisons given."""
    head = "| case | T | sets | µs |"
    # Bounds CSVs older than `bound_us` (now `plain_move_us`) give their floors alone.
    with_bound = bounds is not None and any(c[2] for c in compared)
    head += " write floor µs | move floor µs |" if bounds is not None else ""
    head += " plain move µs | % of plain move |" if with_bound else ""
    head += " Triton µs | Triton / this |" if triton is not None else ""
    head += " previous µs | this / previous |" if previous is not None else ""
    print("\n" + head)
    print("|---" * head.count(" |") + "|")
    for r, us, b, t, p, row in compared:
        cells = [shape_name(r), r["num_tokens"], r.get("buffer_sets") or "1", f"{us:.2f}"]
        if bounds is not None:
            floors = [row.get(c) or "" for c in ("write_floor_us", "move_floor_us")] if row else ["", ""]
            cells += [f"{float(x):.2f}" if x else "" for x in floors]
        if with_bound:
            cells += [f"{b:.2f}", f"{100 * b / us:.1f}%"] if b else ["", ""]
        if triton is not None:
            cells += [f"{t:.2f}", f"{t / us:.2f}x"] if t else ["", ""]
        if previous is not None:
            cells += [f"{p:.2f}", f"{us / p:.3f}"] if p else ["", ""]
        print("| " + " | ".join(cells) + " |")


def spread(values, fmt):
    """'geomean (min–max)' of values, or '' when there are none."""
    if not values:
        return ""
    return f"{fmt.format(geomean(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def summary(compared, bounds, triton, previous):
    """One row per token count, and one for all: how many cases, their µs, and each comparison
    given as a geometric mean with its range."""
    if triton is not None:
        counts = {}
        for r in triton:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        print("Triton rows: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + "\n")
        wrong = [r for r in triton if r["status"] in ("incorrect", "failed")]
        if wrong:
            print("| Triton row | T | status | reason |")
            print("|---|---|---|---|")
            for r in sorted(wrong, key=lambda r: (shape_name(r), int(r["num_tokens"]))):
                reason = r["reason"].replace("|", "/")
                print(f"| {shape_name(r)} | {r['num_tokens']} | {r['status']} | "
                      f"{reason[:117] + '...' if len(reason) > 120 else reason} |")
            print()
    # (title, per-case value or None, format, what a case needs for it), for the CSVs given.
    columns = [c for c, given in (
        (("% of plain move", lambda c: 100 * c[2] / c[1] if c[2] else None, "{:.1f}%", "a plain move"),
         bounds is not None and any(c[2] for c in compared)),
        (("Triton / this", lambda c: c[3] / c[1] if c[3] else None, "{:.2f}x", "Triton"),
         triton is not None),
        (("this / previous", lambda c: c[1] / c[4] if c[4] else None, "{:.3f}", "a previous row"),
         previous is not None)) if given]
    print("| " + " | ".join(["T", "cases", "µs"] + [c[0] for c in columns]) + " |")
    print("|---|---|---|" + "---|" * len(columns))
    groups = {}
    for c in compared:
        groups.setdefault(int(c[0]["num_tokens"]), []).append(c)
    for t, cs in sorted(groups.items()) + [("all", compared)]:
        us = [c[1] for c in cs]
        values = [[v for v in map(value, cs) if v is not None] for _, value, _, _ in columns]
        counts = [f"{len(cs)}"] + [f"{len(v)} with {col[3]}" for v, col in zip(values, columns)
                                   if len(v) != len(cs)]
        cells = [spread(v, col[2]) for v, col in zip(values, columns)]
        print("| " + " | ".join([str(t), ", ".join(counts), f"{min(us):.2f}–{max(us):.2f}"] + cells) + " |")


def plain_move_us(b):
    """A bounds row's plain-move reference: `plain_move_us`, or `bound_us` in CSVs of earlier
    builds; None when it has neither (CSVs older still give their floors alone)."""
    v = (b.get("plain_move_us") or b.get("bound_us")) if b else None
    return float(v) if v else None


@exits_on_bad_input
def read_bounds(path):
    """Rows of a `kvbench bounds` CSV by case key (the axis columns it copies from the result
    rows; the key comes from the kvbench binary, scripts/kvbench_schema.py)."""
    key = kvbench_schema.case_key_columns()
    rows = result_rows(path, "a kvbench bounds CSV",
                       key + ["launch_floor_us", "write_floor_us", "move_floor_us"],
                       BOUNDS_NUMBER_COLUMNS)
    return {tuple(r[c] for c in key): r for r in rows}


if __name__ == "__main__":
    sys.exit(main())
