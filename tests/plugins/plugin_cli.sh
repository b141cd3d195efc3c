#!/usr/bin/env bash
# `kvbench list|run --plugin` without a GPU (docs/plugins.md): a plugin's variants in list and
# list --plan (supports() refusing one size), --variants, and every plugin that cannot be used
# refused with exit 3 and one line naming it, before any device is looked for.
# Usage: plugin_cli.sh KVBENCH STANDIN_DIR EXAMPLE_PLUGIN WORKDIR
set -uo pipefail
K=$1 S=$2 EXAMPLE=$3 W=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$W"
fail=0
check() {  # name expected_rc pattern command...: the exit status and a line of the output
  local name=$1 want=$2 pattern=$3 out rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want), output:"
    echo "$out" | head -5
    fail=1
  else
    echo "ok   $name: $(grep -E -m1 -- "$pattern" <<<"$out" | cut -c1-160)"
  fi
}
cfg=$HERE/standin.yaml
check "list names the plugin's variant" 0 '^1 reshape_and_cache_flash standin T=1 H=2 D=128' \
  "$K" list "$cfg" --plugin "$S/standin_good.so"
# A plugin that prints in its init: the text goes to stderr, the CSV on stdout starts with its
# header.
first=$("$K" list "$cfg" --format csv --plugin "$S/standin_init_prints.so" 2>"$W/prints.err" | head -1)
if [[ "$first" == case,* ]] && grep -q "standin: hello from init" "$W/prints.err"; then
  echo "ok   a plugin's print in init goes to stderr, not into list --format csv"
else
  echo "FAIL a plugin's print in init: stdout starts '$first', stderr: $(head -2 "$W/prints.err")"
  fail=1
fi
check "a plugin whose destructor aborts ends no command" 0 '^1 reshape_and_cache_flash standin T=1' \
  "$K" list "$cfg" --plugin "$S/standin_dtor_aborts.so"
# A plugin that changes directory in its init: a relative -o still names the file in the
# directory kvbench was started in (a stand-in worker runs the cases).
mkdir -p "$W/chdir" && rm -f "$W/chdir/r.csv"
(cd "$W/chdir" && STANDIN_KVBENCH=$K KVBENCH_WORKER="python3 $ROOT/tests/workers/standin_worker.py" \
  "$K" run "$cfg" --case 0 --plugin "$S/standin_init_chdir.so" -o r.csv >/dev/null 2>&1)
if [ -s "$W/chdir/r.csv" ] && grep -q '"csv": "r.csv"' "$W/chdir/r.csv.json"; then
  echo "ok   a plugin's chdir in init moves no relative path"
else
  echo "FAIL a plugin's chdir in init: no $W/chdir/r.csv with its sidecar"
  fail=1
fi
# A plugin that blocks every signal and ignores SIGTERM in its init: SIGTERM still ends a run,
# with 143 (the loader restores the mask and the handlers).
mkdir -p "$W/signals"
(cd "$W/signals" && STANDIN_KVBENCH=$K STANDIN_DELAY=2 \
   KVBENCH_WORKER="python3 $ROOT/tests/workers/standin_worker.py" \
   exec "$K" run "$cfg" --plugin "$S/standin_init_blocks_signals.so" -o r.csv >/dev/null 2>&1) &
pid=$!
sleep 1.5
kill -TERM "$pid" 2>/dev/null
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  echo "FAIL a plugin that blocks signals: SIGTERM did not end the run"
  fail=1
else
  wait "$pid"
  rc=$?
  if [ "$rc" = 143 ]; then echo "ok   a plugin that blocks signals: SIGTERM ends the run (143)"
  else echo "FAIL a plugin that blocks signals: exit $rc after SIGTERM, want 143"; fail=1; fi
fi
# A plugin that forks in its init: one list, not two (the copy ends where init returns).
n=$("$K" list "$cfg" --format csv --plugin "$S/standin_init_forks.so" 2>/dev/null | grep -c '^case,')
sleep 0.5
if [ "$n" = 1 ]; then echo "ok   a plugin that forks in init: one list"
else echo "FAIL a plugin that forks in init: $n lists"; fail=1; fi
check "the variant needs its plugin" 3 "unknown variant 'standin'" "$K" list "$cfg"
check "plan: supports() refuses" 0 '^5 .*standin .*D=512.* \| not supported: standin: head_size above 256, its largest$' \
  "$K" list "$cfg" --plugin "$S/standin_good.so" --plan --device-profile h200
check "plan: supported" 0 '^1 .*standin .*D=128.* \| none: a variant from plugin .*standin_good.so$' \
  "$K" list "$cfg" --plugin "$S/standin_good.so" --plan --device-profile h200
