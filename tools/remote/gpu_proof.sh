#!/usr/bin/env bash
# Runs on the GPU host: the proof of a kernel or runner change in one command. gpu_check.sh with
# configs/validation.yaml, then configs/perf.yaml compared against BASELINE (default
# results/h200/perf.csv), configs/studies/slot_order.yaml, and configs/default.yaml while time is
# left. Outputs are written to a scratch folder and packed into $OUT_DIR/proof.tar after every stage,
# so $OUT_DIR (default results/gpu_proof) holds one whole archive even when the run is cut short.
# Binaries come from $KVBENCH_BIN (default dist/bin, see tools/remote/pack_gpu.sh).
# Exit status: 1 if a GPU test, a validation or a run failed, or if compare found incorrect or
# missing cases; slower cases are listed but do not fail it (boards differ by a few percent).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${KVBENCH_BIN:-dist/bin}
OUT_DIR=${OUT_DIR:-results/gpu_proof}
BASELINE=${1:-results/h200/perf.csv}
BUDGET_S=${BUDGET_S:-560}  # configs/default.yaml is skipped or cut short past this many seconds
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK=$(mktemp -d)
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$WORK/cache} KVBENCH_SOURCE_DIR=$PWD
status=0

pack() {  # $OUT_DIR/proof.tar from everything written so far (the calibration cache left out)
  tar -C "$WORK" --exclude=./cache -cf "$OUT_DIR/proof.tar.part" . && mv "$OUT_DIR/proof.tar.part" "$OUT_DIR/proof.tar"
}

run() {  # name config [seconds]: kvbench run, its last line, its exit status into `status`
  local name=$1 cfg=$2 limit=${3:-} rc
  ${limit:+timeout "$limit"} "$BIN/kvbench" run "$cfg" -o "$WORK/$name.csv" >"$WORK/$name.log" 2>&1
  rc=$?
  if [ -n "$limit" ] && [ $rc -eq 124 ]; then
    echo "kvbench run $cfg: cut short after ${limit}s (rows written so far kept)"
  else
    echo "kvbench run $cfg: rc=$rc; $(tail -1 "$WORK/$name.log")"
    [ $rc -ne 0 ] && status=1
  fi
  echo "t=${SECONDS}s"
  pack
}

"$BIN/kvbench" --version
OUT_DIR=$WORK/check bash tools/remote/gpu_check.sh configs/validation.yaml >"$WORK/gpu_check.log" 2>&1 || status=1
grep -E '^test_|^kvbench run|rc=' "$WORK/gpu_check.log" | cut -c1-200
rm -rf "$WORK"/check/tensors_*
echo "t=${SECONDS}s"
pack

run perf configs/perf.yaml
run slot_order configs/studies/slot_order.yaml
left=$((BUDGET_S - SECONDS))
if [ $left -gt 60 ]; then
  run default configs/default.yaml $left
else
  echo "configs/default.yaml skipped: ${left}s left of BUDGET_S=${BUDGET_S}"
fi

"$BIN/kvbench" compare --allow-device-mismatch "$BASELINE" "$WORK/perf.csv" >"$WORK/compare.md" 2>&1
rc=$?
echo "kvbench compare $BASELINE: rc=$rc (0 same, 1 slower cases, 2 incorrect or missing cases, 3 usage)"
[ $rc -ge 2 ] && status=1
grep -E '^### ' "$WORK/compare.md"
grep -E '^\| \*\*(slower|incorrect|missing)' "$WORK/compare.md" | cut -d'|' -f3-12 | head -30
python3 tools/perf_targets.py "$WORK/perf.csv" --peers 2>/dev/null | grep -A8 '^| target'
pack
rm -rf "$WORK"
exit $status
