#!/usr/bin/env bash
# tools/remote/lib.sh on the CPU, with a stand-in nvidia-smi and kvbench: the stage runner keeps
# STAGES' order and names an unknown stage, the time box skips a stage that would not fit and
# cuts a command short, GPU_NAME stops a run on another board; every remote script parses (and
# passes shellcheck where it is installed). Usage: remote_lib_test.sh [SOURCE_DIR]
set -uo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', expected '$3'"; fails=1; fi; }
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "NVIDIA H100 80GB HBM3, GPU-0000"\n' >"$tmp/bin/nvidia-smi"
printf '#!/bin/sh\necho "kvbench $*"\n' >"$tmp/bin/kvbench"
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/kvbench"
export PATH=$tmp/bin:$PATH KVBENCH_BIN=$tmp/bin OUT_DIR=$tmp/out

out=$(
  # shellcheck source=tools/remote/lib.sh
  source "$src/tools/remote/lib.sh"
  BUDGET_S=30 RESERVE_S=0
  MIN_S[big]=100
  remote_setup unused >/dev/null
  stage_a() { echo a >>"$W/order"; }
  stage_b() { echo b >>"$W/order"; }
  stage_big() { echo big >>"$W/order"; }
  stage_slow() { box slow 1 sleep 5; }
  STAGES="b big a nothing slow"
  run_stages 2>&1
  echo "order: $(tr '\n' ' ' <"$W/order")"
  echo "board: $(cat "$W/board.txt")"
)
check "stages in the order STAGES gives" "$(grep '^order:' <<<"$out")" "order: b a "
check "a stage that would not fit is skipped, and says so" "$(grep -c '^big: skipped, [0-9]*s left of BUDGET_S=30$' <<<"$out")" 1
check "an unknown stage is named" "$(grep -c "^no stage 'nothing' here" <<<"$out")" 1
check "a command past its box is cut short" "$(grep -c '^slow: cut short after 1s' <<<"$out")" 1
check "the board is recorded" "$(grep '^board:' <<<"$out")" "board: NVIDIA H100 80GB HBM3, GPU-0000"

err=$(GPU_NAME=H200 OUT_DIR=$tmp/other bash -c "source '$src/tools/remote/lib.sh'; remote_setup x" 2>&1)
check "GPU_NAME on another board: exit 3" "$?" 3
check "GPU_NAME on another board: nothing written" "$([ -e "$tmp/other" ] && echo written || echo none)" none
check "GPU_NAME on another board: says why" "$(grep -c "GPU_NAME=H200, but this board is 'NVIDIA H100 80GB HBM3" <<<"$err")" 1
bash "$src/tools/remote/proof.sh" no_such_recipe 2>"$tmp/usage"
check "an unknown recipe: exit 2" "$?" 2
check "an unknown recipe: the recipes listed" "$(grep -c 'recipes: .*rotate' "$tmp/usage")" 1

for f in "$src"/tools/remote/*.sh "$src"/tools/remote/recipes/*.sh; do
  bash -n "$f" || { echo "FAIL bash -n $f"; fails=1; }
done
if command -v shellcheck >/dev/null; then
  (cd "$src" && shellcheck -S warning tools/remote/*.sh tools/remote/recipes/*.sh) || { echo "FAIL shellcheck"; fails=1; }
fi
exit $fails
