#!/usr/bin/env bash
# Runs on the GPU host: two kvbench builds over one config (or one shard of it) on one board, then
# the second gated against the first with `kvbench compare` (the second build's). For proving that
# a restructure keeps speed: the baseline is measured on the same board, in the same call.
#   tools/remote/ab_gate.sh CONFIG BASE_BIN NEW_BIN OUT_DIR [SHARD] [ORDER]
# SHARD is I/N (default: every case); ORDER is `base-first` (default) or `new-first`, so that
# successive calls can alternate which build runs first. Writes OUT_DIR/{base,new}.csv with their
# sidecars and logs, and OUT_DIR/compare.md; prints each run's last line and the verdict counts.
# Exit status: compare's (0 same, 1 slower cases, 2 incorrect or missing), 3 on a failed run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[ $# -ge 4 ] || { echo "usage: ab_gate.sh CONFIG BASE_BIN NEW_BIN OUT_DIR [SHARD] [ORDER]" >&2; exit 3; }
cfg=$1 base=$2 new=$3 out=$4 shard=${5:-} order=${6:-base-first}
mkdir -p "$out"
export KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$out/cache} KVBENCH_SOURCE_DIR=$PWD
names=(base new)
[ "$order" = new-first ] && names=(new base)
for name in "${names[@]}"; do
  bin=$base
  [ "$name" = new ] && bin=$new
  start=$SECONDS
  "$bin" run "$cfg" ${shard:+--shard "$shard"} -o "$out/$name.csv" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name ($bin): rc=$rc in $((SECONDS - start)) s; $(tail -1 "$out/$name.log")"
  [ $rc -le 2 ] || exit 3
done
"$new" compare "$out/base.csv" "$out/new.csv" >"$out/compare.md" 2>&1
rc=$?
echo "compare base -> new: rc=$rc"
grep -E '^### |^\| \*\*(slower|incorrect|missing)' "$out/compare.md" | cut -c1-220 | head -40
exit $rc
