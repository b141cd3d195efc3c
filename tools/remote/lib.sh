# shellcheck shell=bash disable=SC2034  # PY, status and the rest are the recipes'
# Sourced by tools/remote/proof.sh and its recipes: what every proof on a GPU host shares.
#   remote_setup DEFAULT_OUT_DIR  unpack the binaries, set BIN, KV, PY, OUT_DIR, W; record the board
#   run_stages                    the recipe's stage_* functions, in the order STAGES gives
#   box NAME CAP CMD...           one command, time-boxed, logged to W/NAME.log, then the archive
# Environment: KVBENCH_BIN (default dist/bin, unpacked from dist/kvbench-bin.tar.xz when that is
# newer), OUT_DIR, PYTHON (default python3), STAGES, BUDGET_S (seconds for the whole proof; a stage
# that would start with less than its minimum left is skipped, and says so), GPU_NAME (say H200:
# on a board whose name lacks it, exit 3 before anything runs or is written).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 3
ROOT=$PWD
PY=${PYTHON:-python3}
RESERVE_S=${RESERVE_S:-15}  # kept for the table and the archive after the last stage
status=0
declare -A MIN_S=() WEIGHT=()  # per stage: the seconds it needs to start, its share of the time
ARCHIVE='' BOARD_FILE=board.txt DEADLINE=0

remote_setup() {
  BUDGET_S=${BUDGET_S:-540}
  if [ -n "${GPU_NAME:-}" ]; then
    local name
    name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    [[ "$name" == *"$GPU_NAME"* ]] ||
      { echo "proof.sh: GPU_NAME=$GPU_NAME, but this board is '${name:-none found}': nothing run" >&2; exit 3; }
  fi
  BIN=${KVBENCH_BIN:-dist/bin}
  if [ "$BIN" = dist/bin ] && [ dist/kvbench-bin.tar.xz -nt dist/bin/kvbench ]; then
    tar -xJf dist/kvbench-bin.tar.xz || exit 3
  fi
  BIN=$(cd "$BIN" && pwd) || exit 3
  KV=$BIN/kvbench
  OUT_DIR=${OUT_DIR:-$1}
  mkdir -p "$OUT_DIR" && OUT_DIR=$(cd "$OUT_DIR" && pwd) || exit 3
  W=$OUT_DIR${W_SUB:+/$W_SUB}  # where the outputs go
  mkdir -p "$W"
  export KVBENCH_SOURCE_DIR=$ROOT KVBENCH_CACHE_DIR=${KVBENCH_CACHE_DIR:-$OUT_DIR/cache}
  export KVBENCH=$KV  # the Python scripts read the case key from it (scripts/kvbench_schema.py)
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null |
    tee "$W/$BOARD_FILE"
}

# ARCHIVE (a name under OUT_DIR) from everything in OUT_DIR but the caches; written beside, then
# moved in, so that tar never reads a folder it is writing into.
pack() {
  [ -n "$ARCHIVE" ] || return 0
  local flag=-cf
  [[ "$ARCHIVE" == *.tgz || "$ARCHIVE" == *.gz ]] && flag=-czf
  [[ "$ARCHIVE" == *.xz ]] && flag=-cJf
  tar -C "$OUT_DIR" --exclude=./cache --exclude=./triton_cache --exclude="./$ARCHIVE" --exclude="./$ARCHIVE.part" \
    $flag "$OUT_DIR/$ARCHIVE.part" . && mv "$OUT_DIR/$ARCHIVE.part" "$OUT_DIR/$ARCHIVE" ||
    echo "pack: $ARCHIVE failed" >&2
}

left_s() { echo $((BUDGET_S - RESERVE_S - SECONDS)); }

# Each stage of STAGES in the order given. A stage starts only with at least MIN_S[stage] (default
# 10) seconds left; with WEIGHT set, it may use its weight's share of the time left among the
# stages still to run (a stage run alone gets all of it), else all that is left.
run_stages() {
  local s x i rest left share all
  read -ra all <<<"$STAGES"
  for i in "${!all[@]}"; do
    s=${all[$i]}
    if ! declare -F "stage_$s" >/dev/null; then
      echo "no stage '$s' here (stages: ${DEFAULT_STAGES:-})" >&2
      continue
    fi
    left=$(left_s)
    if [ "$left" -lt "${MIN_S[$s]:-10}" ]; then
      echo "$s: skipped, ${left}s left of BUDGET_S=$BUDGET_S" | tee -a "$W/notes.txt"
      continue
    fi
    share=$left
    if [ ${#WEIGHT[@]} -gt 0 ]; then
      rest=0
      for x in "${all[@]:$i}"; do rest=$((rest + ${WEIGHT[$x]:-0})); done
      share=$((left * ${WEIGHT[$s]:-0} / (rest > 0 ? rest : 1)))
      [ "$share" -lt "${MIN_S[$s]:-10}" ] && share=${MIN_S[$s]:-10}
    fi
    DEADLINE=$((SECONDS + share))
    "stage_$s"
  done
  DEADLINE=0
}

# box NAME CAP CMD...: CMD with at most CAP seconds (0: no cap) and never past its stage's share,
# stdout and stderr in W/NAME.log; one line says how it ended. A failure sets status=1; a command
# cut short by the box is no failure (kvbench run, bounds and triton_baseline.py keep every row).
box() {
  local name=$1 cap=$2 limit rc s=$SECONDS
  shift 2
  limit=$(( (DEADLINE > 0 ? DEADLINE : BUDGET_S - RESERVE_S) - SECONDS))
  [ "$cap" -gt 0 ] && [ "$cap" -lt "$limit" ] && limit=$cap
  if [ "$limit" -lt 1 ]; then
    echo "$name: skipped, no time left of BUDGET_S=$BUDGET_S" | tee -a "$W/notes.txt"
    return 0
  fi
  timeout "$limit" "$@" >"$W/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    echo "$name: cut short after ${limit}s (rows written so far kept)"
  else
    echo "$name: rc=$rc in $((SECONDS - s)) s: $(grep -v '^\s*$' "$W/$name.log" | tail -1 | cut -c1-160)"
    [ $rc -ne 0 ] && status=1
  fi
  pack
  return $rc
}

# gtests NAME...: the test binaries of BIN, a line each with gtest's summary; status=1 if one fails.
gtests() {
  local t rc
  for t in "$@"; do
    timeout "${CHECK_TIMEOUT:-600}" "$BIN/$t" --gtest_brief=1 >"$W/$t.log" 2>&1
    rc=$?
    echo "$t: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/$t.log" | tr '\n' ' ')"
    [ $rc -ne 0 ] && { status=1; tail -30 "$W/$t.log"; }
  done
  return 0
}
