#!/usr/bin/env bash
# Runs on the GPU host: the CPU and GPU test binaries, then perf.yaml's `optimized` cases with
# T <= 128 (kvbench run --case), then `kvbench bounds` over that CSV on the same board, then the
# report's miss table with the floors. Binaries come from $KVBENCH_BIN (default dist/bin, see
# tools/remote/pack_gpu.sh); outputs go to $OUT_DIR (default results/gpu_bounds).
# Exit status 1 if a test, the run or the bounds failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${KVBENCH_BIN:-dist/bin}
OUT_DIR=${OUT_DIR:-results/gpu_bounds}
CONFIG=${1:-configs/perf.yaml}
mkdir -p "$OUT_DIR"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$(mktemp -d)} KVBENCH_SOURCE_DIR=$PWD
status=0
"$BIN/kvbench" --version
for t in test_core test_gpu; do
  "$BIN/$t" >"$OUT_DIR/$t.log" 2>&1 || status=1
  echo "$t: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT_DIR/$t.log" | tr '\n' ' ')"
done
mapfile -t cases < <("$BIN/kvbench" list "$CONFIG" --format csv |
  awk -F, 'NR > 1 && $3 == "optimized" && $5 <= 128 { print "--case"; print $1 }')
"$BIN/kvbench" run "$CONFIG" "${cases[@]}" -o "$OUT_DIR/small.csv" >"$OUT_DIR/small.log" 2>&1 || status=1
echo "kvbench run $CONFIG (T <= 128, optimized): $(tail -1 "$OUT_DIR/small.log")"
"$BIN/kvbench" bounds "$OUT_DIR/small.csv" -o "$OUT_DIR/bounds.csv" --min-samples 20 --min-time 0.02 \
  --timeout 2 2>/dev/null || status=1
python3 tools/perf_targets.py "$OUT_DIR/small.csv" --bounds "$OUT_DIR/bounds.csv" |
  sed -n '/^| T ≤ 128 within/p;/^| T ≤ 128 miss/,$p'
echo "t=${SECONDS}s"
exit $status
