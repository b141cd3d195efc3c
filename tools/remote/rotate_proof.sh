#!/usr/bin/env bash
# Rotated timing on a GPU host, in one command: configs/perf.yaml with `--rotate auto`
# (everything cold), `kvbench bounds` of every case it timed, the seed's Triton timed the same
# way on the same cases, the decode-size cases everything cold / inputs hot (`--hot-inputs`) /
# one DeepSeek-V3 step (`--rotate 61`), the decode-step plot, and a short table last.
#
#   tools/remote/rotate_proof.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds kvbench, libkvbench.so, test_gpu and test_planted_gpu built for the host; OUT_DIR receives
# rotate_proof.tar (every output, packed again after each stage, so a run cut short still leaves
# what it finished) and the CSVs (perf_rotated.csv, bounds_rotated.csv, triton_rotated.csv,
# decode_*.csv). Environment:
#   STAGES="tests perf bounds triton decode" (default: all five) runs those stages; a stage left
#   out reuses its CSV from OUT_DIR when one is there, so the work can be split over two calls
#   (e.g. STAGES="tests perf bounds", then STAGES="triton decode" with OUT_DIR holding the first
#   call's CSVs). The plot and the table always run, on what there is.
#   CASES=optimized (default) times perf.yaml's `optimized` cases; CASES=all adds `seed_port`
#   (about twice the time of the first stage).
#   BUDGET_S=540: every stage is time-boxed so the whole fits in this many seconds (each gets the
#   time left in proportion to its weight among the stages still to run: tests 1, perf 8, bounds
#   3, triton 5, each decode run 1); a stage cut short says so and keeps the rows it wrote
#   (kvbench run, kvbench bounds and triton_baseline.py flush every row).
#   PYTHON=python3 with torch and triton (the Triton stage); matplotlib for the plot, else the
#   plot command is printed to run elsewhere.
# Exit status: 1 if a GPU test, a run, the bounds or the Triton stage failed (a stage cut short
# by its time box is not a failure).
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 3; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
cd "$ROOT"
CONFIG=configs/perf.yaml
CASES=${CASES:-optimized}
BUDGET_S=${BUDGET_S:-540}
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$WORK/cache} KVBENCH_SOURCE_DIR=$ROOT
export KVBENCH=$BIN/kvbench  # the scripts read the case key from it (scripts/kvbench_schema.py)
status=0

STAGES=${STAGES:-tests perf bounds triton decode}
for f in perf_rotated.csv perf_rotated.csv.json bounds_rotated.csv triton_rotated.csv \
         decode_cold.csv decode_hot_inputs.csv decode_61.csv; do
  [ -f "$OUT/$f" ] && cp "$OUT/$f" "$WORK/"  # an earlier call's, for the stages left out
done

