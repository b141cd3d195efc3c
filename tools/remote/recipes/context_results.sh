# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh context_results OUT_DIR BOARD: runs here, not on the GPU host. Lands what recipe
# context left in OUT_DIR (fetched from the host) under results/BOARD/context/ (BOARD: h200,
# h100, ...): each context's CSV with its sidecar (results_sidecars.py put), its `kvbench bounds`
# CSV with a sidecar derived from the run's (results_sidecars.py derive), perf.yaml's T <= 128
# run after a producer as after_producer_cupti.csv with its bounds CSV and its plot of optimized
# against the seed's Triton, the decode plot, and the sidecar check last. A context the proof did
# not reach is named and skipped. Exit status: the first step that failed.
set -e
if [ $# -ne 2 ] || ! SRC=$(cd "$CALLER_DIR" && cd "$1" 2>/dev/null && pwd); then
  echo "usage: tools/remote/proof.sh context_results OUT_DIR BOARD (OUT_DIR: recipe context's outputs)" >&2
  exit 2
fi
DEST=results/$2/context
mkdir -p "$DEST"
SC="python3 tools/results_sidecars.py"
bounds() {  # RUN.csv BOUNDS.csv WHERE: the bounds CSV beside its run, its sidecar derived from the run's
  $SC derive "$2" --from "$1.json" --tool "kvbench bounds" --input "$1" --note "plain-move references \
of the optimized rows, timed $3 by kvbench bounds ($(($(wc -l <"$2") - 1)) of $(grep -c ',optimized,' "$1") rows)"
}
plotted=()
for ctx in back_to_back cold after_producer layer; do
  [ -f "$SRC/$ctx.csv" ] || { echo "context_results: no $ctx.csv in $SRC: skipped" >&2; continue; }
  $SC put "$SRC/$ctx.csv" "$DEST/$ctx.csv"
  plotted+=("$DEST/$ctx.csv")
  if [ -f "$SRC/bounds_$ctx.csv" ]; then
    cp "$SRC/bounds_$ctx.csv" "$DEST/bounds_$ctx.csv"
    bounds "$DEST/$ctx.csv" "$DEST/bounds_$ctx.csv" "in the $ctx context"
  fi
done
if [ -f "$SRC/after_producer_perf.csv" ]; then
  $SC put "$SRC/after_producer_perf.csv" "$DEST/after_producer_cupti.csv"
  if [ -f "$SRC/bounds_after_producer_perf.csv" ]; then
    cp "$SRC/bounds_after_producer_perf.csv" "$DEST/bounds_after_producer_cupti.csv"
    bounds "$DEST/after_producer_cupti.csv" "$DEST/bounds_after_producer_cupti.csv" "after a producer"
  fi
  python3 scripts/plot.py compare "$DEST/after_producer_cupti.csv" "$DEST/after_producer_cupti.csv" \
    --variants triton,optimized -o "$DEST/after_producer_cupti_optimized_vs_triton.png"
fi
if [ ${#plotted[@]} -gt 0 ]; then
  python3 scripts/plot.py decode "${plotted[@]}" --variants triton,seed_port,optimized -o "$DEST/decode.png"
fi
$SC check
