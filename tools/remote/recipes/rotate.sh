# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh rotate: rotated timing (docs/measurement.md, "Rotated buffers"). Stages (STAGES, default
# "tests perf bounds triton decode"; a stage left out reuses its CSVs from OUT_DIR, so the work
# can be split over calls with one OUT_DIR):
#   tests   the floor and rotation GPU tests
#   perf    configs/perf.yaml with `--rotate auto` (everything cold), fewest tokens first, so a
#           stage cut short loses the largest cases; CASES=all adds seed_port to optimized
#   bounds  `kvbench bounds` of every case it timed, rotated as the case was
#   triton  the seed's Triton (scripts/triton_baseline.py over libkvbench.so) on the same cases
#   decode  the decode sizes (T <= 128, cache write) cold, inputs hot (`--hot-inputs`) and as one
#           DeepSeek-V3 step (`--rotate 61`)
# then the decode-step plot (PYTHON with matplotlib, else the command is printed) and a short
# table: targets against the plain move, Triton and the committed unrotated run, and decode µs.
# BUDGET_S (default 540) is shared among the stages to run by weight (tests 1, perf 8, bounds 3,
# triton 5, decode 3). Everything in OUT_DIR (default results/rotate_proof), packed into
# OUT_DIR/rotate_proof.tar after each command.
DEFAULT_STAGES="tests perf bounds triton decode"
STAGES=${STAGES:-$DEFAULT_STAGES}
CASES=${CASES:-optimized}
CONFIG=configs/perf.yaml
ARCHIVE=rotate_proof.tar
WEIGHT=([tests]=1 [perf]=8 [bounds]=3 [triton]=5 [decode]=3)
MIN_S=([tests]=20 [perf]=60 [bounds]=30 [triton]=30 [decode]=45)
remote_setup results/rotate_proof
export KVBENCH_LIB=${KVBENCH_LIB:-$BIN/libkvbench.so}
"$KV" --version

# Case numbers of `kvbench list` whose variant is $1 (or any, for "all"), num_tokens <= $2 and
# kernel $3 (if given), fewest tokens first.
cases() {
  "$KV" list "$CONFIG" --format csv |
    awk -F, -v v="$1" -v t="$2" -v k="${3:-}" \
      'NR > 1 && (v == "all" ? $3 != "slot_order" : $3 == v) && $5 <= t && (k == "" || $2 == k) { print $5, $1 }' |
    sort -n -s -k1,1 | cut -d' ' -f2
}
as_flags() { sed 's/^/--case\n/'; }

stage_tests() {  # two launch floors explained by the graph's own launch cost; rotation
  box gpu_tests 0 bash -c "'$BIN/test_gpu' --gtest_filter='Gpu.GraphFloorFallsWithLaunchesPerSample:Gpu.LaunchFloorDoesNotDependOnLightSampling:Gpu.Scatter*:Gpu.Bounds*:Gpu.BoundKernels*' &&
    '$BIN/test_planted_gpu' --gtest_filter='Planted.Rotat*'"
  grep -E '^  (graph floor|cold |hot |graph )|^\[  (PASSED|FAILED) ' "$W/gpu_tests.log"
}
stage_perf() {
  local perf_cases
  mapfile -t perf_cases < <(cases "$CASES" 1000000000 | as_flags)
  box perf_rotated 0 "$KV" run "$CONFIG" --rotate auto "${perf_cases[@]}" -o "$W/perf_rotated.csv"
}
stage_bounds() {  # light sampling: one floor per case
  box bounds 0 "$KV" bounds "$W/perf_rotated.csv" -o "$W/bounds_rotated.csv" \
    --variant optimized --warmup 2 --min-samples 10 --min-time 0.005 --timeout 1
}
stage_triton() {  # every case of its two operations once, by the adapter's own case numbers
  local tri_cases
  mapfile -t tri_cases < <("$PY" scripts/triton_baseline.py list "$CONFIG" --format csv |
    awk -F, 'NR > 1 { print $5, $1 }' | sort -n -s -k1,1 | cut -d' ' -f2 | as_flags)
  box triton 0 "$PY" scripts/triton_baseline.py "$CONFIG" -o "$W/triton_rotated.csv" \
    --rotate auto "${tri_cases[@]}"
}
stage_decode() {
  local decode third=$(((DEADLINE - SECONDS) / 3))
  mapfile -t decode < <(cases optimized 128 reshape_and_cache_flash | as_flags)
  box decode_cold "$third" "$KV" run "$CONFIG" --rotate auto "${decode[@]}" -o "$W/decode_cold.csv"
  box decode_hot_inputs "$third" "$KV" run "$CONFIG" --rotate auto --hot-inputs "${decode[@]}" \
    -o "$W/decode_hot_inputs.csv"
  box decode_61 0 "$KV" run "$CONFIG" --rotate 61 "${decode[@]}" -o "$W/decode_61.csv"
}
run_stages

plot="scripts/plot.py decode $W/perf_rotated.csv $W/triton_rotated.csv --out-dir $W"
if "$PY" -c 'import matplotlib' 2>/dev/null; then
  # shellcheck disable=SC2086  # plot is a command line
  $PY $plot >/dev/null || status=1
else
  echo "matplotlib is not importable here: plot elsewhere with python3 $plot (paths inside the tar)"
fi
python3 scripts/perf_report.py "$W/perf_rotated.csv" --bounds "$W/bounds_rotated.csv" \
  --triton "$W/triton_rotated.csv" --previous results/h200/perf.csv --cases \
  >"$W/perf_report.md" 2>&1 || status=1
python3 tools/perf_targets.py "$W/perf_rotated.csv" --bounds "$W/bounds_rotated.csv" \
  --triton "$W/triton_rotated.csv" --previous results/h200/perf.csv \
  >>"$W/perf_report.md" 2>&1 || status=1
python3 - "$W" <<'PYEOF' || status=1
import csv, os, sys
def rows(path):
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(r["sweep"], r["num_heads"], r["head_dim"], r["block_size"], r["num_tokens"]): r
                for r in csv.DictReader(f) if r["status"] == "passed" and r["variant"] == "optimized"}
one = rows("results/h200/perf.csv")
cold, hot, s61 = (rows(os.path.join(sys.argv[1], n)) for n in
                  ("decode_cold.csv", "decode_hot_inputs.csv", "decode_61.csv"))
print("\n== decode, cache write (optimized): median µs per layer; cold (its buffer sets)")
print(f"{'sweep':<18} {'H':>3} {'D':>4} {'BS':>3} {'T':>4} {'rotate 1':>9} {'cold':>12} {'hot inputs':>11} {'rotate 61':>10}")
for k in sorted(cold, key=lambda k: (k[0], int(k[1]), int(k[2]), int(k[3]), int(k[4]))):
    cell = lambda d: f"{float(d[k]['median_us']):.2f}" if k in d else "-"
    print(f"{k[0]:<18} {k[1]:>3} {k[2]:>4} {k[3]:>3} {k[4]:>4} {cell(one):>9} "
          f"{cell(cold):>6} ({cold[k].get('buffer_sets') or '1':>4}) {cell(hot):>11} {cell(s61):>10}")
PYEOF
echo
grep -A12 '^| target (optimized, per case)' "$W/perf_report.md"
grep -E 'not fully cold' "$W/perf_report.md"
pack
echo "t=${SECONDS}s"
exit $status
