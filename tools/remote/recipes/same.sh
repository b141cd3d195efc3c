# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh same [BASE_BIN]: the proof that a restructure keeps behaviour and speed, against the
# binaries of the commit before it (BASE_BIN, default dist/base, unpacked from
# dist/kvbench-base.tar.xz when that is newer). Stages (STAGES, default
# "tests validation plans ab perf"), in the order given:
#   tests       the GPU test binaries and tests/gpu/worker_fault.sh
#   validation  configs/validation.yaml
#   plans       `kvbench list --plan` of every shipped config on this device, base against current
#   ab          `kvbench ab BASE CURRENT configs/quick_perf.yaml` (fresh workers every round)
#   perf        configs/quick_perf.yaml, the sweep to commit with its sidecar
# Outputs in OUT_DIR (default dist/same_proof); a table last. Exit 1 if a test, a validation or a
# plan differed, or ab called a case slower (its summary line names the faster ones too).
DEFAULT_STAGES="tests validation plans ab perf"
STAGES=${STAGES:-$DEFAULT_STAGES}
BASE=${1:-dist/base}
if [ "$BASE" = dist/base ] && [ dist/kvbench-base.tar.xz -nt dist/base/kvbench ]; then
  tar -xJf dist/kvbench-base.tar.xz || exit 3
fi
BASE=$(cd "$BASE" && pwd) || exit 3
remote_setup dist/same_proof
echo "base $("$BASE/kvbench" --version); current $("$KV" --version)" | tee -a "$W/board.txt"
declare -a ROWS=()
row() { ROWS+=("| $1 | $2 |"); }

stage_tests() {
  local t
  gtests test_core test_reference test_planted test_gpu test_planted_gpu test_convert_gpu |
    tee "$W/gtests.txt"
  cupti_tests | tee -a "$W/gtests.txt"
  while read -r t; do row "${t%%:*}" "${t#*: }"; done < <(grep '^test_' "$W/gtests.txt" | cut -c1-120)
  bash tests/gpu/worker_fault.sh "$KV" "$W/worker_fault" >"$W/worker_fault.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && status=1
  row worker_fault "rc=$rc; $(grep -c 'exit 2;' "$W/worker_fault.log") runs faulted where planted"
}

# test_cupti's tests load libcupti once per process, so each runs in a process of its own (as
# ctest runs them): a line with the count passed, skipped and failed.
cupti_tests() {
  local t suite="" p=0 k=0 f=0 out
  while read -r t; do
    if [[ "$t" == *. ]]; then suite=$t; continue; fi
    out=$("$BIN/test_cupti" --gtest_filter="$suite${t%% *}" 2>&1)
    echo "$out" >>"$W/test_cupti.log"
    if grep -q '^\[  FAILED  \]' <<<"$out"; then f=$((f + 1)); status=1
    elif grep -q '^\[  SKIPPED \]' <<<"$out"; then k=$((k + 1))
    else p=$((p + 1)); fi
  done < <("$BIN/test_cupti" --gtest_list_tests | grep -v '^Running')
  echo "test_cupti: $p passed, $k skipped, $f failed (one process each)"
}

stage_validation() {
  box validation 0 "$KV" run configs/validation.yaml -o "$W/validation.csv"
  row validation.yaml "$(tail -1 "$W/validation.log" | cut -c1-120)"
}

stage_plans() {
  local c n=0 d=0
  for c in configs/*.yaml configs/studies/*.yaml; do
    n=$((n + 1))
    "$BASE/kvbench" list "$c" --plan >"$W/plan_base.txt" 2>&1
    "$KV" list "$c" --plan >"$W/plan_current.txt" 2>&1
    cmp -s "$W/plan_base.txt" "$W/plan_current.txt" || { d=$((d + 1)); echo "plans differ: $c"; }
  done
  [ $d -ne 0 ] && status=1
  row "list --plan (this device)" "$n configs, $d differ"
}

stage_ab() {
  box ab 0 "$KV" ab "$BASE/kvbench" "$KV" configs/quick_perf.yaml --junit "$W/ab.xml" -o "$W/ab.csv"
  row "ab quick_perf" "$(grep -v '^\s*$' "$W/ab.log" | tail -1 | cut -c1-160)"
}

stage_perf() {
  box perf 0 "$KV" run configs/quick_perf.yaml -o "$W/quick_perf.csv"
  row quick_perf.yaml "$(tail -1 "$W/perf.log" | cut -c1-120)"
}

run_stages
echo
echo "| check | result |"
echo "|---|---|"
printf '%s\n' "${ROWS[@]}"
exit $status
