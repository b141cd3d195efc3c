#!/usr/bin/env bash
# Runs on the GPU host: the proof of `kvbench ab` (docs/gate.md, "Proof on a GPU"). Stages, in
# STAGES (default "check record power null null_decode"), run in the order given:
#   check   the board; the GPU tests of the timer and runner (test_gpu, test_cupti); smoke.yaml
#   record  quick_perf.yaml (events) and context.yaml's T <= 128 after a producer (CUPTI) with
#           --save-samples: real samples for the CPU tests of the verdict statistics
#   power   tests/configs/gate_power.yaml with the test-only delayed cache write: a planted
#           slowdown and speed-up of 3, 5 and 10% (of each case's own time, measured first) at
#           T = 1, 16, 128, 32768, back to back and after a producer, CUPTI
#   null         the build against itself over quick_perf.yaml, NULL_ROUNDS rounds (default 10)
#   null_decode  the same over perf.yaml's T <= 128 after a producer (CUPTI)
# Everything goes to OUT_DIR (packed as gate.tar.xz) and the table (tools/remote/gate_table.py)
# to OUT_DIR/table.md and stdout, last. BUDGET_S (default 540) skips the stages that would start
# past it. Binaries: KVBENCH (default dist/bin/kvbench), test binaries beside it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
KVBENCH=$(realpath "${KVBENCH:-dist/bin/kvbench}")
BIN=$(dirname "$KVBENCH")
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT_DIR:-/tmp/gate_proof}
BUDGET_S=${BUDGET_S:-540}
STAGES=${STAGES:-check record power null null_decode}
NULL_ROUNDS=${NULL_ROUNDS:-10}
W=$OUT_DIR/work
mkdir -p "$W"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$W/cache} KVBENCH_SOURCE_DIR=$PWD
start=$SECONDS
left() { [ $((SECONDS - start)) -lt "$BUDGET_S" ] || { echo "skipped $1: past BUDGET_S" | tee -a "$W/notes.txt"; return 1; }; }
has() { [[ " $STAGES " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$W/board.txt"

stage_check() {
  for t in test_gpu test_cupti; do
    timeout "${CHECK_TIMEOUT:-240}" "$BIN/$t" --gtest_brief=1 >"$W/$t.log" 2>&1
    echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/$t.log" | tr '\n' ' ')" | tee -a "$W/notes.txt"
  done
  "$KVBENCH" run configs/smoke.yaml -o "$W/smoke.csv" >"$W/smoke.log" 2>&1
  echo "smoke: rc=$? $(tail -1 "$W/smoke.log")" | tee -a "$W/notes.txt"
}

stage_record() {
  "$KVBENCH" run configs/quick_perf.yaml --save-samples -o "$W/record_quick.csv" >"$W/record_quick.log" 2>&1
  echo "record quick_perf: rc=$? $(tail -1 "$W/record_quick.log")" | tee -a "$W/notes.txt"
  "$KVBENCH" run configs/studies/context.yaml --context after_producer --timer cupti --save-samples \
    -o "$W/record_context.csv" >"$W/record_context.log" 2>&1
  echo "record context: rc=$? $(tail -1 "$W/record_context.log")" | tee -a "$W/notes.txt"
}

# A build that is this kvbench with the delayed kernel planted, its delays per case.
planted() {  # NAME DELAYS
  printf '#!/bin/sh\nexport KVBENCH_PLANT_DELAY_NS=%s\nexec %s "$@"\n' "$2" "$KVBENCH" >"$W/$1"
  chmod +x "$W/$1"
  echo "$W/$1"
}

stage_power() {
  cfg=tests/configs/gate_power.yaml
  for ctx in back_to_back after_producer; do
    left "power $ctx" || break
    KVBENCH_PLANT_DELAY_NS=0 "$KVBENCH" run "$cfg" --context "$ctx" --timer cupti -o "$W/plain_$ctx.csv" \
      >"$W/plain_$ctx.log" 2>&1 || { echo "plain $ctx: failed: $(tail -1 "$W/plain_$ctx.log")" | tee -a "$W/notes.txt"; continue; }
    zero=$(planted zero.sh 0)
    for pct in 3 5 10; do
      for dir in slower faster; do
        delays=$("$PYTHON" tools/remote/gate_table.py delays "$W/plain_$ctx.csv" "$pct" "$dir")
        planted_build=$(planted "d_${ctx}_${pct}_$dir.sh" "$delays")
        base=$zero cur=$planted_build
        [ "$dir" = faster ] && base=$planted_build cur=$zero
        "$KVBENCH" ab "$base" "$cur" "$cfg" --context "$ctx" --timer cupti \
          -o "$W/power_${ctx}_${pct}_$dir.csv" >"$W/power_${ctx}_${pct}_$dir.md" 2>"$W/power_${ctx}_${pct}_$dir.log"
        echo "power $ctx $pct% $dir (delays $delays): rc=$?" >>"$W/notes.txt"
      done
    done
  done
}

stage_null() {
  s=$SECONDS
  "$KVBENCH" ab "$KVBENCH" "$KVBENCH" configs/quick_perf.yaml --rounds "$NULL_ROUNDS" \
    --max-rounds $((NULL_ROUNDS + 6)) -o "$W/null_quick.csv" >"$W/null_quick.md" 2>"$W/null_quick.log"
  echo "null quick_perf: rc=$? in $((SECONDS - s)) s: $(tail -1 "$W/null_quick.md")" | tee -a "$W/notes.txt"
}

stage_null_decode() {
  s=$SECONDS
  "$KVBENCH" ab "$KVBENCH" "$KVBENCH" configs/perf.yaml --max-tokens 128 --context after_producer \
    --timer cupti --rounds "$NULL_ROUNDS" --max-rounds $((NULL_ROUNDS + 6)) \
    -o "$W/null_decode.csv" >"$W/null_decode.md" 2>"$W/null_decode.log"
  echo "null perf T<=128 after_producer cupti: rc=$? in $((SECONDS - s)) s: $(tail -1 "$W/null_decode.md")" | tee -a "$W/notes.txt"
}

for stage in $STAGES; do
  left "$stage" && "stage_$stage"
done

"$PYTHON" tools/remote/gate_table.py table "$W" >"$OUT_DIR/table.md"
rm -rf "$W/cache"
tar -cJf "$OUT_DIR/gate.tar.xz" -C "$OUT_DIR" work
echo "total $((SECONDS - start)) s"
cat "$OUT_DIR/table.md"
