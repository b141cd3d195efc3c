# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh gate: the proof of `kvbench ab` (docs/gate.md, "Proof on a GPU"). Stages, in STAGES
# (default "check record power null null_decode"), run in the order given:
#   check   the GPU tests of the timer and runner (test_gpu, test_cupti; CHECK_TIMEOUT, default
#           240 s, bounds each); smoke.yaml
#   record  quick_perf.yaml (events) and context.yaml's T <= 128 after a producer (CUPTI) with
#           --save-samples: real samples for the CPU tests of the verdict statistics
#   power   tests/configs/gate_power.yaml with the test-only delayed cache write: a planted
#           slowdown and speed-up of 3, 5 and 10% (of each case's own time, measured first) at
#           T = 1, 16, 128, 32768, back to back and after a producer, CUPTI
#   null         the build against itself over quick_perf.yaml, NULL_ROUNDS rounds (default 10)
#   null_decode  the same over perf.yaml's T <= 128 after a producer (CUPTI)
# Outputs in OUT_DIR/work (OUT_DIR default dist/gate_proof), packed as OUT_DIR/gate.tar.xz;
# the table (tools/remote/tables.py gate) in OUT_DIR/table.md and on stdout, last. BUDGET_S
# (default 540) skips the stages that would start past it.
DEFAULT_STAGES="check record power null null_decode"
STAGES=${STAGES:-$DEFAULT_STAGES}
NULL_ROUNDS=${NULL_ROUNDS:-10}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-240}
RESERVE_S=0 W_SUB=work
for s in $DEFAULT_STAGES; do MIN_S[$s]=1; done
remote_setup dist/gate_proof
note() { echo "$*" | tee -a "$W/notes.txt"; }

stage_check() {
  gtests test_gpu test_cupti | tee "$W/gtests.txt"
  grep '^test_' "$W/gtests.txt" >>"$W/notes.txt"
  "$KV" run configs/smoke.yaml -o "$W/smoke.csv" >"$W/smoke.log" 2>&1
  note "smoke: rc=$? $(tail -1 "$W/smoke.log")"
}

stage_record() {
  "$KV" run configs/quick_perf.yaml --save-samples -o "$W/record_quick.csv" >"$W/record_quick.log" 2>&1
  note "record quick_perf: rc=$? $(tail -1 "$W/record_quick.log")"
  "$KV" run configs/studies/context.yaml --context after_producer --timer cupti --save-samples \
    -o "$W/record_context.csv" >"$W/record_context.log" 2>&1
  note "record context: rc=$? $(tail -1 "$W/record_context.log")"
}

planted() {  # NAME DELAYS: a build that is this kvbench with the delayed kernel planted
  printf '#!/bin/sh\nexport KVBENCH_PLANT_DELAY_NS=%s\nexec %s "$@"\n' "$2" "$KV" >"$W/$1"
  chmod +x "$W/$1"
  echo "$W/$1"
}

stage_power() {
  local cfg=tests/configs/gate_power.yaml ctx pct dir delays zero build base cur
  for ctx in back_to_back after_producer; do
    [ "$(left_s)" -gt 0 ] || { note "skipped power $ctx: past BUDGET_S"; break; }
    KVBENCH_PLANT_DELAY_NS=0 "$KV" run "$cfg" --context "$ctx" --timer cupti -o "$W/plain_$ctx.csv" \
      >"$W/plain_$ctx.log" 2>&1 || { note "plain $ctx: failed: $(tail -1 "$W/plain_$ctx.log")"; continue; }
    zero=$(planted zero.sh 0)
    for pct in 3 5 10; do
      for dir in slower faster; do
        delays=$("$PY" tools/remote/tables.py delays "$W/plain_$ctx.csv" "$pct" "$dir")
        build=$(planted "d_${ctx}_${pct}_$dir.sh" "$delays")
        base=$zero cur=$build
        [ "$dir" = faster ] && base=$build cur=$zero
        "$KV" ab "$base" "$cur" "$cfg" --context "$ctx" --timer cupti \
          -o "$W/power_${ctx}_${pct}_$dir.csv" >"$W/power_${ctx}_${pct}_$dir.md" 2>"$W/power_${ctx}_${pct}_$dir.log"
        echo "power $ctx $pct% $dir (delays $delays): rc=$?" >>"$W/notes.txt"
      done
    done
  done
}

null_run() {  # NAME WHAT ARGS...: the build against itself
  local name=$1 what=$2 s=$SECONDS
  shift 2
  "$KV" ab "$KV" "$KV" "$@" --rounds "$NULL_ROUNDS" --max-rounds $((NULL_ROUNDS + 6)) \
    -o "$W/$name.csv" >"$W/$name.md" 2>"$W/$name.log"
  note "null $what: rc=$? in $((SECONDS - s)) s: $(tail -1 "$W/$name.md")"
}
stage_null() { null_run null_quick quick_perf configs/quick_perf.yaml; }
stage_null_decode() {
  null_run null_decode "perf T<=128 after_producer cupti" configs/perf.yaml --max-tokens 128 \
    --context after_producer --timer cupti
}

run_stages
"$PY" tools/remote/tables.py gate "$W" >"$OUT_DIR/table.md"
tar -cJf "$OUT_DIR/gate.tar.xz" -C "$OUT_DIR" work
echo "total $SECONDS s"
cat "$OUT_DIR/table.md"
