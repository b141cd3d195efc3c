#!/usr/bin/env bash
# On a GPU: a planted faulting launch (KVBENCH_PLANT_FAULT, docs/workers.md) at case 1 of three
# smoke cases: case 1's row fails with "device fault: ...", cases 0 and 2 pass, exit 2. Exits 77
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
