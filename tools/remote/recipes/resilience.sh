# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh resilience: resilient sweeps and the supervisor's checks on rows real workers write
# (docs/workers.md, docs/scale-out.md), in about a minute. Stages (STAGES, default all, in order):
#   fault      a planted faulting launch (KVBENCH_PLANT_FAULT) mid-way through 200 cases of
#              validation.yaml: that case fails with "device fault ...", the other 199 pass
#   admission  tests/configs/too_big.yaml: the 894 GB case fails with "needs ... GB", the small one
#              after it passes, the run exits 2 (a failed case), not 137
#   memory     KVBENCH_MEMORY_REPORT over smoke.yaml: estimate against measured peak; then a clean
#              run of it (no row refused as malformed), which the next three are compared against
#   resume     SIGTERM mid-way through smoke.yaml, then --resume: exit 143, sidecar finalized, the
#              union is the clean run's case set
#   shard      --shard 0/2 and 1/2, merged: the clean run's case set
#   devices    --devices all: every case, rows of the GPU's UUID
#   bad        bad_input.yaml with --check-bounds in two shards (exit 2 each), merged: 41 rows,
#              every one rejected or not_supported
#   plugin     the example plugin's `plain` beside `optimized` in two shards, merged without the
#              plugin, compared against the unsharded run
#   full       (only when named, or VALIDATION_FULL=1) all of validation.yaml, timed
# A table last; exit status 1 if a check failed. OUT_DIR defaults to results/resilience_proof.
DEFAULT_STAGES="fault admission memory resume shard devices bad plugin"
[ "${VALIDATION_FULL:-0}" = 1 ] && DEFAULT_STAGES+=" full"
STAGES=${STAGES:-$DEFAULT_STAGES}
remote_setup results/resilience_proof
"$KV" --version
TABLE=()
result() {  # stage, expectation, observed, ok (0/1)
  local verdict=PASS
  [ "$4" = 0 ] || { verdict=FAIL; status=1; }
  TABLE+=("| $1 | $2 | $3 | $verdict |")
  echo "[$verdict] $1: $3"
}
rows() { echo $(($(wc -l <"$1") - 1)); }
keys() { tail -n +2 "$1" | cut -d, -f2-17 | sort; }  # the sorted case keys of a result CSV
col() {  # CSV FILE, column name -> that column of every row (no quoting in these columns)
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { print $k }' "$1"
}
status_reason() {  # CSV FILE, row number (1 = first data row) -> "status: reason" (a quoted reason)
  python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
n = int(sys.argv[2])
row = rows[n - 1] if len(rows) >= n else {"status": "missing", "reason": ""}
print(row["status"] + (": " + row["reason"] if row["reason"] else ""))' "$1" "$2"
}
same_as_clean() {  # CSV, compare's output: the clean run's case set, and compare same or noise
  "$KV" compare "$W/clean.csv" "$1" >"$2" 2>&1
  [ $? -le 1 ] && [ "$(keys "$1")" = "$(keys "$W/clean.csv")" ]
}

