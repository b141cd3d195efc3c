# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh context: timing in context (docs/measurement.md, "The CUPTI timer" and "Contexts").
# Outputs in OUT_DIR (default results/context_proof), packed into OUT_DIR/context_proof.tgz after
# every command. Stages (STAGES, default all, in this order; BUDGET_S, default 540, time-boxes the
# whole; CONTEXTS, default the four below, the contexts of stages ctx and cb, in order):
#   tests   the GPU tests (test_gpu, test_cupti one test a process, test_planted_gpu's rotation
#           test) and pdl_order.sh on kvbench (no kernel loads ahead of its PDL wait)
#   ctx     configs/studies/context.yaml in each context: the seed's Triton, seed_port and
#           optimized, by the cupti timer
#   ap      perf.yaml's T <= 128 cases after a producer, Triton and optimized, by the cupti timer;
#           then `kvbench bounds` of its optimized rows
#   cb      `kvbench bounds` of the optimized rows of each context's CSV that stage ctx wrote (one
#           an earlier run into OUT_DIR finished is kept)
#   pairs   probe_context: the T=1 cache write in two-kernel graphs, each kernel timed on its own
#   plan    perf.yaml's optimized concat cases at T=128 on each launch path (probe_concat_plan),
#           back to back and after a producer; PLAN_ARGS adds arguments (--heads 128 --walk ...)
#   xc      configs/studies/cupti.yaml by the event timer and by the cupti timer
#   ncu     its three large cases under Nsight Compute (gpu__time_duration.sum)
#   sass    code size of the seed's Triton kernels the stages before compiled (their cubins in
#           TRITON_CACHE_DIR; tools/sass_size.py)
# The tables of `tools/remote/tables.py context` last. With GPU_NAME (say H200) it runs only on a
# board of that name: results/BOARD/ must hold that board's figures only.
DEFAULT_STAGES="tests ctx ap cb pairs plan xc ncu sass"
STAGES=${STAGES:-$DEFAULT_STAGES}
CONTEXTS=${CONTEXTS:-back_to_back cold after_producer layer}
RESERVE_S=10 ARCHIVE=context_proof.tgz BOARD_FILE=gpu.txt
remote_setup results/context_proof
export KVBENCH_LIB=$BIN/libkvbench.so TRITON_CACHE_DIR=$OUT_DIR/triton_cache
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
"$KV" --version | tee -a "$W/gpu.txt"
XC=configs/studies/cupti.yaml

stage_tests() {
  local t
  box test_gpu 150 "$BIN/test_gpu"
  # One process a test, as ctest runs them: the CUPTI loader's outcome is per process.
  for t in $("$BIN/test_cupti" --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
    box "test_cupti_${t//./_}" 30 "$BIN/test_cupti" --gtest_filter="$t"
  done
  box test_planted_rotation 60 "$BIN/test_planted_gpu" --gtest_filter='*Rotat*'
  box pdl_order 60 bash tools/remote/pdl_order.sh "$KV"
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]' "$W"/test_*.log | head -20
}
stage_ctx() {
  local ctx
  for ctx in $CONTEXTS; do
    box "ctx_$ctx" 120 "$PY" scripts/triton_baseline.py configs/studies/context.yaml \
      --variants triton,seed_port,optimized --context "$ctx" --timer cupti -o "$W/$ctx.csv"
  done
}
stage_ap() {
  box after_producer_perf 240 "$PY" scripts/triton_baseline.py configs/perf.yaml --max-tokens 128 \
    --variants triton,optimized --context after_producer --timer cupti -o "$W/after_producer_perf.csv"
  box bounds_after_producer_perf 240 "$KV" bounds "$W/after_producer_perf.csv" --variant optimized \
    -o "$W/bounds_after_producer_perf.csv" --min-samples 10 --min-time 0.005 --timeout 0.5
}
stage_cb() {
  local ctx
  for ctx in $CONTEXTS; do
    [ -f "$W/$ctx.csv" ] || continue
    grep -qs ' rows of ' "$W/bounds_$ctx.log" && continue  # done by an earlier run into OUT_DIR
    box "bounds_$ctx" 160 "$KV" bounds "$W/$ctx.csv" --variant optimized \
      -o "$W/bounds_$ctx.csv" --min-samples 10 --min-time 0.01 --timeout 0.5
  done
}
stage_pairs() { box pairs 60 "$BIN/probe_context"; }
# shellcheck disable=SC2086  # PLAN_ARGS is a list of arguments
stage_plan() { box concat_plan 150 "$BIN/probe_concat_plan" configs/perf.yaml --tokens 128 ${PLAN_ARGS:-}; }
stage_xc() {
  box xc_events 90 "$KV" run "$XC" --timer events -o "$W/xc_events.csv"
  box xc_cupti 90 "$KV" run "$XC" --timer cupti -o "$W/xc_cupti.csv"
}
stage_ncu() {
  local c
  for c in 0 1 2; do
    box "ncu_$c" 90 ncu --clock-control none --cache-control none \
      --kernel-name 'regex:^(concat_|cache_write_|mla_cache_)' --launch-skip 20 --launch-count 30 \
      --metrics gpu__time_duration.sum --csv --page raw --print-units base \
      "$KV" run "$XC" --case "$c" --timer events -o "$W/ncu_run_$c.csv"
  done
}
stage_sass() {
  local cubins
  mapfile -t cubins < <(find "$TRITON_CACHE_DIR" -name '*.cubin' 2>/dev/null)
  [ ${#cubins[@]} -gt 0 ] || return 0
  python3 tools/sass_size.py "${cubins[@]}" >"$W/sass_triton.txt"
  echo "sass: $(wc -l <"$W/sass_triton.txt") Triton kernels"
  cat "$W/sass_triton.txt"
}

run_stages
"$PY" tools/remote/tables.py context "$W" | tee "$W/table.md"
pack
exit $status
