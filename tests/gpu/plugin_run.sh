#!/usr/bin/env bash
# On a GPU: plugin variants through `kvbench run` (docs/plugins.md). A launch that returns an
# error, one that crashes its worker and one that hangs each cost their case only: every case
# gets its row, the refused size is not_supported with the plugin's reason, and kvbench's own
# variant beside them passes. Exits 77 (ctest: skipped) without a CUDA device.
# Usage: plugin_run.sh KVBENCH STANDIN_DIR WORKDIR
set -uo pipefail
K=$1 S=$2 W=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cfg=$HERE/../plugins/standin.yaml
mkdir -p "$W"
fail=0
# flavour, extra flags, the reason expected of the head_size 128 rows
for spec in "good||launch returned 7: standin: launch refused for op 2" \
            "crash||worker" \
            "hang|--case-timeout 5|worker"; do
  IFS='|' read -r flavour flags want <<<"$spec"
  out=$W/$flavour.csv
  # shellcheck disable=SC2086
  "$K" run "$cfg" --plugin "$S/standin_$flavour.so" $flags -o "$out" >"$W/$flavour.log" 2>&1
  rc=$?
  if [ $rc = 4 ] && grep -q "no CUDA device" "$W/$flavour.log"; then
    echo "SKIPPED: no CUDA device"
    exit 77
  fi
  rows=$(tail -n +2 "$out" | wc -l)
  python3 - "$out" "$want" "$flavour" "$rc" "$rows" <<'PY' || fail=1
import csv, sys
path, want, flavour, rc, rows = sys.argv[1:]
bad = []
if rc != "2": bad.append(f"exit {rc}, expected 2")
if rows != "8": bad.append(f"{rows} rows, expected 8")
for r in csv.DictReader(open(path)):
    v, d, st, why = r["variant"], r["head_dim"], r["status"], r["reason"]
    if v == "optimized" and st != "passed": bad.append(f"optimized D={d}: {st} {why}")
    if v == "standin" and d == "512" and (st, why) != ("not_supported", "standin: head_size above 256, its largest"):
        bad.append(f"standin D=512: {st} {why}")
    if v == "standin" and d == "128" and (st != "failed" or want not in why):
        bad.append(f"standin D=128: {st} {why!r}, expected failed with {want!r}")
print(("FAIL " if bad else "ok   ") + flavour + ": " + ("; ".join(bad) if bad else f"exit {rc}, {rows} rows"))
sys.exit(1 if bad else 0)
PY
done
exit $fail
