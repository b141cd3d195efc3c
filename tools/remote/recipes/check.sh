# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh check [CONFIG...]: the GPU tests (the exhaustive conversion proof and the planted-bug
# tests included), `kvbench run` on each config given (default smoke), then the bad-input demo
# (configs/bad_input.yaml with and without --check-bounds: every row must be rejected or
# not_supported); a short table last. OUT_DIR defaults to results/gpu_check.
# Exit status 1 if a test or a run failed, or a bad input was not refused.
check_configs() {  # CONFIG...: the GPU tests, the configs, the bad-input demo, into W
  local cfg name rc flags others
  gtests test_core test_reference test_planted test_gpu test_planted_gpu test_convert_gpu
  for cfg in "$@"; do
    name=$(basename "$cfg" .yaml)
    "$KV" run "$cfg" -o "$W/$name.csv" --save-tensors "$W/tensors_$name" >"$W/$name.log" 2>&1
    rc=$?
    echo "kvbench run $cfg: rc=$rc; $(tail -1 "$W/$name.log")"
    [ $rc -ne 0 ] && { status=1; grep -v ' passed ' "$W/$name.log" | tail -20; }
  done
  # Exit 2 (rejected rows) is the expected outcome; any passed/incorrect/failed row is not.
  for flags in "" "--check-bounds"; do
    name=bad_input${flags:+_checked}
    "$KV" run configs/bad_input.yaml -o "$W/$name.csv" $flags >"$W/$name.log" 2>&1
    rc=$?
    others=$(grep -cE '^\[[0-9]+/[0-9]+\] +(passed|incorrect|failed) ' "$W/$name.log")
    echo "kvbench run configs/bad_input.yaml $flags: rc=$rc (expected 2); rows not rejected/not_supported: $others"
    { [ "$rc" -ne 2 ] || [ "$others" -ne 0 ]; } && status=1
    grep -E '^\[' "$W/$name.log" | cut -c1-220
  done
}

if [ "$recipe" = check ]; then
  remote_setup results/gpu_check
  [ $# -eq 0 ] && set -- configs/smoke.yaml
  check_configs "$@"
  for cfg in "$@"; do
    echo "== $(basename "$cfg" .yaml): status, median us, GB/s, case"
    grep -E '^\[' "$W/$(basename "$cfg" .yaml).log" | awk '{ $1=""; print }' | cut -c1-150
  done
  exit $status
fi
