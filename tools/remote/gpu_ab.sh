#!/usr/bin/env bash
# Runs on the GPU host: kvbench builds side by side on one board, for kernel experiments.
#   tools/remote/gpu_ab.sh CONFIG NAME=BINARY [NAME=BINARY ...]
# Paths are relative to the repository root. Every build runs CONFIG ROUNDS times (default 2),
# interleaved (A B, then B A, ...) so that a drift of the board, or the position in a round, falls
# on all of them. CSVs and logs (ab/NAME.ROUND.{csv,log}) are written to a scratch folder and
# packed into $OUT_DIR/ab.tar after every run (OUT_DIR defaults to results/gpu_ab);
# `tools/remote/tables.py ab`'s table goes into the tar as ab/table.md, to $OUT_DIR/table.md and to
# stdout: per case each build's median time, per sweep and variant each build's geometric-mean time
# against the first build's. $OUT_DIR holds just those two files. Boards differ by a few percent, so
# compare builds within one run on one board, not across runs.
# Exit status: 1 if a run failed or a case did not pass validation in some run, 2 on bad usage.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
usage() { echo "gpu_ab.sh: $1" >&2; echo "usage: tools/remote/gpu_ab.sh CONFIG NAME=BINARY [NAME=BINARY ...]" >&2; exit 2; }
[ $# -ge 2 ] || usage "a config and at least one NAME=BINARY"
cfg=$1
shift
[ -f "$cfg" ] || usage "no such config: $cfg"
ROUNDS=${ROUNDS:-2}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || usage "ROUNDS=$ROUNDS is not a positive integer"
names=() bins=()
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  [ "$name" != "$spec" ] && [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] ||
    usage "'$spec' is not NAME=BINARY (NAME of letters, digits, _ and -)"
  for n in "${names[@]}"; do [ "$n" = "$name" ] && usage "NAME $name given twice"; done
  [[ "$bin" == */* ]] || bin=./$bin
  [ -f "$bin" ] && [ -x "$bin" ] || usage "$name: not an executable: $bin"
  names+=("$name") bins+=("$bin")
done
OUT_DIR=${OUT_DIR:-results/gpu_ab}
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR/table.md" "$OUT_DIR/ab.tar"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/ab"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$WORK/cache} KVBENCH_SOURCE_DIR=$PWD
export KVBENCH=${KVBENCH:-${KVBENCH_BIN:-dist/bin}/kvbench}  # tables.py reads the case key from it
pack() { tar -C "$WORK" -cf "$OUT_DIR/ab.tar.part" ab && mv "$OUT_DIR/ab.tar.part" "$OUT_DIR/ab.tar"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader 2>/dev/null
status=0
n=${#names[@]}
for round in $(seq 1 "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    i=$(( round % 2 == 1 ? k : n - 1 - k ))  # every other round in reverse order
    "${bins[$i]}" run "$cfg" -o "$WORK/ab/${names[$i]}.$round.csv" >"$WORK/ab/${names[$i]}.$round.log" 2>&1
    rc=$?
    echo "${names[$i]} round $round: rc=$rc; $(tail -1 "$WORK/ab/${names[$i]}.$round.log")"
    [ $rc -ne 0 ] && status=1
    pack
  done
done
python3 tools/remote/tables.py ab "$WORK/ab" "${names[@]}" >"$WORK/ab/table.md" || status=1
cp "$WORK/ab/table.md" "$OUT_DIR/table.md"
cat "$OUT_DIR/table.md"
pack
exit $status
