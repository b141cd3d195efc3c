#!/usr/bin/env bash
# Lands what tools/remote/context_proof.sh left in OUT_DIR (its CSVs and sidecars, fetched from the
# GPU host) under results/BOARD/context/ (BOARD: h200, h100, ...): each context's CSV with its
# sidecar (results_sidecars.py put), its `kvbench bounds` CSV with a sidecar derived from the run's
# (results_sidecars.py derive), perf.yaml's T <= 128 run after a producer as after_producer_cupti.csv
# with its `kvbench bounds` CSV (bounds_after_producer_cupti.csv) and its plot of optimized against
# the seed's Triton, the decode plot, and the sidecar check
# last. A context the proof did not reach is named and skipped.
# Usage: tools/remote/context_results.sh OUT_DIR BOARD
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1" ]; then
  echo "usage: tools/remote/context_results.sh OUT_DIR BOARD (OUT_DIR: context_proof.sh's outputs)" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
BOARD=$2
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
DEST=results/$BOARD/context
mkdir -p "$DEST"
SC="python3 tools/results_sidecars.py"
plotted=()
for ctx in back_to_back cold after_producer layer; do
  if [ ! -f "$SRC/$ctx.csv" ]; then
    echo "context_results: no $ctx.csv in $SRC: skipped" >&2
    continue
  fi
  $SC put "$SRC/$ctx.csv" "$DEST/$ctx.csv"
  plotted+=("$DEST/$ctx.csv")
  if [ -f "$SRC/bounds_$ctx.csv" ]; then
    cp "$SRC/bounds_$ctx.csv" "$DEST/bounds_$ctx.csv"
    rows=$(($(wc -l <"$DEST/bounds_$ctx.csv") - 1))
    total=$(($(grep -c ',optimized,' "$DEST/$ctx.csv") + 0))
    $SC derive "$DEST/bounds_$ctx.csv" --from "$DEST/$ctx.csv.json" --tool "kvbench bounds" \
      --input "$DEST/$ctx.csv" \
      --note "plain-move references of the optimized rows, timed in the $ctx context by kvbench bounds ($rows of $total rows)"
  fi
done
if [ -f "$SRC/after_producer_perf.csv" ]; then
  $SC put "$SRC/after_producer_perf.csv" "$DEST/after_producer_cupti.csv"
  if [ -f "$SRC/bounds_after_producer_perf.csv" ]; then
    B=$DEST/bounds_after_producer_cupti.csv
    cp "$SRC/bounds_after_producer_perf.csv" "$B"
    $SC derive "$B" --from "$DEST/after_producer_cupti.csv.json" --tool "kvbench bounds" \
      --input "$DEST/after_producer_cupti.csv" \
      --note "plain-move references of the optimized rows, timed after a producer by kvbench bounds ($(($(wc -l <"$B") - 1)) of $(grep -c ',optimized,' "$DEST/after_producer_cupti.csv") rows)"
  fi
  python3 scripts/plot.py compare "$DEST/after_producer_cupti.csv" "$DEST/after_producer_cupti.csv" \
    --variants triton,optimized -o "$DEST/after_producer_cupti_optimized_vs_triton.png"
fi
if [ ${#plotted[@]} -gt 0 ]; then
  python3 scripts/plot.py decode "${plotted[@]}" --variants triton,seed_port,optimized -o "$DEST/decode.png"
fi
$SC check
