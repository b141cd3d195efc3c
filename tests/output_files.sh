#!/usr/bin/env bash
# Usage: output_files.sh KVBENCH PYTHON SCENARIO
# The files kvbench writes (docs/cli.md, "Output files"): an output never replaces a device node
# or FIFO, never overwrites an input, and a run that cannot start leaves existing files as they
# were. Each scenario works in a private temporary folder, prints what failed and exits 1, or
# exits 77 (ctest: skipped) where it cannot run here (device nodes need root for mknod).
set -u
KVB=$1 PY=$2 SCENARIO=$3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
G=$HERE/data/gate
SMOKE=$ROOT/configs/smoke.yaml
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KVBENCH_WORKER="$PY $HERE/workers/standin_worker.py" STANDIN_KVBENCH=$KVB

fail() {
  echo "FAIL: $*"
  exit 1
}
# expect CODE REGEX COMMAND...: exit code CODE and REGEX in its stderr.
expect() {
  local want=$1 regex=$2
  shift 2
  "$@" >"$T/.out" 2>"$T/.err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, expected $want: $(cat "$T/.err")"
  grep -Eq -- "$regex" "$T/.err" || fail "$*: stderr does not match /$regex/: $(cat "$T/.err")"
}
kind() { stat -c %F "$1"; }
# Two shards of smoke.yaml and their sidecars, from the stand-in worker.
shards() {
  for i in 0 1; do
    "$KVB" run "$SMOKE" --shard $i/2 -o "$T/s$i.csv" >/dev/null 2>&1 || fail "shard $i did not run"
  done
}

case $SCENARIO in
device_nodes)
  # As root, a device node given as an output stays a device node: written in place (--junit)
  # or refused (merge OUT, run -o: they keep a sidecar beside it); /dev/full's ENOSPC is exit 3.
  [ "$(id -u)" -eq 0 ] || { echo "skipped: mknod needs root"; exit 77; }
  mknod "$T/null" c 1 3 && mknod "$T/full" c 1 7 || { echo "skipped: mknod refused"; exit 77; }
  expect 1 "slower" "$KVB" compare "$G/baseline.csv" "$G/slower.csv" --junit "$T/null"
  [ "$(kind "$T/null")" = "character special file" ] || fail "--junit replaced the device node"
  expect 3 "full: cannot write \(No space left on device\)" \
    "$KVB" compare "$G/baseline.csv" "$G/slower.csv" --junit "$T/full"
  [ "$(kind "$T/full")" = "character special file" ] || fail "--junit replaced /dev/full's twin"
  shards
  expect 3 "^kvbench: OUT .*/null: is a character device, not a regular file" \
    "$KVB" merge "$T/null" "$T/s0.csv" "$T/s1.csv"
  [ "$(kind "$T/null")" = "character special file" ] || fail "merge replaced the device node"
  [ ! -e "$T/null.json" ] || fail "merge wrote a sidecar beside a device node"
  expect 3 "^kvbench: --output .*/null: is a character device" "$KVB" run "$SMOKE" -o "$T/null"
  [ "$(kind "$T/null")" = "character special file" ] || fail "run replaced the device node"
  ;;
fifo_outputs)
  # A FIFO output: --junit and bounds -o write into it in place; run -o and --resume refuse it
  # at once (they read it back), and merge OUT refuses it.
  mkfifo "$T/junit" "$T/out"
  cat "$T/junit" >"$T/got" &
  expect 1 "slower" "$KVB" compare "$G/baseline.csv" "$G/slower.csv" --junit "$T/junit"
  wait
  [ "$(kind "$T/junit")" = "fifo" ] || fail "--junit replaced the FIFO"
  grep -q "<testsuite" "$T/got" || fail "the JUnit report did not reach the FIFO's reader"
  expect 3 "^kvbench: --output .*/out: is a FIFO, not a regular file" \
    timeout 20 "$KVB" run "$SMOKE" -o "$T/out" --resume
  shards
  expect 3 "^kvbench: OUT .*/out: is a FIFO" timeout 20 "$KVB" merge "$T/out" "$T/s0.csv" "$T/s1.csv"
  [ "$(kind "$T/out")" = "fifo" ] || fail "a refused output is no longer a FIFO"
  ;;
no_device)
  # run and bounds without a device, and a worker that cannot start, leave an existing output,
  # its sidecar and a missing folder as they were.
  cp "$G/baseline.csv" "$T/x.csv"
  echo '{"kept": true}' >"$T/x.csv.json"
  CUDA_VISIBLE_DEVICES=-1 KVBENCH_WORKER= expect 4 "no CUDA device" "$KVB" run "$SMOKE" -o "$T/x.csv"
  cmp -s "$G/baseline.csv" "$T/x.csv" || fail "run without a device changed its output"
  grep -q kept "$T/x.csv.json" || fail "run without a device replaced the sidecar"
  STANDIN_FATAL="no CUDA device: stand-in" expect 4 "stand-in" "$KVB" run "$SMOKE" -o "$T/x.csv"
  cmp -s "$G/baseline.csv" "$T/x.csv" || fail "a worker that cannot start changed the output"
  grep -q kept "$T/x.csv.json" || fail "a worker that cannot start replaced the sidecar"
  STANDIN_FATAL="no CUDA device: stand-in" expect 4 "stand-in" "$KVB" run "$SMOKE" -o "$T/new/y.csv"
  [ ! -e "$T/new" ] || fail "a run that could not start created its output folder"
  cp "$G/baseline.csv" "$T/b.csv"
  CUDA_VISIBLE_DEVICES=-1 expect 4 "no CUDA device" \
    "$KVB" bounds "$ROOT/results/h200/perf_small.csv" -o "$T/b.csv"
  cmp -s "$G/baseline.csv" "$T/b.csv" || fail "bounds without a device changed its output"
  # Interrupted before the first case ends: nothing written either.
  STANDIN_DELAY=60 "$KVB" run "$SMOKE" -o "$T/x.csv" >/dev/null 2>"$T/.err" &
  pid=$!
  sleep 2
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc -eq 143 ] || fail "SIGTERM: exit $rc: $(cat "$T/.err")"
  grep -q "before the first case ended; .*x.csv unchanged" "$T/.err" || fail "$(cat "$T/.err")"
  cmp -s "$G/baseline.csv" "$T/x.csv" || fail "a run interrupted before its first row changed its output"
  grep -q kept "$T/x.csv.json" || fail "a run interrupted before its first row replaced the sidecar"
  [ -z "$(ls "$T" | grep -Ev '^(x.csv|x.csv.json|b.csv)$')" ] || fail "files left behind: $(ls "$T")"
  ;;
