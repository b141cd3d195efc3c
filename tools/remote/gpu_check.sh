#!/usr/bin/env bash
# Runs on the GPU host: the GPU tests (the exhaustive conversion proof and the planted-bug tests
# included), then `kvbench run` on each config given (default: smoke), then the bad-input demo
# (configs/bad_input.yaml, with and without --check-bounds: every row must be rejected or
# not_supported), writing CSVs and logs under $OUT_DIR (default results/gpu_check); a short table
# last. Binaries come from $KVBENCH_BIN (default dist/bin, see tools/remote/pack_gpu.sh); nothing
# is built here.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${KVBENCH_BIN:-dist/bin}
OUT_DIR=${OUT_DIR:-results/gpu_check}
mkdir -p "$OUT_DIR"
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(configs/smoke.yaml)

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
export KVBENCH_SOURCE_DIR=$PWD
status=0
for t in test_core test_reference test_planted test_gpu test_planted_gpu test_convert_gpu; do
  "$BIN/$t" --gtest_brief=1 >"$OUT_DIR/$t.log" 2>&1
  rc=$?
  echo "$t: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT_DIR/$t.log" | tr '\n' ' ')"
  [ $rc -ne 0 ] && { status=1; tail -30 "$OUT_DIR/$t.log"; }
done
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .yaml)
  "$BIN/kvbench" run "$cfg" -o "$OUT_DIR/$name.csv" --save-tensors "$OUT_DIR/tensors_$name" >"$OUT_DIR/$name.log" 2>&1
  rc=$?
  echo "kvbench run $cfg: rc=$rc; $(tail -1 "$OUT_DIR/$name.log")"
  [ $rc -ne 0 ] && { status=1; grep -v ' passed ' "$OUT_DIR/$name.log" | tail -20; }
done
# Bad input: exit 2 (rejected rows) is the expected outcome; any passed/incorrect/failed row is not.
for flags in "" "--check-bounds"; do
  name=bad_input${flags:+_checked}
  "$BIN/kvbench" run configs/bad_input.yaml -o "$OUT_DIR/$name.csv" $flags >"$OUT_DIR/$name.log" 2>&1
  rc=$?
  others=$(grep -cE '^\[[0-9]+/[0-9]+\] +(passed|incorrect|failed) ' "$OUT_DIR/$name.log")
  echo "kvbench run configs/bad_input.yaml $flags: rc=$rc (expected 2); rows not rejected/not_supported: $others"
  [ "$rc" -ne 2 ] || [ "$others" -ne 0 ] && status=1
  grep -E '^\[' "$OUT_DIR/$name.log" | cut -c1-220
done
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .yaml)
  echo "== $name: status, median us, GB/s, case"
  grep -E '^\[' "$OUT_DIR/$name.log" | awk '{ $1=""; print }' | cut -c1-150
done
exit $status
