#!/usr/bin/env bash
# Runs on the GPU host: the GPU tests, then `kvbench bounds` over the T <= 128 cases of a result
# CSV (default results/h200/perf.csv, which travels with the tree), then the report's miss table
# with the floors. Binaries come from .carry/bin (scripts/pack_gpu.sh); outputs go to $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${BIN:-.carry/bin}
OUT=${OUT:-results/gpu_bounds}
RESULTS=${1:-results/h200/perf.csv}
mkdir -p "$OUT"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$(mktemp -d)}
status=0
"$BIN/kvbench" --version
for t in test_core test_gpu; do
  "$BIN/$t" >"$OUT/$t.log" 2>&1 || status=1
  echo "$t: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$t.log" | tr '\n' ' ')"
done
"$BIN/kvbench" bounds "$RESULTS" -o "$OUT/bounds.csv" --min-samples 20 --min-time 0.02 \
  --timeout 2 || status=1
cp "$RESULTS.json" "$OUT/" 2>/dev/null
python3 scripts/perf_report.py "$RESULTS" --bounds "$OUT/bounds.csv" | sed -n '/^| T ≤ 128 miss/,$p'
echo "t=${SECONDS}s"
exit $status