output_is_input)
  # An output that is an input, by name, symlink or hard link, is refused before anything is
  # written; so is an output that is another output.
  cp "$SMOKE" "$T/c.yaml"
  expect 3 "^kvbench: --output .*c.yaml: is also an input \(the config " "$KVB" run "$T/c.yaml" -o "$T/c.yaml"
  cmp -s "$SMOKE" "$T/c.yaml" || fail "run overwrote its config"
  cp "$ROOT/results/h200/perf_small.csv" "$T/r.csv"
  ln "$T/r.csv" "$T/r_link.csv"
  ln -s r.csv "$T/r_sym.csv"
  for out in r.csv r_link.csv r_sym.csv; do
    expect 3 "^kvbench: --output .*$out: is also an input \(the result CSV " \
      "$KVB" bounds "$T/r.csv" -o "$T/$out"
    cmp -s "$ROOT/results/h200/perf_small.csv" "$T/r.csv" || fail "bounds -o $out overwrote its input"
  done
  shards
  cp "$T/s0.csv" "$T/s0.keep"
  cp "$T/s0.csv.json" "$T/s0.json.keep"
  expect 3 "^kvbench: OUT .*s0.csv: is shard 0/2 of a run" "$KVB" merge "$T/s0.csv" "$T/s1.csv"
  expect 3 "^kvbench: OUT .*s0.csv: is also an input \(a shard " \
    "$KVB" merge "$T/s0.csv" "$T/s0.csv" "$T/s1.csv"
  cmp -s "$T/s0.csv" "$T/s0.keep" && cmp -s "$T/s0.csv.json" "$T/s0.json.keep" ||
    fail "merge overwrote a shard or its sidecar"
  expect 3 "^kvbench: OUT .*c.yaml: is also an input \(the config " \
    "$KVB" merge "$T/c.yaml" "$T/s0.csv" "$T/s1.csv" --config "$T/c.yaml"
  cmp -s "$SMOKE" "$T/c.yaml" || fail "merge overwrote the config"
  expect 3 "^kvbench: --junit .*m.csv.json: is also the output --output's sidecar" \
    "$KVB" run "$SMOKE" -o "$T/m.csv" --baseline "$G/baseline.csv" --junit "$T/m.csv.json"
  # The gate reads both CSVs' sidecars: neither is an output either.
  cp "$ROOT/results/h200/smoke.csv" "$T/b.csv"
  cp "$ROOT/results/h200/smoke.csv.json" "$T/b.csv.json"
  cp "$T/b.csv" "$T/n.csv"
  cp "$T/b.csv.json" "$T/n.csv.json"
  for side in b n; do
    expect 3 "^kvbench: --junit .*$side.csv.json: is also an input \(the .*sidecar " \
      "$KVB" compare "$T/b.csv" "$T/n.csv" --junit "$T/$side.csv.json"
    cmp -s "$ROOT/results/h200/smoke.csv.json" "$T/$side.csv.json" || fail "compare --junit overwrote $side.csv.json"
  done
  expect 3 "^kvbench: --output .*b.csv.json: is also an input \(the baseline's sidecar " \
    "$KVB" run "$SMOKE" -o "$T/b.csv.json" --baseline "$T/b.csv"
  expect 3 "^kvbench: --junit .*b.csv.json: is also an input \(the baseline's sidecar " \
    "$KVB" run "$SMOKE" -o "$T/r2.csv" --baseline "$T/b.csv" --junit "$T/b.csv.json"
  cmp -s "$ROOT/results/h200/smoke.csv.json" "$T/b.csv.json" || fail "run overwrote the baseline's sidecar"
  ;;
fifo_config)
  # The config is read once: from a FIFO or <(...) it runs, and the sidecar holds its hash.
  mkfifo "$T/c.yaml"
  cat "$SMOKE" >"$T/c.yaml" &
  timeout 60 "$KVB" run "$T/c.yaml" -o "$T/f.csv" >/dev/null 2>"$T/.err" || fail "FIFO config: $(cat "$T/.err")"
  wait
  timeout 60 "$KVB" run <(cat "$SMOKE") -o "$T/p.csv" >/dev/null 2>"$T/.err" || fail "<(...) config: $(cat "$T/.err")"
  "$KVB" run "$SMOKE" -o "$T/r.csv" >/dev/null 2>&1 || fail "the plain run failed"
  for f in f p; do
    [ "$(wc -l <"$T/$f.csv")" -eq "$(wc -l <"$T/r.csv")" ] || fail "$f.csv: not every case ran"
    want=$(grep -o '"fnv1a64": *"[0-9a-f]*"' "$T/r.csv.json")
    grep -q "$want" "$T/$f.csv.json" || fail "$f.csv.json: config hash differs from the file's ($want)"
  done
  ;;
*)
  echo "unknown scenario $SCENARIO"
  exit 2
  ;;
esac
echo "ok: $SCENARIO"
