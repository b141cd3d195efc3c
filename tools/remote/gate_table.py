#!/usr/bin/env python3
"""tools/remote/gate_proof.sh's helper.

  gate_table.py delays PLAIN.csv PCT slower|faster   the KVBENCH_PLANT_DELAY_NS that plants PCT%
      into each case of PLAIN.csv (rows in case order): slower: PCT% of its median; faster: the
      delay the base build carries so that the plain kernel is PCT% faster than it
  gate_table.py table WORKDIR                         the proof's table, markdown

CSVs (result rows, `kvbench compare` verdicts) are read as kvbench reads them
(scripts/kvbench_schema.py); a bad one is one line on stderr naming the file, and exit 2.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402


def rows(path):
    return [row for _, row in kvbench_schema.read_result_rows(path)[1]]


def delays(plain, pct, direction):
    p = float(pct) / 100
    out = []
    for i, (line, r) in enumerate(kvbench_schema.read_result_rows(plain)[1]):
        # An untimed row: no delay.
        us = kvbench_schema.number(r.get("median_us") or "", plain, line, "median_us") or 0
        ns = p * us * 1000 if direction == "slower" else p / (1 - p) * us * 1000
        out.append("%d:%d" % (i, round(ns)))
    return ",".join(out)


def null_table(w):
    lines = ["| no false alarm: the build against itself | cases | same | slower | faster | "
             "ambiguous | ambiguous before re-measurement |", "|---|---|---|---|---|---|---|"]
    for name, what in (("null_quick", "quick_perf.yaml, events"),
                       ("null_decode", "perf.yaml T <= 128, after_producer, CUPTI")):
        path = os.path.join(w, name + ".csv")
        if not os.path.exists(path):
            continue
        r = rows(path)
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
        ctx_pct_dir = os.path.basename(path)[len("power_"):-len(".csv")]
        ctx, pct, direction = ctx_pct_dir.rsplit("_", 2)
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


def table(w):
    out = []
    board = os.path.join(w, "board.txt")
    if os.path.exists(board):
        out.append("board: " + open(board).read().strip())
    notes = os.path.join(w, "notes.txt")
    if os.path.exists(notes):
        out += ["    " + line.rstrip() for line in open(notes) if not line.startswith("power ")]
    out += [""] + null_table(w) + [""] + power_table(w)
    print("\n".join(out))


def main(argv):
    try:
        if argv[1] == "delays":
            print(delays(*argv[2:5]))
        else:
            table(argv[2])
    except InputError as e:
        print(f"gate_table.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
