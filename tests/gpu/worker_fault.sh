#!/usr/bin/env bash
# On a GPU: a planted faulting launch (KVBENCH_PLANT_FAULT, docs/workers.md) at case 1 of three
# smoke cases: case 1's row fails with "device fault: ...", cases 0 and 2 pass, exit 2; then the
# same in three cases of each operation of validation.yaml. Exits 77
# (ctest: skipped) without a CUDA device. Usage: worker_fault.sh KVBENCH WORKDIR
set -uo pipefail
K=$1
mkdir -p "$2"
out=$2/worker_fault.csv
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KVBENCH_PLANT_FAULT=1 "$K" run "$ROOT/configs/smoke.yaml" --case 0 1 2 -o "$out" >"$2/worker_fault.log" 2>&1
rc=$?
if [ $rc = 4 ] && grep -q "no CUDA device" "$2/worker_fault.log"; then
  echo "SKIPPED: no CUDA device"
  exit 77
fi
statuses=$(tail -n +2 "$out" | cut -d, -f18-19 | tr '\n' ';')
echo "exit $rc; $statuses"
[ $rc = 2 ] || { echo "expected exit 2"; exit 1; }
[ "$statuses" = "passed,;failed,device fault: an illegal memory access was encountered;passed,;" ] ||
  { echo "expected passed, device fault, passed"; cat "$2/worker_fault.log"; exit 1; }

# Every operation's launch faults where planted (runtime/planted_fault.cu asks the operation's
# backend for its output): the second of its first three cases in validation.yaml.
V=$ROOT/configs/validation.yaml
for first in $("$K" list "$V" --format csv | awk -F, 'NR > 1 && !seen[$2]++ { print $1 }'); do
  sub=$2/fault_$first.csv
  KVBENCH_PLANT_FAULT=$((first + 1)) "$K" run "$V" --case "$first" $((first + 1)) $((first + 2)) \
    -o "$sub" >"$2/fault_$first.log" 2>&1
  rc=$?
  s=$(tail -n +2 "$sub" | cut -d, -f2,18-19 | tr '\n' ';')
  echo "cases from $first: exit $rc; $s"
  [ $rc = 2 ] && [ "$(tail -n +2 "$sub" | cut -d, -f18-19 | tr '\n' ';')" = \
    "passed,;failed,device fault: an illegal memory access was encountered;passed,;" ] ||
    { echo "expected passed, device fault, passed from case $first"; cat "$2/fault_$first.log"; exit 1; }
done
