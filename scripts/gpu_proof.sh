#!/usr/bin/env bash
# Runs on the GPU host: the proof of a kernel or runner change in one command (device calls are
# rationed and return at most 8 files). gpu_check.sh with configs/validation.yaml, then
# configs/perf.yaml gated against BASELINE (default results/h200/perf.csv, which travels with the
# tree), configs/slot_order.yaml, and configs/default.yaml while time is left. Everything lands
# in one $OUT/proof.tar; a short summary is printed last. Binaries come from .carry/bin
# (scripts/pack_gpu.sh). Exit status: gpu_check's, or 1 if a run failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${BIN:-.carry/bin}
OUT=${OUT:-results/gpu_proof}
BASELINE=${1:-results/h200/perf.csv}
BUDGET_S=${BUDGET_S:-560}  # default.yaml is skipped or cut short past this many seconds
mkdir -p "$OUT"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$OUT/cache} KVBENCH_SOURCE_DIR=$PWD
"$BIN/kvbench" --version
status=0

OUT=$OUT/check bash scripts/gpu_check.sh configs/validation.yaml >"$OUT/gpu_check.log" 2>&1 || status=1
grep -E '^test_|^kvbench run|rc=' "$OUT/gpu_check.log" | cut -c1-200
rm -rf "$OUT"/check/tensors_*
echo "t=${SECONDS}s"

run() {  # name config [timeout]
  local name=$1 cfg=$2 limit=${3:-0} rc
  if [ "$limit" -gt 0 ]; then
    timeout "$limit" "$BIN/kvbench" run "$cfg" -o "$OUT/$name.csv" >"$OUT/$name.log" 2>&1
  else
    "$BIN/kvbench" run "$cfg" -o "$OUT/$name.csv" >"$OUT/$name.log" 2>&1
  fi
  rc=$?
  echo "kvbench run $cfg: rc=$rc; $(tail -1 "$OUT/$name.log")"
  [ $rc -ne 0 ] && status=1
  echo "t=${SECONDS}s"
}
run perf configs/perf.yaml
run slot_order configs/slot_order.yaml
left=$((BUDGET_S - SECONDS))
if [ $left -gt 60 ]; then
  run default configs/default.yaml $left
else
  echo "configs/default.yaml skipped: ${left}s left of BUDGET_S=${BUDGET_S}"
fi

"$BIN/kvbench" compare --allow-device-mismatch "$BASELINE" "$OUT/perf.csv" >"$OUT/compare.md" 2>&1
echo "kvbench compare $BASELINE: rc=$? (1: slower cases beyond the threshold)"
grep -E '^### ' "$OUT/compare.md"
grep -E '^\| \*\*(slower|incorrect|missing)' "$OUT/compare.md" | cut -d'|' -f3-12 | head -30
python3 scripts/perf_report.py "$OUT/perf.csv" --peers 2>/dev/null | grep -A8 '^| target'

rm -rf "$OUT/cache"
tar -C "$OUT" -cf /tmp/kvbench_proof.tar . && find "$OUT" -mindepth 1 -delete &&
  mv /tmp/kvbench_proof.tar "$OUT/proof.tar"
exit $status