# A supports() that crashes, ends the process or hangs at case 5 is asked in a child: exit 3 naming
# the plugin, the variant and the case, and nothing on stdout (no half-printed list).
# (A crash is SIGSEGV, or SIGABRT where ASan's handler takes the SIGSEGV.)
for how in "crashes:crashed \(SIG(SEGV|ABRT)\)" "exits:ended the process \(exit status 0\)" \
           "hangs:did not answer within 30 s \(hung\?\)"; do
  flavour=${how%%:*} what=${how#*:}
  check "plan: supports() $flavour" 3 "^kvbench: plugin .*standin_supports_$flavour.so: variant standin $what planning reshape_and_cache_flash standin T=1 H=2 D=512 .*\(list --plan asks its supports\(\)\)$" \
    "$K" list "$cfg" --plugin "$S/standin_supports_$flavour.so" --plan --device-profile h200
  [ "$flavour" = hangs ] && continue  # another 30 s for what the others show
  out=$("$K" list "$cfg" --plugin "$S/standin_supports_$flavour.so" --plan --device-profile h200 2>/dev/null)
  [ -z "$out" ] || { echo "FAIL plan: supports() $flavour: printed $(wc -l <<<"$out") lines"; fail=1; }
done
# As CSV, the reason's comma is inside its quoted field: every line has the header's fields.
"$K" list "$cfg" --plugin "$S/standin_good.so" --plan --device-profile h200 --format csv >"$W/plan.csv"
python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert len({len(r) for r in rows}) == 1, "fields per line: %s" % sorted({len(r) for r in rows})
assert any(r[-1] == "not supported: standin: head_size above 256, its largest" for r in rows)' \
  "$W/plan.csv" || { echo "FAIL: list --format csv --plan: a field holding a comma split its line"; exit 1; }
n=$("$K" list "$ROOT/configs/smoke.yaml" --plugin "$EXAMPLE" --variants plain | grep -c ' plain ')
all=$("$K" list "$ROOT/configs/smoke.yaml" --plugin "$EXAMPLE" --variants plain | wc -l)
cache=$("$K" list "$ROOT/configs/smoke.yaml" --variants optimized | grep -c reshape_and_cache_flash)
if [ "$n" -gt 0 ] && [ "$n" = "$all" ] && [ "$n" = "$cache" ]; then
  echo "ok   --variants plain: the $n cache-write cases of smoke.yaml"
else
  echo "FAIL --variants plain: $n plain of $all listed, $cache cache-write cases"; fail=1
fi
# An empty name in the list is a typo, refused rather than dropped.
for list in "optimized," ",optimized" "optimized,,seed_port"; do
  check "--variants '$list'" 3 "^kvbench: --variants: expected comma-separated variant names, got '$list' \\(an empty name\\)" \
    "$K" list "$ROOT/configs/smoke.yaml" --variants "$list"
done
check "--variants without the plugin" 3 "^kvbench: --variants: unknown variant 'plain'.*--plugin" \
  "$K" list "$ROOT/configs/smoke.yaml" --variants plain
check "missing file" 3 "^kvbench: $W/none.so: " "$K" list "$cfg" --plugin "$W/none.so"
check "not ELF" 3 "not an ELF shared object" "$K" list "$cfg" --plugin "$cfg"
check "no version symbol" 3 "standin_no_version.so: .*kvbench_plugin_abi_version" \
  "$K" list "$cfg" --plugin "$S/standin_no_version.so"
check "wrong version" 3 "standin_bad_version.so: .*99.*1" "$K" list "$cfg" --plugin "$S/standin_bad_version.so"
check "no entry point" 3 "standin_no_init.so: no symbol kvbench_plugin_init" \
  "$K" list "$cfg" --plugin "$S/standin_no_init.so"
check "name clash with kvbench" 3 "standin_clash.so: .*optimized" "$K" list "$cfg" --plugin "$S/standin_clash.so"
check "name clash between plugins" 3 "standin_good_copy.so: .*standin" \
  "$K" list "$cfg" --plugin "$S/standin_good.so" --plugin "$S/standin_good_copy.so"
check "init fails" 3 "standin_init_fails.so: .*compute capability 12.0" \
  "$K" list "$cfg" --plugin "$S/standin_init_fails.so"
# A path the sidecar cannot record (not UTF-8): named, exit 3, on the CPU as on a GPU.
cp "$S/standin_good.so" "$W/bad"$'\xff'".so"
check "a plugin path that is not UTF-8" 3 "^kvbench: .*bad[?][.]so: a plugin path is UTF-8" \
  "$K" run "$cfg" --plugin "$W/bad"$'\xff'".so" -o "$W/bad.csv"
# A plugin that ends the process with status 0 as it loads: exit 3 and one line, never 0.
check "run: a plugin that exits at load" 3 \
  "^kvbench: .*standin_load_exits.so: ended the process while loading .*exit status 0" \
  "$K" run "$cfg" --plugin "$S/standin_load_exits.so" -o "$W/exits.csv"
check "a plugin that crashes in init" 3 "standin_init_crashes.so: crashed .*(SIGSEGV)" \
  "$K" list "$cfg" --plugin "$S/standin_init_crashes.so"
# run: refused before any device is looked for (exit 4 on this machine otherwise).
check "run: bad plugin before the device" 3 "standin_no_init.so: no symbol kvbench_plugin_init" \
  "$K" run "$cfg" --plugin "$S/standin_no_init.so" -o "$W/run.csv"
cp "$S/standin_good.so" "$W/victim.so"
check "run: an output that is a plugin" 3 "victim.so" \
  "$K" run "$cfg" --plugin "$W/victim.so" -o "$W/victim.so"
cmp -s "$S/standin_good.so" "$W/victim.so" || { echo "FAIL the plugin named as output changed"; fail=1; }
exit $fail