stage_fault() {
  local rc reason passed t0=$SECONDS
  # shellcheck disable=SC2046  # one --case and 200 numbers
  KVBENCH_PLANT_FAULT=500 "$KV" run configs/validation.yaml --case $(seq 400 599) -o "$W/fault.csv" >"$W/fault.log" 2>&1
  rc=$?
  reason=$(awk -F, 'NR > 1 && $18 == "failed"' "$W/fault.csv" | head -3 | cut -d, -f2-6,18-19)
  passed=$(awk -F, 'NR > 1 && $18 == "passed"' "$W/fault.csv" | wc -l)
  [ "$rc" = 2 ] && [ "$(rows "$W/fault.csv")" = 200 ] && [ "$passed" = 199 ] &&
    grep -q "device fault: an illegal memory access was encountered" <<<"$reason"
  result "planted fault at case 500 of validation 400-599" "exit 2; 1 failed (device fault), 199 passed" \
    "exit $rc; $(rows "$W/fault.csv") rows, $passed passed; $(cut -d, -f6- <<<"$reason") ($((SECONDS - t0)) s)" $?
}
stage_admission() {
  local rc first second
  KVBENCH_MEMORY_REPORT=1 "$KV" run tests/configs/too_big.yaml -o "$W/too_big.csv" >"$W/too_big.log" 2>&1
  rc=$?
  first=$(status_reason "$W/too_big.csv" 1) second=$(status_reason "$W/too_big.csv" 2)
  [ "$rc" = 2 ] && grep -q "^failed: needs .* GB host memory, .* GB available$" <<<"$first" && [ "$second" = passed ]
  result "too big for host memory, then T=16" "exit 2; failed 'needs ... GB', then passed" "exit $rc; $first; then $second" $?
}
stage_memory() {
  local rc bad
  KVBENCH_MEMORY_REPORT=1 "$KV" run configs/smoke.yaml -o "$W/memory.csv" >"$W/memory.log" 2>&1
  rc=$?
  grep -h "^memory case" "$W/memory.log" >"$W/memory.txt"
  # "memory case N: estimate host EH device ED bytes; measured host MH (...) device MD (...)"
  awk '{ eh = $6; ed = $8; mh = $12; md = $(NF - 2)
         if (mh > 0) { r = eh / mh; if (r > maxh) maxh = r; if (!minh || r < minh) minh = r }
         if (md > 0) { r = ed / md; if (r > maxd) maxd = r; if (!mind || r < mind) mind = r }
         if (eh + 0 > big + 0) { big = eh; line = sprintf("case %s host %.3g/%.3g GB, device %.3g/%.3g GB", $3, eh / 1e9, mh / 1e9, ed / 1e9, md / 1e9) } }
       END { printf "estimate/measured: host %.2f-%.2f, device %.2f-%.2f; largest %s\n", minh, maxh, mind, maxd, line }' \
    "$W/memory.txt" >"$W/memory_summary.txt"
  [ -s "$W/memory.txt" ] && [ "$rc" = 0 ]
  result "memory estimate vs peak (smoke.yaml)" "estimate >= peak, same order" "$(cut -c1-160 "$W/memory_summary.txt")" $?
  # The clean run the next stages are held against (no memory probe: it polls the driver).
  "$KV" run configs/smoke.yaml -o "$W/clean.csv" >"$W/clean.log" 2>&1
  rc=$? bad=$(grep -c "the worker sent" "$W/clean.csv")
  [ "$rc" = 0 ] && [ "$bad" = 0 ]
  result "clean smoke.yaml" "exit 0, no row refused as malformed" "exit $rc, $(rows "$W/clean.csv") rows, $bad refused" $?
}
stage_resume() {
  local pid term_rc before sidecar resume_rc
  "$KV" run configs/smoke.yaml -o "$W/resumed.csv" >"$W/resumed.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -f "$W/resumed.csv" ] && [ "$(rows "$W/resumed.csv")" -ge 20 ] && break
    sleep 0.1
  done
  kill -TERM $pid
  wait $pid
  term_rc=$? before=$(rows "$W/resumed.csv")
  sidecar=$(grep -E '"(interrupted|cases_done)"' "$W/resumed.csv.json" | tr -d ' \n')
  "$KV" run configs/smoke.yaml -o "$W/resumed.csv" --resume >>"$W/resumed.log" 2>&1
  resume_rc=$?
  [ "$term_rc" = 143 ] && [ "$resume_rc" = 0 ] && same_as_clean "$W/resumed.csv" "$W/compare_resumed.md"
  result "SIGTERM mid smoke.yaml, then --resume" "143; union == clean; compare same/noise" \
    "exit $term_rc after $before rows ($sidecar); resume exit $resume_rc; $(tail -1 "$W/compare_resumed.md" | cut -c1-110)" $?
}
stage_shard() {
  local r0 r1 rm_
  "$KV" run configs/smoke.yaml --shard 0/2 -o "$W/shard_0.csv" >"$W/shards.log" 2>&1
  r0=$?
  "$KV" run configs/smoke.yaml --shard 1/2 -o "$W/shard_1.csv" >>"$W/shards.log" 2>&1
  r1=$?
  "$KV" merge "$W/merged.csv" "$W/shard_0.csv" "$W/shard_1.csv" >>"$W/shards.log" 2>&1
  rm_=$?
  [ "$r0$r1$rm_" = 000 ] && same_as_clean "$W/merged.csv" "$W/compare_merged.md"
  result "--shard 0/2 + 1/2, merge" "== unsharded case set; compare same/noise" \
    "exits $r0/$r1/merge $rm_; $(rows "$W/merged.csv") rows; $(tail -1 "$W/compare_merged.md" | cut -c1-110)" $?
}
stage_devices() {
  local rc
  "$KV" run configs/smoke.yaml --devices all -o "$W/devices.csv" >"$W/devices.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] && same_as_clean "$W/devices.csv" "$W/compare_devices.md"
  result "--devices all" "every case; rows carry the UUID; compare same/noise" \
    "exit $rc; $(rows "$W/devices.csv") rows on $(col "$W/devices.csv" device_uuid | sort -u | tr '\n' ' '); $(tail -1 "$W/compare_devices.md" | cut -c1-110)" $?
}
stage_bad() {  # one key per row, so its shards merge
  local i rc n c others
  for i in 0 1; do
    "$KV" run configs/bad_input.yaml --check-bounds --shard $i/2 -o "$W/bad$i.csv" >"$W/bad$i.log" 2>&1
    echo "bad_input shard $i: exit $?" >>"$W/bad.log"
  done
  "$KV" merge "$W/bad.csv" "$W/bad0.csv" "$W/bad1.csv" >>"$W/bad.log" 2>&1
  rc=$? n=$(rows "$W/bad.csv")
  c=$("$KV" schema --columns | tail -n +2 | cut -d, -f1 | grep -nx status | cut -d: -f1)
  others=$(tail -n +2 "$W/bad.csv" | cut -d, -f"$c" | grep -cvE '^(rejected|not_supported)$')
  [ $rc -eq 0 ] && [ "$n" -eq 41 ] && [ "$others" -eq 0 ] && [ "$(grep -c 'exit 2$' "$W/bad.log")" -eq 2 ]
  result "bad_input.yaml in two shards, merged" "exit 2 each; 41 rows, all rejected or not_supported" \
    "merge exit $rc, $n rows, $others neither: $(tail -3 "$W/bad.log" | tr '\n' ';')" $?
}
stage_plugin() {
  # shellcheck disable=SC2054  # plain,optimized is one argument
  local i rc mrc crc args=(--plugin "$BIN/kvbench_example_plugin.so" --variants plain,optimized --max-tokens 128)
  "$KV" run configs/smoke.yaml "${args[@]}" -o "$W/p.csv" >"$W/p.log" 2>&1
  rc=$?
  for i in 0 1; do "$KV" run configs/smoke.yaml "${args[@]}" --shard $i/2 -o "$W/p$i.csv" >>"$W/p.log" 2>&1; done
  "$KV" merge "$W/pm.csv" "$W/p0.csv" "$W/p1.csv" >"$W/pm.log" 2>&1
  mrc=$?
  "$KV" compare "$W/p.csv" "$W/pm.csv" >"$W/pc.log" 2>&1
  crc=$?
  [ $rc -eq 0 ] && [ $mrc -eq 0 ] && [ $crc -le 1 ]
  result "plugin variant in two shards, merged" "exits 0, 0; compare same/noise" \
    "run $rc, merge $mrc ($(head -1 "$W/pm.log")), compare $crc: $(tail -1 "$W/pc.log" | cut -c1-100)" $?
}
stage_full() {
  local rc t0=$SECONDS
  "$KV" run configs/validation.yaml -o "$W/validation.csv" >"$W/validation.log" 2>&1
  rc=$?
  result "all of validation.yaml" "exit 0, wall time" "exit $rc; $(rows "$W/validation.csv") rows in $((SECONDS - t0)) s" $((rc != 0))
}

run_stages
printf '\n| stage | expected | observed | verdict |\n|---|---|---|---|\n'
printf '%s\n' "${TABLE[@]}"
echo "(logs, CSVs and sidecars in $W; memory lines in $W/memory.txt; ${SECONDS} s)"
exit $status