pack() {
  tar -C "$WORK" --exclude=./cache -cf "$OUT/rotate_proof.tar.part" . &&
    mv "$OUT/rotate_proof.tar.part" "$OUT/rotate_proof.tar"
  for f in "$WORK"/*.csv "$WORK"/*.csv.json; do [ -f "$f" ] && cp "$f" "$OUT/"; done
  return 0
}

wanted() { [[ " $STAGES " == *" $1 "* ]]; }

# Each stage gets the time left (less RESERVE_S for the plot and the table) in proportion to its
# weight among the stages still to run: a stage run alone gets all of it.
RESERVE_S=15
ORDER=(gpu_tests perf_rotated bounds triton decode_cold decode_hot_inputs decode_61)
declare -A WEIGHT=([gpu_tests]=1 [perf_rotated]=8 [bounds]=3 [triton]=5 [decode_cold]=1
                   [decode_hot_inputs]=1 [decode_61]=1)
declare -A GROUP=([gpu_tests]=tests [perf_rotated]=perf [bounds]=bounds [triton]=triton
                  [decode_cold]=decode [decode_hot_inputs]=decode [decode_61]=decode)

# stage NAME MIN_S CMD...: runs CMD time-boxed (at least MIN_S), logs to NAME.log.
stage() {
  local name=$1 floor=$2 left limit rc rest=0 seen=0 x
  shift 2
  for x in "${ORDER[@]}"; do
    [ "$x" = "$name" ] && seen=1
    [ $seen -eq 1 ] && wanted "${GROUP[$x]}" && rest=$((rest + WEIGHT[$x]))
  done
  left=$((BUDGET_S - RESERVE_S - SECONDS))
  if [ $left -lt "$floor" ]; then
    echo "$name: skipped, ${left}s left of BUDGET_S=${BUDGET_S}"
    return 0
  fi
  limit=$((left * WEIGHT[$name] / rest))
  [ $limit -lt "$floor" ] && limit=$floor
  timeout "$limit" "$@" >"$WORK/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    echo "$name: cut short after ${limit}s (rows written so far kept)"
  else
    echo "$name: rc=$rc; $(tail -1 "$WORK/$name.log" | cut -c1-160)"
    [ $rc -ne 0 ] && status=1
  fi
  echo "  t=${SECONDS}s"
  pack
}

# Case numbers of `kvbench list` whose variant is $1 (or any, for "all"), num_tokens <= $2 and
# kernel $3 (if given), fewest tokens first: a stage cut short loses the largest cases, which are
# past 3x L2 and so timed over one set, as in the committed unrotated run.
cases() {
  "$BIN/kvbench" list "$CONFIG" --format csv |
    awk -F, -v v="$1" -v t="$2" -v k="${3:-}" \
      'NR > 1 && (v == "all" ? $3 != "slot_order" : $3 == v) && $5 <= t && (k == "" || $2 == k) { print $5, $1 }' |
    sort -n -s -k1,1 | cut -d' ' -f2
}
as_flags() { sed 's/^/--case\n/'; }

"$BIN/kvbench" --version
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>/dev/null

# 0. The floor (two launch floors explained by the graph's own launch cost) and rotation tests.
wanted tests && stage gpu_tests 20 bash -c "'$BIN/test_gpu' --gtest_filter='Gpu.GraphFloorFallsWithLaunchesPerSample:Gpu.LaunchFloorDoesNotDependOnLightSampling:Gpu.Scatter*:Gpu.Bounds*:Gpu.BoundKernels*' &&
  '$BIN/test_planted_gpu' --gtest_filter='Planted.Rotat*'"
[ -f "$WORK/gpu_tests.log" ] &&
  grep -E '^  (graph floor|cold |hot |graph )|^\[  (PASSED|FAILED) ' "$WORK/gpu_tests.log"

# 1. perf.yaml, everything cold.
mapfile -t perf_cases < <(cases "$CASES" 1000000000 | as_flags)
wanted perf && stage perf_rotated 60 "$BIN/kvbench" run "$CONFIG" --rotate auto "${perf_cases[@]}" \
  -o "$WORK/perf_rotated.csv"

# 2. Every timed case's plain-move reference, rotated as the case was (light sampling: one floor per case).
wanted bounds && stage bounds 30 "$BIN/kvbench" bounds "$WORK/perf_rotated.csv" -o "$WORK/bounds_rotated.csv" \
  --variant optimized --warmup 2 --min-samples 10 --min-time 0.005 --timeout 1

# 3. The seed's Triton, rotated, through `kvbench run` (scripts/triton_baseline.py, variant
# triton, over libkvbench.so): every case of its two operations once, fewest tokens first, by the
# adapter's own case numbers.
if wanted triton; then
  export KVBENCH_LIB=${KVBENCH_LIB:-$BIN/libkvbench.so}
  mapfile -t tri_cases < <("$PY" scripts/triton_baseline.py list "$CONFIG" --format csv |
    awk -F, 'NR > 1 { print $5, $1 }' | sort -n -s -k1,1 | cut -d' ' -f2 | as_flags)
  stage triton 30 "$PY" scripts/triton_baseline.py "$CONFIG" -o "$WORK/triton_rotated.csv" \
    --rotate auto "${tri_cases[@]}"
fi

# 4. Decode sizes (T <= 128, cache write): everything cold, inputs hot / caches cold, and one
# DeepSeek-V3 step (61 layers, each its own cache).
mapfile -t decode < <(cases optimized 128 reshape_and_cache_flash | as_flags)
wanted decode && stage decode_cold 15 "$BIN/kvbench" run "$CONFIG" --rotate auto "${decode[@]}" -o "$WORK/decode_cold.csv"
wanted decode && stage decode_hot_inputs 15 "$BIN/kvbench" run "$CONFIG" --rotate auto --hot-inputs "${decode[@]}" \
  -o "$WORK/decode_hot_inputs.csv"
wanted decode && stage decode_61 15 "$BIN/kvbench" run "$CONFIG" --rotate 61 "${decode[@]}" -o "$WORK/decode_61.csv"

# 5. The decode-step plot: per-layer µs against T per shape, optimized against the seed's Triton.
plot="scripts/plot.py decode $WORK/perf_rotated.csv $WORK/triton_rotated.csv --out-dir $WORK"
if "$PY" -c 'import matplotlib' 2>/dev/null; then
  $PY $plot >/dev/null || status=1
else
  echo "matplotlib is not importable here: plot elsewhere with python3 $plot (paths inside the tar)"
fi
pack

# 6. The short table: targets (plain move, Triton, the committed unrotated run), then decode µs.
python3 scripts/perf_report.py "$WORK/perf_rotated.csv" --bounds "$WORK/bounds_rotated.csv" \
  --triton "$WORK/triton_rotated.csv" --previous results/h200/perf.csv --cases \
  >"$WORK/perf_report.md" 2>&1 || status=1
python3 tools/perf_targets.py "$WORK/perf_rotated.csv" --bounds "$WORK/bounds_rotated.csv" \
  --triton "$WORK/triton_rotated.csv" --previous results/h200/perf.csv \
  >>"$WORK/perf_report.md" 2>&1 || status=1
python3 - "$WORK" <<'PYEOF'
import csv, os, sys
work = sys.argv[1]
def rows(name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(r["sweep"], r["num_heads"], r["head_dim"], r["block_size"], r["num_tokens"]): r
                for r in csv.DictReader(f) if r["status"] == "passed" and r["variant"] == "optimized"}
with open("results/h200/perf.csv", newline="") as f:
    one = {(r["sweep"], r["num_heads"], r["head_dim"], r["block_size"], r["num_tokens"]): r
           for r in csv.DictReader(f) if r["status"] == "passed" and r["variant"] == "optimized"}
cold, hot, s61 = rows("decode_cold.csv"), rows("decode_hot_inputs.csv"), rows("decode_61.csv")
print("\n== decode, cache write (optimized): median µs per layer; cold (its buffer sets)")
print(f"{'sweep':<18} {'H':>3} {'D':>4} {'BS':>3} {'T':>4} {'rotate 1':>9} {'cold':>12} {'hot inputs':>11} {'rotate 61':>10}")
for k in sorted(cold, key=lambda k: (k[0], int(k[1]), int(k[2]), int(k[3]), int(k[4]))):
    c = cold[k]
    cell = lambda d: f"{float(d[k]['median_us']):.2f}" if k in d else "-"
    print(f"{k[0]:<18} {k[1]:>3} {k[2]:>4} {k[3]:>3} {k[4]:>4} {cell(one):>9} "
          f"{cell(cold):>6} ({c.get('buffer_sets') or '1':>4}) {cell(hot):>11} {cell(s61):>10}")
PYEOF
[ $? -eq 0 ] || status=1
echo
grep -A12 '^| target (optimized, per case)' "$WORK/perf_report.md"
grep -E 'not fully cold' "$WORK/perf_report.md"
pack
rm -rf "$WORK"
echo "t=${SECONDS}s"
exit $status
