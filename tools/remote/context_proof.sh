#!/usr/bin/env bash
# Runs on the GPU host: the timing-in-context proof (docs/measurement.md, "The CUPTI timer" and
# "Contexts"). Binaries from $KVBENCH_BIN (default dist/bin, tools/remote/pack_gpu.sh); outputs
# under $OUT_DIR (default results/context_proof), packed into $OUT_DIR/context_proof.tgz after
# every stage. STAGES picks stages (default all), BUDGET_S (540) time-boxes the whole script,
# CONTEXTS picks the contexts of stages ctx and cb and their order (default the four below).
# Stages, in the order they run (the committed results first; a budget spent skips the rest):
#   tests   the GPU tests (test_gpu, test_cupti, test_planted_gpu's rotation test) and
#           pdl_order.sh on kvbench (no kernel loads ahead of its PDL wait)
#   ctx     configs/studies/context.yaml in each context, the seed's Triton, seed_port and
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
#   sass    code size of the seed's Triton kernels compiled by the stages before (their cubins in
#           TRITON_CACHE_DIR; tools/sass_size.py, which reads kvbench's own kernels anywhere)
# The table last: tools/remote/context_table.py.
# GPU_NAME (say H200): run only on a board whose name contains it; on any other, exit 3 before
# anything runs or is written (results/BOARD/ must hold that board's figures only).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -n "${GPU_NAME:-}" ]; then
  board=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  if [[ "$board" != *"$GPU_NAME"* ]]; then
    echo "context_proof: GPU_NAME=$GPU_NAME, but this board is '${board:-none found}': nothing run" >&2
    exit 3
  fi
fi
BIN=$(cd "${KVBENCH_BIN:-dist/bin}" && pwd)
OUT_DIR=${OUT_DIR:-results/context_proof}
STAGES=${STAGES:-tests ctx ap cb pairs plan xc ncu sass}
BUDGET_S=${BUDGET_S:-540}
CONTEXTS=${CONTEXTS:-back_to_back cold after_producer layer}
mkdir -p "$OUT_DIR"
export KVBENCH_CACHE_DIR=$OUT_DIR/cache KVBENCH_SOURCE_DIR=$PWD KVBENCH_LIB=$BIN/libkvbench.so
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} TRITON_CACHE_DIR=$OUT_DIR/triton_cache
PY=${PYTHON:-python3}
KV=$BIN/kvbench
want() { [[ " $STAGES " == *" $1 "* ]]; }
# The archive is written outside OUT_DIR, then moved in: one created inside changes the folder
# tar is reading ("file changed as we read it", exit 1), and that stage's archive was lost.
pack() {
  local tmp
  tmp=$(mktemp "${TMPDIR:-/tmp}/context_proof.XXXXXX") &&
    tar -C "$OUT_DIR" --exclude=./cache --exclude=./triton_cache --exclude=./context_proof.tgz \
      -czf "$tmp" . && mv "$tmp" "$OUT_DIR/context_proof.tgz" || { rm -f "$tmp"; echo "pack: failed" >&2; }
}
st() {  # NAME SECONDS CMD...: time-boxed within BUDGET_S, output in OUT_DIR/NAME.log
  local name=$1 secs=$2; shift 2
  local left=$((BUDGET_S - SECONDS - 10))
  if [ $left -lt 10 ]; then echo "$name: skipped (budget spent)"; return; fi
  [ "$secs" -gt "$left" ] && secs=$left
  local s=$SECONDS
  timeout "$secs" "$@" >"$OUT_DIR/$name.log" 2>&1
  echo "$name: rc=$? in $((SECONDS - s)) s: $(grep -v '^\s*$' "$OUT_DIR/$name.log" | tail -1 | cut -c1-160)"
  pack
}
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee "$OUT_DIR/gpu.txt"
"$KV" --version | tee -a "$OUT_DIR/gpu.txt"

if want tests; then
  st test_gpu 150 "$BIN/test_gpu"
  # One process a test, as ctest runs them: the CUPTI loader's outcome is per process.
  for t in $("$BIN/test_cupti" --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
    st "test_cupti_${t//./_}" 30 "$BIN/test_cupti" --gtest_filter="$t"
  done
  st test_planted_rotation 60 "$BIN/test_planted_gpu" --gtest_filter='*Rotat*'
  st pdl_order 60 bash tools/remote/pdl_order.sh "$KV"  # no load ahead of a kernel's PDL wait
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]' "$OUT_DIR"/test_*.log | head -20
fi
if want ctx; then
  for ctx in $CONTEXTS; do
    st "ctx_$ctx" 120 "$PY" scripts/triton_baseline.py configs/studies/context.yaml \
      --variants triton,seed_port,optimized --context "$ctx" --timer cupti -o "$OUT_DIR/$ctx.csv"
  done
fi
if want ap; then
  st after_producer_perf 240 "$PY" scripts/triton_baseline.py configs/perf.yaml --max-tokens 128 \
    --variants triton,optimized --context after_producer --timer cupti \
    -o "$OUT_DIR/after_producer_perf.csv"
  st bounds_after_producer_perf 240 "$KV" bounds "$OUT_DIR/after_producer_perf.csv" --variant optimized \
    -o "$OUT_DIR/bounds_after_producer_perf.csv" --min-samples 10 --min-time 0.005 --timeout 0.5
fi
if want cb; then
  for ctx in $CONTEXTS; do
    [ -f "$OUT_DIR/$ctx.csv" ] || continue
    grep -qs ' rows of ' "$OUT_DIR/bounds_$ctx.log" && continue  # done by an earlier run into OUT_DIR
    st "bounds_$ctx" 160 "$KV" bounds "$OUT_DIR/$ctx.csv" --variant optimized \
      -o "$OUT_DIR/bounds_$ctx.csv" --min-samples 10 --min-time 0.01 --timeout 0.5
  done
fi
if want pairs; then
  st pairs 60 "$BIN/probe_context"
fi
if want plan; then
  # shellcheck disable=SC2086  # PLAN_ARGS is a list of arguments
  st concat_plan 150 "$BIN/probe_concat_plan" configs/perf.yaml --tokens 128 ${PLAN_ARGS:-}
fi
XC=configs/studies/cupti.yaml
if want xc; then
  st xc_events 90 "$KV" run "$XC" --timer events -o "$OUT_DIR/xc_events.csv"
  st xc_cupti 90 "$KV" run "$XC" --timer cupti -o "$OUT_DIR/xc_cupti.csv"
fi
if want ncu; then
  for c in 0 1 2; do
    st "ncu_$c" 90 ncu --clock-control none --cache-control none \
      --kernel-name 'regex:^(concat_|cache_write_|mla_cache_)' --launch-skip 20 --launch-count 30 \
      --metrics gpu__time_duration.sum --csv --page raw --print-units base \
      "$KV" run "$XC" --case "$c" --timer events -o "$OUT_DIR/ncu_run_$c.csv"
  done
fi
if want sass; then  # the seed's Triton kernels as compiled by the stages before (their cubins)
  mapfile -t cubins < <(find "$OUT_DIR/triton_cache" -name '*.cubin' 2>/dev/null)
  if [ ${#cubins[@]} -gt 0 ]; then
    python3 tools/sass_size.py "${cubins[@]}" >"$OUT_DIR/sass_triton.txt"
    echo "sass: $(wc -l <"$OUT_DIR/sass_triton.txt") Triton kernels"; cat "$OUT_DIR/sass_triton.txt"
  fi
fi
"$PY" tools/remote/context_table.py "$OUT_DIR" | tee "$OUT_DIR/table.md"
pack
