#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine (docs/scale-out.md; facts in SLURM.md of the CI
# notes): munged, slurmctld and slurmd on localhost. Logs, job output and results go under
# WORKDIR; the spool and state directories, where slurmd creates its Unix sockets, go under a
# short temporary directory, because a socket path may not exceed 108 bytes and WORKDIR sits as
# deep as the checkout does.
#   1. An array job of 4 tasks runs `kvbench list CONFIG --shard slurm --format csv`, a job with
#      --dependency=afterok merges their output: it equals the unsharded list.
#   2. scripts/slurm/run_shards.sbatch (4 tasks of `kvbench run --shard slurm`, a stand-in worker
#      for the GPU) and scripts/slurm/merge.sbatch after them: merged CSV == an unsharded run,
#      and the gate passes.
#   3. `kvbench merge` over shard CSVs cut from results/h200/smoke.csv equals it; without one
#      shard, merge exits 2 naming the shard and its case indices.
# Installs slurm-wlm and munge when missing (as root, Debian); exits 77 (ctest: skipped) with
# the reason only when they cannot be installed. Usage: test_slurm.sh KVBENCH WORKDIR
set -euo pipefail
KVBENCH=$(realpath "$1")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$2"
W=$(mktemp -d "$(realpath "$2")/slurm.XXXXXX")
# slurmd's step sockets are SPOOL/<node>_<job>.<step> (up to about 30 bytes past SPOOL).
SHORT=$(mktemp -d -t kvbslurm.XXXXXX)
if [ ${#SHORT} -gt 60 ]; then  # TMPDIR itself is deep: fall back to the system's
  rmdir "$SHORT"
  SHORT=$(mktemp -d -p /tmp kvbslurm.XXXXXX)
fi
CFG=$ROOT/configs/smoke.yaml
PYTHON=${KVBENCH_PYTHON:-python3}
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- packages -----------------------------------------------------------------------------
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  [ "$(id -u)" = 0 ] || skip "slurm-wlm/munge are not installed and this is not root"
  command -v apt-get >/dev/null || skip "slurm-wlm/munge are not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends slurm-wlm munge >"$W/apt.log" 2>&1 ||
    { apt-get update >>"$W/apt.log" 2>&1 &&
      apt-get install -y --no-install-recommends slurm-wlm munge >>"$W/apt.log" 2>&1; } ||
    skip "cannot install slurm-wlm and munge: $(tail -1 "$W/apt.log")"
fi
[ "$(id -u)" = 0 ] || skip "munged and slurmd need root here"

# --- daemons ------------------------------------------------------------------------------
started_munged=0
teardown() {
  for f in "$W/slurmd.pid" "$W/slurmctld.pid"; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  if [ "$started_munged" = 1 ] && [ -s /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
  fi
  local f
  for f in "$W/slurmd.pid" "$W/slurmctld.pid"; do  # they write their state until they exit
    for _ in $(seq 40); do
      { [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; } || break
      sleep 0.25
    done
  done
  rm -rf "$SHORT" 2>/dev/null || true
}
trap teardown EXIT

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge /etc/munge/munge.key /var/lib/munge /var/log/munge /run/munge
  chmod 400 /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged --force
  started_munged=1
  munge -n | unmunge | grep -q "STATUS: *Success" || fail "munge does not work"
fi

HOST=$(hostname -s)
PORT=$((20000 + RANDOM % 20000))  # not a fixed port: other clusters may run on this machine
mkdir -p "$SHORT/state" "$SHORT/spool"
export SLURM_CONF=$W/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=kvbenchci
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$SHORT/state
SlurmdSpoolDir=$SHORT/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AuthType=auth/munge
JobAcctGatherType=jobacct_gather/none
NodeName=$HOST CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.5
done
# The daemons' own errors: what to show when the node or a job does not come up.
daemon_errors() {
  local f
  for f in "$W/slurmctld.log" "$W/slurmd.log"; do
    [ -s "$f" ] || { echo "  ${f##*/}: (empty or missing)"; continue; }
    # Noise for this cluster: the MPI plugins (no PMIx here, no job uses MPI) and a first
    # start's missing state files.
    { grep -iE "error|fatal" "$f" | grep -viE "pmix|mpi|state( save)? file" ||
        echo "no error or fatal line"; } |
      tail -n 5 | sed "s|^|  ${f##*/}: |"
  done
}
sinfo -h -o %T | grep -qx idle ||
  fail "the node is not idle after 30 s: $(sinfo 2>&1 | tail -2)"$'\n'"$(daemon_errors)"

# Waits until the queue is empty: this cluster runs only this test's jobs, and a finished job may
# already be purged, which makes `squeue -j` fail for the whole list (accounting is off: squeue and
# output files tell). A job whose launch failed is held and never leaves: say so at once, with the
# daemons' errors.
wait_jobs() {
  local queue
  for _ in $(seq 240); do
    if queue=$(squeue -h -o "%i %T %r" 2>&1); then
      [ -z "$queue" ] && return 0
      if grep -qi "launch failed" <<<"$queue"; then
        fail "jobs of $1 failed to launch:"$'\n'"$queue"$'\n'"daemon errors:"$'\n'"$(daemon_errors)"
      fi
    fi
    sleep 0.5
  done
  fail "jobs $1 still queued after 120 s: $(squeue 2>&1)"$'\n'"daemon errors:"$'\n'"$(daemon_errors)"
}

# --- 1. sharded list, merged by a dependent job --------------------------------------------
cd "$W"
list=$(sbatch --parsable --array=0-3 -o "$W/list_%a.csv" -e "$W/list_%a.err" \
  --wrap "'$KVBENCH' list '$CFG' --shard slurm --format csv")
merge=$(sbatch --parsable --dependency=afterok:"$list" -o "$W/merge_list.out" \
  --wrap "(head -n 1 '$W/list_0.csv'; for i in 0 1 2 3; do tail -n +2 '$W/list_'\$i.csv; done | sort -t, -k1,1n) > '$W/merged_list.csv'")
wait_jobs "$list,$merge"
"$KVBENCH" list "$CFG" --format csv >"$W/list_all.csv"
[ -s "$W/merged_list.csv" ] || fail "the merge job wrote nothing: $(cat "$W"/list_*.err "$W/merge_list.out" 2>&1 | head -5)"
cmp -s "$W/merged_list.csv" "$W/list_all.csv" || fail "merged list differs from the unsharded list"
for i in 0 1 2 3; do
  [ "$(tail -n +2 "$W/list_$i.csv" | cut -d, -f1 | awk -v i=$i '$1 % 4 != i' | wc -l)" = 0 ] ||
    fail "task $i listed cases of another shard"
done
echo "ok: 4-task array of kvbench list --shard slurm + afterok merge == unsharded list ($(($(wc -l <"$W/list_all.csv") - 1)) cases)"

# --- 2. the sbatch templates, with a stand-in worker for the GPU ---------------------------
export KVBENCH KVBENCH_WORKER="$PYTHON $ROOT/tests/workers/standin_worker.py" STANDIN_KVBENCH=$KVBENCH
"$KVBENCH" run "$CFG" -o "$W/clean.csv" >/dev/null 2>&1 || fail "the unsharded stand-in run failed"
# No GPUs here: --gres=none clears the template's GPU request.
runs=$(sbatch --parsable --gres=none --array=0-3 -o "$W/run_%a.out" \
  "$ROOT/scripts/slurm/run_shards.sbatch" "$CFG" "$W/shards")
gate=$(sbatch --parsable --dependency=afterok:"$runs" -o "$W/gate.out" \
  "$ROOT/scripts/slurm/merge.sbatch" "$W/shards" "$W/merged.csv" "$W/clean.csv")
wait_jobs "$runs,$gate"
[ -s "$W/merged.csv" ] || fail "merge.sbatch wrote no CSV: $(tail -n 3 "$W"/run_*.out "$W/gate.out" 2>&1)"
cmp -s "$W/merged.csv" "$W/clean.csv" || fail "merged CSV of the template jobs differs from the unsharded run"
grep -q -- "-> PASS (exit 0)" "$W/gate.out" || fail "the merge job's gate did not pass: $(tail -3 "$W/gate.out")"
echo "ok: run_shards.sbatch (4 tasks) + merge.sbatch (afterok, gate) == unsharded run, gate PASS"

# --- 3. kvbench merge over shards cut from a committed result CSV --------------------------
src=$ROOT/results/h200/smoke.csv
mkdir -p "$W/cut"
for i in 0 1 2 3; do
  awk -v i=$i 'NR == 1 || (NR - 2) % 4 == i' "$src" >"$W/cut/shard_$i.csv"
  sed "1a\\  \"shard\": \"$i/4\"," "$src.json" >"$W/cut/shard_$i.csv.json"
done
(cd "$ROOT" && "$KVBENCH" merge "$W/cut/merged.csv" "$W"/cut/shard_{3,1,0,2}.csv) >/dev/null ||
  fail "merge of the cut shards failed"
cmp -s "$W/cut/merged.csv" "$src" || fail "merged cut shards differ from $src"
set +e
(cd "$ROOT" && "$KVBENCH" merge "$W/cut/partial.csv" "$W"/cut/shard_{0,1,3}.csv) >/dev/null 2>"$W/cut/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "merge without shard 2 exited $rc, expected 2: $(cat "$W/cut/err")"
grep -q "case indices missing: 2, 6, 10, " "$W/cut/err" && grep -q "(no file for shard 2 of 4)" "$W/cut/err" ||
  fail "merge did not name the missing shard: $(cat "$W/cut/err")"
echo "ok: merge of $src cut in 4 == it; without shard 2: exit 2, $(cat "$W/cut/err")"
