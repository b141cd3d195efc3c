#!/usr/bin/env bash
# Runs on the GPU host: kvbench builds side by side on one board, for kernel experiments.
#   scripts/gpu_ab.sh CONFIG NAME=BINARY [NAME=BINARY ...]
# Every build runs CONFIG ROUNDS times (default 2), interleaved (A B A B ...) so that a drift of
# the board falls on all of them; the CSVs go to $OUT/ab/NAME.ROUND.csv (OUT defaults to
# results/gpu_ab). scripts/ab_table.py then prints, per case, each build's median time and, per
# sweep, each build's geometric-mean time against the first build's. Boards differ by a few
# percent, so compare builds within one call, not across calls.
# Exit status: 1 if a run failed or a case did not pass validation in some run, 2 on bad usage.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/gpu_ab.sh CONFIG NAME=BINARY [NAME=BINARY ...]" >&2
  exit 2
fi
cfg=$1
shift
[ -f "$cfg" ] || { echo "gpu_ab.sh: no such config: $cfg" >&2; exit 2; }
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  if [ "$name" = "$spec" ] || [ -z "$name" ] || [[ ! "$name" =~ ^[A-Za-z0-9_-]+$ ]]; then
    echo "gpu_ab.sh: '$spec' is not NAME=BINARY (NAME of letters, digits, _ and -)" >&2
    exit 2
  fi
  [ -x "$bin" ] || { echo "gpu_ab.sh: $name: not an executable: $bin" >&2; exit 2; }
done
OUT=${OUT:-results/gpu_ab}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT/ab"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$OUT/ab/cache} KVBENCH_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=name,uuid --format=csv,noheader 2>/dev/null
status=0
for round in $(seq 1 "$ROUNDS"); do
  for spec in "$@"; do
    name=${spec%%=*} bin=${spec#*=}
    "$bin" run "$cfg" -o "$OUT/ab/$name.$round.csv" >"$OUT/ab/$name.$round.log" 2>&1
    rc=$?
    echo "$name round $round: rc=$rc; $(tail -1 "$OUT/ab/$name.$round.log")"
    [ $rc -ne 0 ] && status=1
  done
done
names=()
for spec in "$@"; do names+=("${spec%%=*}"); done
python3 scripts/ab_table.py "$OUT/ab" "${names[@]}" || status=1
exit $status
