#!/usr/bin/env bash
# The GPU proof of resilient sweeps (docs/workers.md, docs/scale-out.md), in about a minute:
#   1. fault:    a planted faulting launch (KVBENCH_PLANT_FAULT) mid-way through 200 cases of
#                configs/validation.yaml: that case fails with "device fault ...", the other 199
#                pass, the run goes on;
#   2. admission: tests/configs/too_big.yaml: the 894 GB case fails with "needs ... GB", the small
#                one after it passes, the run exits 2 (a failed case), not 137;
#   3. memory:   KVBENCH_MEMORY_REPORT over configs/smoke.yaml: estimate against measured peak;
#                then a clean run of it, which stages 4-6 are compared against;
#   4. resume:   SIGTERM mid-way through configs/smoke.yaml, then --resume: exit 143, sidecar
#                finalized, the union is a clean run's case set; `kvbench compare` against it;
#   5. shard:    --shard 0/2 and 1/2, merged, has the clean run's case set; compare against it;
#   6. devices:  --devices all: every case, rows of the GPU's UUID; compare against the clean run.
# Prints a table last. VALIDATION_FULL=1 also times all of configs/validation.yaml (about 75 s).
# Usage: resilience_proof.sh BIN_DIR OUT_DIR   (BIN_DIR holds kvbench, e.g. dist/bin of
# tools/remote/pack_gpu.sh; OUT_DIR e.g. results/resilience_proof; run from anywhere)
set -uo pipefail
BIN=$(cd "${1:?usage: resilience_proof.sh BIN_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?usage: resilience_proof.sh BIN_DIR OUT_DIR}"
OUT=$(cd "$2" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
K=$BIN/kvbench
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$OUT/cache}
declare -a TABLE
status=0
result() {  # stage, expectation, observed, ok(0/1)
  local verdict=PASS
  [ "$4" = 0 ] || { verdict=FAIL; status=1; }
  TABLE+=("| $1 | $2 | $3 | $verdict |")
  echo "[$verdict] $1: $3"
}
col() {  # CSV FILE, column name -> that column of every row (awk, no quoting in these columns)
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { print $k }' "$1"
}
rows() { echo $(($(wc -l <"$1") - 1)); }
keys() {  # the sorted case keys of a result CSV (columns 2-17)
  tail -n +2 "$1" | cut -d, -f2-17 | sort
}
"$K" --version

# 1. A planted device fault mid-way through a part of validation.yaml.
cases=$(seq 400 599)
t0=$SECONDS
KVBENCH_PLANT_FAULT=500 "$K" run configs/validation.yaml --case $cases -o "$OUT/fault.csv" \
  >"$OUT/fault.log" 2>&1
rc=$?
fault_reason=$(awk -F, 'NR > 1 && $18 == "failed"' "$OUT/fault.csv" | head -3 | cut -d, -f2-6,18-19)
others=$(awk -F, 'NR > 1 && $18 == "passed"' "$OUT/fault.csv" | wc -l)
ok=1
[ "$rc" = 2 ] && [ "$(rows "$OUT/fault.csv")" = 200 ] && [ "$others" = 199 ] &&
  grep -q "device fault: an illegal memory access was encountered" <<<"$fault_reason" && ok=0
result "planted fault at case 500 of validation 400-599" "exit 2; 1 failed (device fault), 199 passed" \
  "exit $rc; $(rows "$OUT/fault.csv") rows, $others passed; $(cut -d, -f6- <<<"$fault_reason") ($((SECONDS - t0)) s)" $ok

# 2. A case too big for host memory, then a small one.
KVBENCH_MEMORY_REPORT=1 "$K" run tests/configs/too_big.yaml -o "$OUT/too_big.csv" >"$OUT/too_big.log" 2>&1
rc=$?
# status and reason of rows 1 and 2, parsed as CSV: the reason is quoted and holds a comma.
status_reason() {  # CSV FILE, row number (1 = first data row) -> "status: reason"
  python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
n = int(sys.argv[2])
row = rows[n - 1] if len(rows) >= n else {"status": "missing", "reason": ""}
print(row["status"] + (": " + row["reason"] if row["reason"] else ""))' "$1" "$2"
}
first=$(status_reason "$OUT/too_big.csv" 1)
second=$(status_reason "$OUT/too_big.csv" 2)
ok=1
[ "$rc" = 2 ] && grep -q "^failed: needs .* GB host memory, .* GB available$" <<<"$first" && [ "$second" = passed ] && ok=0
result "too big for host memory, then T=16" "exit 2; failed 'needs ... GB', then passed" \
  "exit $rc; $first; then $second" $ok

# 3. Memory estimate against the measured peak.
KVBENCH_MEMORY_REPORT=1 "$K" run configs/smoke.yaml -o "$OUT/memory.csv" >"$OUT/memory.log" 2>&1
memory_rc=$?
grep -h "^memory case" "$OUT/memory.log" >"$OUT/memory.txt"
# "memory case N: estimate host EH device ED bytes; measured host MH (...) device MD (...)"
awk '{ eh = $6; ed = $8; mh = $12; md = $(NF - 2)
       if (mh > 0) { r = eh / mh; if (r > maxh) maxh = r; if (!minh || r < minh) minh = r }
       if (md > 0) { r = ed / md; if (r > maxd) maxd = r; if (!mind || r < mind) mind = r }
       if (eh + 0 > big + 0) { big = eh; line = sprintf("case %s host %.3g/%.3g GB, device %.3g/%.3g GB", $3, eh / 1e9, mh / 1e9, ed / 1e9, md / 1e9) } }
     END { printf "estimate/measured: host %.2f-%.2f, device %.2f-%.2f; largest %s\n", minh, maxh, mind, maxd, line }' \
  "$OUT/memory.txt" >"$OUT/memory_summary.txt"
