#!/usr/bin/env python3
"""Stand-in for `kvbench worker` (docs/workers.md), so the supervisor in `kvbench run` can be
driven on a machine without a GPU. Started by the parent through KVBENCH_WORKER with the worker's
arguments (worker CONFIG [flags]); answers `case N` with a timed `passed` row whose numbers depend
on the case only, so two runs of the same cases compare as `same`.

STANDIN_KVBENCH: the kvbench binary (for `list --format csv` and `schema`).
STANDIN_PLAN: what to do at some case indices, e.g. "3=crash,5=hang,7=kill,9=fault,11=exit".
  crash: SIGSEGV; kill: SIGKILL (as the OOM killer does); hang: sleep forever;
  fault: a `failed` row with "device fault: ..." then `bye device fault` and exit 4;
  exit: exit 3 without a row.
STANDIN_DELAY: seconds to spend on each case (for signal tests).
STANDIN_FATAL: report `fatal 4 <text>` instead of `ready`.
STANDIN_START_DELAY: seconds to wait before `ready` (a slow launch floor or calibration).
STANDIN_ARGS: a file to write the worker's arguments to, one per line.
STANDIN_LOG: a file to append "DEVICE PID CASE START END" to for every case (wall-clock seconds).
"""
import json
import os
import signal
import subprocess
import sys
import time


def main():
    config = sys.argv[2]
    if os.environ.get("STANDIN_ARGS"):
        with open(os.environ["STANDIN_ARGS"], "w") as f:
            f.write("\n".join(sys.argv[1:]) + "\n")
    kvbench = os.environ["STANDIN_KVBENCH"]
    if os.environ.get("STANDIN_FATAL"):
        print("fatal 4 " + os.environ["STANDIN_FATAL"], flush=True)
        return 4
    columns = subprocess.check_output([kvbench, "schema"], text=True).strip().split(",")
    listing = subprocess.check_output([kvbench, "list", config, "--format", "csv"], text=True)
    cases = [line.split(",", 1)[1] for line in listing.strip().splitlines()[1:]]
    plan = {}
    for item in filter(None, os.environ.get("STANDIN_PLAN", "").split(",")):
        index, action = item.split("=")
        plan[int(index)] = action
    delay = float(os.environ.get("STANDIN_DELAY", "0"))
    time.sleep(float(os.environ.get("STANDIN_START_DELAY", "0")))
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    name, uuid = "Stand-in GPU", "GPU-00000000-0000-0000-0000-00000000000" + (device[-1:] or "0")
    print("ready " + json.dumps({"device": {"name": name, "uuid": uuid},
                                 "calibration": {"measured_peak_gbps": 1000.0},
                                 "launch_floor_us": {}}), flush=True)
    tail = len(columns) - 1 - len(cases[0].split(","))  # after schema_version and the case
    for line in sys.stdin:
        n = int(line.split()[1])
        action = plan.get(n, "")
        if action == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "hang":
            time.sleep(3600)
        if action == "exit":
            return 3
        start = time.time()
        time.sleep(delay)
        if os.environ.get("STANDIN_LOG"):
            with open(os.environ["STANDIN_LOG"], "a") as log:
                log.write("%s %d %d %.6f %.6f\n" % (device or "-", os.getpid(), n, start, time.time()))
        if action == "fault":
            row = ["failed", "device fault: an illegal memory access was encountered", "0", "0",
                   "0", "", "1"] + [""] * 16
        else:
            us = "%.3f" % (10 + n % 7)
            row = ["passed", "", "0", "1", "1000", "graph", "1", "10", "10", "true", us, us, us, us,
                   us, us, "0.0001", "0.0001", "100.0", "10.0", "9.0", "1980", "false"]
        row += [name, uuid, "standin", "false"]
        assert len(row) == tail, (len(row), tail)
        print("row %d 2,%s,%s" % (n, cases[n], ",".join(row)), flush=True)  # schema 2
        if action == "fault":
            print("bye device fault", flush=True)
            return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
