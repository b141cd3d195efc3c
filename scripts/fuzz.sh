#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang-14, CPU-only build in build-fuzz/) and runs
# each for FUZZ_SECONDS (default 60), seeded with configs/ and the test CSVs. Exits non-zero on
# a finding; its input is left in build-fuzz/findings/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KVBENCH_FUZZ_BUILD:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVBENCH_CPU_ONLY=ON \
  -DKVBENCH_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
cmake --build "$build" --target fuzz_sweep fuzz_result_csv fuzz_sidecar fuzz_resume

run() {
  local target=$1
  shift
  local corpus="$build/corpus/$target" findings="$build/findings/$target"
  mkdir -p "$corpus" "$findings"
  cp "$@" "$corpus/"
  echo "fuzz: $target for ${seconds}s ($(ls "$corpus" | wc -l) inputs in the corpus)"
  (cd "$findings" && "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 "$corpus" 2>"$build/$target.log") || {
    tail -40 "$build/$target.log" >&2
    echo "fuzz: $target found a problem; inputs in $findings" >&2
    return 1
  }
  grep -E "stat::number_of_executed_units|cov:" "$build/$target.log" | tail -2
}
run fuzz_sweep "$root"/configs/*.yaml "$root"/tests/configs/*.yaml "$root"/tests/data/input/*.yaml
run fuzz_result_csv "$root"/tests/data/gate/*.csv "$root"/tests/data/input/*.csv \
  "$root"/results/h200/perf_small.csv
run fuzz_sidecar "$root"/results/h200/*.csv.json "$root"/results/h200/*/*.csv.json
run fuzz_resume "$root"/results/h200/rotated/decode_61.csv "$root"/tests/data/gate/*.csv