result "memory estimate vs peak (smoke.yaml)" "estimate >= peak, same order" "$(cat "$OUT/memory_summary.txt" | cut -c1-160)" \
  $([ -s "$OUT/memory.txt" ] && [ "$memory_rc" = 0 ] && echo 0 || echo 1)

# The clean run the next stages are held against (no memory probe: it polls the driver).
"$K" run configs/smoke.yaml -o "$OUT/clean.csv" >"$OUT/clean.log" 2>&1
clean_rc=$?
[ "$clean_rc" = 0 ] || result "clean smoke.yaml" "exit 0" "exit $clean_rc" 1

# 4. SIGTERM mid-way, then --resume.
"$K" run configs/smoke.yaml -o "$OUT/resumed.csv" >"$OUT/resumed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -f "$OUT/resumed.csv" ] && [ "$(rows "$OUT/resumed.csv")" -ge 20 ] && break
  sleep 0.1
done
kill -TERM $pid
wait $pid
term_rc=$?
before=$(rows "$OUT/resumed.csv")
sidecar=$(grep -E '"(interrupted|cases_done)"' "$OUT/resumed.csv.json" | tr -d ' \n')
"$K" run configs/smoke.yaml -o "$OUT/resumed.csv" --resume >>"$OUT/resumed.log" 2>&1
resume_rc=$?
"$K" compare "$OUT/clean.csv" "$OUT/resumed.csv" >"$OUT/compare_resumed.md" 2>&1
cmp_rc=$?
ok=1
[ "$term_rc" = 143 ] && [ "$resume_rc" = 0 ] && [ "$(keys "$OUT/resumed.csv")" = "$(keys "$OUT/clean.csv")" ] &&
  [ "$cmp_rc" -le 1 ] && ok=0
result "SIGTERM mid smoke.yaml, then --resume" "143; union == clean; compare same/noise" \
  "exit $term_rc after $before rows ($sidecar); resume exit $resume_rc; $(tail -1 "$OUT/compare_resumed.md" | cut -c1-110)" $ok

# 5. --shard 0/2 + 1/2, merged.
"$K" run configs/smoke.yaml --shard 0/2 -o "$OUT/shard_0.csv" >"$OUT/shards.log" 2>&1
r0=$?
"$K" run configs/smoke.yaml --shard 1/2 -o "$OUT/shard_1.csv" >>"$OUT/shards.log" 2>&1
r1=$?
"$K" merge "$OUT/merged.csv" "$OUT/shard_0.csv" "$OUT/shard_1.csv" >>"$OUT/shards.log" 2>&1
rm_=$?
"$K" compare "$OUT/clean.csv" "$OUT/merged.csv" >"$OUT/compare_merged.md" 2>&1
cmp_rc=$?
ok=1
[ "$r0$r1$rm_" = 000 ] && [ "$(keys "$OUT/merged.csv")" = "$(keys "$OUT/clean.csv")" ] && [ "$cmp_rc" -le 1 ] && ok=0
result "--shard 0/2 + 1/2, merge" "== unsharded case set; compare same/noise" \
  "exits $r0/$r1/merge $rm_; $(rows "$OUT/merged.csv") rows; $(tail -1 "$OUT/compare_merged.md" | cut -c1-110)" $ok

# 6. --devices all on this host's GPU(s).
"$K" run configs/smoke.yaml --devices all -o "$OUT/devices.csv" >"$OUT/devices.log" 2>&1
dev_rc=$?
"$K" compare "$OUT/clean.csv" "$OUT/devices.csv" >"$OUT/compare_devices.md" 2>&1
cmp_rc=$?
uuids=$(col "$OUT/devices.csv" device_uuid | sort -u | tr '\n' ' ')
ndev=$(grep -c '"uuid"' "$OUT/devices.csv.json")
ok=1
[ "$dev_rc" = 0 ] && [ "$(keys "$OUT/devices.csv")" = "$(keys "$OUT/clean.csv")" ] && [ "$cmp_rc" -le 1 ] && ok=0
result "--devices all" "every case; rows carry the UUID; compare same/noise" \
  "exit $dev_rc; $(rows "$OUT/devices.csv") rows on $uuids; $(tail -1 "$OUT/compare_devices.md" | cut -c1-110)" $ok

if [ "${VALIDATION_FULL:-0}" = 1 ]; then
  t0=$SECONDS
  "$K" run configs/validation.yaml -o "$OUT/validation.csv" >"$OUT/validation.log" 2>&1
  rc=$?
  result "all of validation.yaml" "exit 0, wall time" "exit $rc; $(rows "$OUT/validation.csv") rows in $((SECONDS - t0)) s" $([ $rc = 0 ] && echo 0 || echo 1)
fi

echo
echo "| stage | expected | observed | verdict |"
echo "|---|---|---|---|"
printf '%s\n' "${TABLE[@]}"
echo "(logs, CSVs and sidecars in $OUT; memory lines in $OUT/memory.txt; ${SECONDS} s)"
exit $status
