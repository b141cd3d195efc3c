# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh crosscheck: the measurement cross-checks and the L2 flush study (docs/measurement.md,
# "Cross-checks"). Stages (STAGES, default "a b c d e", in the order given; run again with the same
# OUT_DIR, default results/crosscheck, for the rest); the table last covers whatever is there:
#   a  `kvbench calibrate` copy bandwidth against PyTorch copy_ timed by triton.testing.do_bench
#   b  one case's graph-mode median against Nsight Compute's gpu__time_duration.sum (median)
#   c  run-to-run spread of the median over 5 runs of configs/smoke.yaml, cases >= 100 us
#   d  the L2 flush study (kvbench flush-study) and cold/hot on case 1 (67 MB moved)
#   e  configs/smoke.yaml in each mode: every timed row fills every column
DEFAULT_STAGES="a b c d e"
STAGES=${STAGES:-$DEFAULT_STAGES}
export KVBENCH_CACHE_DIR=${OUT_DIR:-results/crosscheck}/cache  # self-contained: calibrate once, here
remote_setup results/crosscheck
XC=configs/studies/crosscheck.yaml

stage_a() {
  "$KV" calibrate --force -o "$W/calibration.json" | tee "$W/calibrate.log"
  "$PY" - "$W/calibration.json" >"$W/torch_copy.txt" 2>"$W/torch_copy.err" <<'PY'
import json, sys, torch, triton
n = int(json.load(open(sys.argv[1]))["buffer_bytes"])
src = torch.empty(n, dtype=torch.uint8, device="cuda").fill_(90)
dst = torch.empty_like(src)
ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=100, rep=2000, return_mode="median")
print(f"{2 * n / ms / 1e6:.1f}")
PY
}
stage_b() {  # graph-mode time of case 0 against ncu
  "$KV" run "$XC" --case 0 --mode graph -o "$W/xcheck_graph.csv" >"$W/xcheck_graph.log" 2>&1
  ncu --clock-control none --cache-control none --kernel-name regex:concat --launch-skip 50 \
    --launch-count 50 --metrics gpu__time_duration.sum -o "$W/ncu_case0" -f \
    "$KV" run "$XC" --case 0 --mode graph -o "$W/xcheck_ncu_run.csv" >"$W/ncu.log" 2>&1
  ncu --import "$W/ncu_case0.ncu-rep" --csv --page raw --print-units base \
    --metrics gpu__time_duration.sum >"$W/ncu_case0.csv" 2>>"$W/ncu.log"
}
stage_c() {
  local i
  for i in 1 2 3 4 5; do
    "$KV" run configs/smoke.yaml --mode graph -o "$W/smoke_rep$i.csv" >"$W/smoke_rep$i.log" 2>&1
  done
}
stage_d() {  # the copy kernel at several sizes, then case 1 cold/memset, cold/read, hot, graph
  local m tag
  "$KV" flush-study | tee "$W/flush_study.txt"
  for m in "cold --l2-flush memset" "cold --l2-flush read" "hot" "graph"; do
    tag=$(echo "$m" | tr -d '-' | tr ' ' '_')
    # shellcheck disable=SC2086  # m is a mode and its flags
    "$KV" run "$XC" --case 1 --mode $m -o "$W/case1_$tag.csv" >"$W/case1_$tag.log" 2>&1
  done
}
stage_e() {
  local mode
  for mode in cold hot graph; do
    "$KV" run configs/smoke.yaml --mode $mode -o "$W/smoke_$mode.csv" >"$W/smoke_$mode.log" 2>&1
    echo "smoke --mode $mode: rc=$? $(tail -1 "$W/smoke_$mode.log")"
  done
}
run_stages

python3 - "$W" "$(cat "$W/torch_copy.txt" 2>/dev/null)" "$KV" <<'PY'
import csv, glob, json, os, statistics, sys
sys.path.insert(0, "scripts")
import kvbench_schema
out, torch_gbps, kv = sys.argv[1], sys.argv[2], sys.argv[3]
def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))
key_cols = kvbench_schema.case_key_columns(kv)  # the binary's case key
table = []

try:
    kv = json.load(open(f"{out}/calibration.json"))["measured_peak_gbps"]
    t = float(torch_gbps)
    table.append(("(a) copy GB/s: kvbench calibrate vs torch copy_ (do_bench median)",
                  f"{kv:.0f} vs {t:.0f}", f"{100 * (kv - t) / t:+.2f}%", "within 3%",
                  abs(kv - t) / t <= 0.03))
except (OSError, ValueError, KeyError) as e:
    table.append(("(a) copy GB/s", "?", f"failed ({e}); see torch_copy.err", "", False))

try:
    g = float(rows(f"{out}/xcheck_graph.csv")[0]["median_us"])
    with open(f"{out}/ncu_case0.csv") as f:
        r = list(csv.DictReader(f))
    ns = [float(x["gpu__time_duration.sum"].replace(",", "")) for x in r
          if x.get("gpu__time_duration.sum", "").replace(",", "").replace(".", "").isdigit()]
    n = statistics.median(ns) / 1e3
    table.append((f"(b) case 0 us: kvbench graph vs ncu duration (median of {len(ns)})",
                  f"{g:.2f} vs {n:.2f}", f"{100 * (g - n) / n:+.2f}%", "within 5%",
                  abs(g - n) / n <= 0.05))
except Exception as e:
    table.append(("(b) case 0 vs ncu", "?", f"failed: {e}", "", False))

reps = [rows(p) for p in sorted(glob.glob(f"{out}/smoke_rep*.csv"))]
by_case = {}
for rep in reps:
    for r in rep:
        if r["median_us"]:
            by_case.setdefault(tuple(r[c] for c in key_cols), []).append(float(r["median_us"]))
spreads = [(max(v) - min(v)) / statistics.mean(v) for v in by_case.values()
           if len(v) == len(reps) and statistics.mean(v) >= 100]
if spreads:
    table.append((f"(c) smoke x{len(reps)}: max (max-min)/mean of the median, {len(spreads)} cases >= 100 us",
                  "", f"{100 * max(spreads):.2f}%", "at most 2%", max(spreads) <= 0.02))
else:
    table.append(("(c) smoke spread", "", "no case >= 100 us", "", False))

# The timing columns: those an untimed row leaves empty, `samples` to `clock_low` (docs/results.md).
header = kvbench_schema.columns(kv)
timing_cols = header[header.index("samples"):header.index("clock_low") + 1]
for mode in ["cold", "hot", "graph"]:
    p = f"{out}/smoke_{mode}.csv"
    if not os.path.exists(p):
        continue
    rs = rows(p)
    timed = [r for r in rs if r["status"] == "passed"]
    empty = sorted({c for r in timed for c in timing_cols if r[c] == ""})
    unconv = sum(r["converged"] != "true" for r in timed)
    table.append((f"(e) smoke --mode {mode}: {len(timed)}/{len(rs)} passed, {unconv} not converged",
                  "", "empty: " + (",".join(empty) or "none"), "every column filled", not empty))

for p in sorted(glob.glob(f"{out}/case1_*.csv")):
    r = rows(p)[0]
    table.append((f"(d) case 1 {os.path.basename(p)[6:-4]}", f"{r['median_us']} us",
                  f"{r['gbps']} GB/s", "", True))

print("\n== cross-checks")
for name, vals, result, target, ok in table:
    print(f"{'ok ' if ok else 'NO '} {name:<78} {vals:>20} {result:>24} {target}")
PY
