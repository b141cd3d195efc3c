#!/usr/bin/env bash
# Runs on the GPU host: the supervisor's checks on rows real workers write (a row is read back
# before it enters the CSV, --resume checks the rows it keeps, merge checks each shard's rows
# against its sidecar). Binaries from $KVBENCH_BIN (default dist/bin, tools/remote/pack_gpu.sh);
# files under $OUT_DIR (default /tmp/runner_checks). Prints one line per check, then exits 1 if
# any failed. With the stand-in worker (KVBENCH_WORKER, tests/workers/standin_worker.py) it runs
# anywhere; its rows pass, so there the bad_input.yaml check fails as it should.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${KVBENCH_BIN:-dist/bin}
K=$BIN/kvbench
W=${OUT_DIR:-/tmp/runner_checks}
rm -rf "$W" && mkdir -p "$W"
CFG=configs/smoke.yaml
ARGS=(--max-tokens 128)
fail=0
say() { printf '%-6s %s\n' "$1" "$2"; [ "$1" = ok ] || fail=1; }

"$K" run "$CFG" "${ARGS[@]}" -o "$W/all.csv" >"$W/all.log" 2>&1
rc=$?
rows=$(($(wc -l <"$W/all.csv") - 1))
bad=$(grep -c "the worker sent" "$W/all.csv")
[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && say ok "run: exit 0, $rows rows, none refused as malformed" ||
  say FAIL "run: exit $rc, $rows rows, $bad refused as malformed: $(tail -2 "$W/all.log")"

for i in 0 1; do "$K" run "$CFG" "${ARGS[@]}" --shard $i/2 -o "$W/s$i.csv" >/dev/null 2>&1; done
"$K" merge "$W/merged.csv" "$W/s0.csv" "$W/s1.csv" >"$W/merge.log" 2>&1
rc=$?
[ $rc -eq 0 ] && say ok "merge of two shards: $(head -1 "$W/merge.log")" ||
  say FAIL "merge of two shards: exit $rc: $(head -2 "$W/merge.log")"

cp "$W/all.csv.json" "$W/r.csv.json"
head -n $((rows / 2 + 1)) "$W/all.csv" >"$W/r.csv"
"$K" run "$CFG" "${ARGS[@]}" -o "$W/r.csv" --resume >"$W/resume.log" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$W/r.csv")" -eq $((rows + 1)) ] && say ok "--resume of half the rows: $(tail -1 "$W/resume.log")" ||
  say FAIL "--resume: exit $rc: $(tail -2 "$W/resume.log")"

"$K" compare "$W/all.csv" "$W/merged.csv" >"$W/compare.log" 2>&1
rc=$?
[ $rc -le 1 ] && say ok "compare all vs merged: exit $rc, $(tail -1 "$W/compare.log" | cut -c1-120)" ||
  say FAIL "compare all vs merged: exit $rc: $(tail -2 "$W/compare.log")"
# configs/bad_input.yaml: every row rejected or not_supported (exit 2), one key per row, so its
# shards merge.
for i in 0 1; do
  "$K" run configs/bad_input.yaml --check-bounds --shard $i/2 -o "$W/bad$i.csv" >"$W/bad$i.log" 2>&1
  echo "bad_input shard $i: exit $?" >>"$W/bad.log"
done
"$K" merge "$W/bad.csv" "$W/bad0.csv" "$W/bad1.csv" >>"$W/bad.log" 2>&1
rc=$?
rows=$(($(wc -l <"$W/bad.csv") - 1))
col=$("$K" schema --columns | tail -n +2 | cut -d, -f1 | grep -nx status | cut -d: -f1)
others=$(tail -n +2 "$W/bad.csv" | cut -d, -f"$col" | grep -cvE '^(rejected|not_supported)$')
[ $rc -eq 0 ] && [ "$rows" -eq 41 ] && [ "$others" -eq 0 ] &&
  [ "$(grep -c 'exit 2$' "$W/bad.log")" -eq 2 ] &&
  say ok "bad_input.yaml in two shards (exit 2 each), merged: $rows rows, all rejected or not_supported" ||
  say FAIL "bad_input.yaml: merge exit $rc, $rows rows, $others neither rejected nor not_supported: $(tail -3 "$W/bad.log" | tr "\n" ";")"
# A plugin's variant (examples/plugin, `plain`) beside kvbench's own, in two shards: merged
# without the plugin, as the unsharded run.
P=$BIN/kvbench_example_plugin.so
PARGS=(--plugin "$P" --variants plain,optimized --max-tokens 128)
"$K" run "$CFG" "${PARGS[@]}" -o "$W/p.csv" >"$W/p.log" 2>&1
rc=$?
for i in 0 1; do "$K" run "$CFG" "${PARGS[@]}" --shard $i/2 -o "$W/p$i.csv" >>"$W/p.log" 2>&1; done
"$K" merge "$W/pm.csv" "$W/p0.csv" "$W/p1.csv" >"$W/pm.log" 2>&1
mrc=$?
"$K" compare "$W/p.csv" "$W/pm.csv" >"$W/pc.log" 2>&1
crc=$?
[ $rc -eq 0 ] && [ $mrc -eq 0 ] && [ $crc -le 1 ] &&
  say ok "plugin variant in two shards, merged: $(head -1 "$W/pm.log"); compare: $(tail -1 "$W/pc.log" | cut -c1-100)" ||
  say FAIL "plugin variant: run exit $rc, merge exit $mrc, compare exit $crc: $(tail -1 "$W/pm.log") $(tail -1 "$W/p.log")"
exit $fail
