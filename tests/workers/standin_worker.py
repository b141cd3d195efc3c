#!/usr/bin/env python3
"""Stand-in for `kvbench worker` (docs/workers.md), so the supervisor in `kvbench run` can be
driven on a machine without a GPU. Started by the parent through KVBENCH_WORKER with the worker's
arguments (worker CONFIG [flags]); answers `case N` with a timed `passed` row whose numbers depend
on the case only, so two runs of the same cases compare as `same`.

STANDIN_KVBENCH: the kvbench binary (for `list --format csv` and `schema --columns`): a row's
columns and their order are the binary's; the stand-in fills them by name.
STANDIN_PLAN: what to do at some case indices, e.g. "3=crash,5=hang,7=kill,9=fault,11=exit".
  crash: SIGSEGV; kill: SIGKILL (as the OOM killer does); hang: sleep forever;
  fault: a `failed` row with "device fault: ..." then `bye device fault` and exit 4;
  exit: exit 3 without a row; badrow: a row of three fields.
STANDIN_DELAY: seconds to spend on each case (for signal tests).
STANDIN_FATAL: report `fatal 4 <text>` instead of `ready`.
STANDIN_START_DELAY: seconds to wait before `ready` (a slow launch floor or calibration).
STANDIN_ARGS: a file to write the worker's arguments to, one per line.
STANDIN_NAME: the device name it reports (default "Stand-in GPU").
STANDIN_VARIANT_OPS: the operation of each --variants name the binary does not know, e.g.
  "pyvar=reshape_and_cache_flash" (unnamed ones: every operation), so cases number as the run's.
STANDIN_SCALE: a factor on every time (a planted slowdown or speed-up for `kvbench ab`).
STANDIN_PROCESS_JITTER: the relative spread of a factor drawn once per worker process (two
  processes of one build differ so on a GPU at the smallest sizes).
With "samples": true in --setup (run --save-samples, ab), each timed row comes after a
`samples N ...` line of 200 times: the row's median with Gaussian noise of STANDIN_NOISE
(relative, default 0.01).
STANDIN_LOG: a file to append "DEVICE PID CASE START END" to for every case (wall-clock seconds).
"""
import csv
import io
import json
import os
import random
import signal
import subprocess
import sys
import time


def run_cases(kvbench, config, variants, plugins):
    """The run's cases as `kvbench list --format csv` rows: with --variants, each case once per
    listed variant of its operation, as the run numbers them. Listed with the run's plugins (a
    Python program's variants through the program), so a config may name their variants. A
    variant that listing does not know is of the operation STANDIN_VARIANT_OPS names ("pyvar=
    reshape_and_cache_flash,..."), else of every operation."""
    programs = [p["path"] for p in plugins if p.get("in_process")]
    if programs:
        listed = [sys.executable, programs[0], "list", config, "--format", "csv"]
    else:
        listed = [kvbench, "list", config, "--format", "csv"]
        for p in plugins:
            listed += ["--plugin", p["path"]]
    try:
        extra = ["--variants", ",".join(variants)] if variants else []
        return list(csv.DictReader(io.StringIO(subprocess.check_output(
            listed + extra, text=True, stderr=subprocess.DEVNULL))))
    except subprocess.CalledProcessError:
        pass
    op_of = dict(item.split("=") for item in
                 filter(None, os.environ.get("STANDIN_VARIANT_OPS", "").split(",")))
    cases, seen = [], set()
    for c in csv.DictReader(io.StringIO(subprocess.check_output(listed, text=True))):
        for v in variants:
            row = dict(c, variant=v)
            key = tuple(row[k] for k in row if k != "case")
            if op_of.get(v, c["kernel"]) == c["kernel"] and key not in seen:
                seen.add(key)
                cases.append(row)
    return cases


def plugins_of(setup):
    """The run's plugins from --setup (a JSON list, or its text)."""
    plugins = setup.get("plugins") or []
    return json.loads(plugins) if isinstance(plugins, str) else plugins


def main():
    config = sys.argv[2]
    if os.environ.get("STANDIN_ARGS"):
        with open(os.environ["STANDIN_ARGS"], "w") as f:
            f.write("\n".join(sys.argv[1:]) + "\n")
    kvbench = os.environ["STANDIN_KVBENCH"]
    if os.environ.get("STANDIN_FATAL"):
        print("fatal 4 " + os.environ["STANDIN_FATAL"], flush=True)
        return 4
    table = subprocess.check_output([kvbench, "schema", "--columns"], text=True)
    columns = [r["column"] for r in csv.DictReader(io.StringIO(table))]
    # The build the rows name is the binary's ("kvbench 0.1.0 (git 0123456789ab+dirty)"), as a
    # real worker's rows name its own: merge checks each row against its shard's sidecar.
    build = subprocess.check_output([kvbench, "--version"], text=True).split("(git ")[1]
    git_sha, git_dirty = build.rstrip(")\n").replace("+dirty", ""), str("+dirty" in build).lower()
    # How the run times its cases (mode, context, timer): from --setup, as a real worker reads
    # them; its rows say so, as a real worker's do.
    setup = json.loads(sys.argv[sys.argv.index("--setup") + 1]) if "--setup" in sys.argv else {}
    settings = setup.get("settings", {})
    timed_as = dict(mode=settings.get("mode", "graph"),
                    context=settings.get("context", "back_to_back"),
                    timer=settings.get("timer", "events"))
    cases = run_cases(kvbench, config, setup.get("variants") or [], plugins_of(setup))
    plan = {}
    for item in filter(None, os.environ.get("STANDIN_PLAN", "").split(",")):
        index, action = item.split("=")
        plan[int(index)] = action
    delay = float(os.environ.get("STANDIN_DELAY", "0"))
    time.sleep(float(os.environ.get("STANDIN_START_DELAY", "0")))
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    jitter = float(os.environ.get("STANDIN_PROCESS_JITTER", "0"))
    process_factor = random.Random(os.getpid() * 7 + int(time.time() * 1e6)).gauss(1, jitter)
    name = os.environ.get("STANDIN_NAME", "Stand-in GPU")
    uuid = "GPU-00000000-0000-0000-0000-00000000000" + (device[-1:] or "0")
    print("ready " + json.dumps({"device": {"name": name, "uuid": uuid},
                                 "calibration": {"measured_peak_gbps": 1000.0},
                                 "launch_floor_us": {}}), flush=True)
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
        if action == "badrow":  # a row cut short: three fields
            print("row %d 2,a,b" % n, flush=True)
            continue
        start = time.time()
        time.sleep(delay)
        if os.environ.get("STANDIN_LOG"):
            with open(os.environ["STANDIN_LOG"], "a") as log:
                log.write("%s %d %d %.6f %.6f\n" % (device or "-", os.getpid(), n, start, time.time()))
        values = {k: v for k, v in cases[n].items() if k != "case"}
        # The schema whose columns the binary writes (4 added timer, 3 context, 2 buffer_sets).
        schema = ("4" if "timer" in columns else "3" if "context" in columns
                  else "2" if "buffer_sets" in columns else "1")
        values.update(schema_version=schema, mismatches="0", written_tokens="0", bytes="0",
                      buffer_sets="1", device=name, device_uuid=uuid, git_sha=git_sha,
                      git_dirty=git_dirty)
        if action == "fault":
            values.update(status="failed",
                          reason="device fault: an illegal memory access was encountered")
        else:
            scale = float(os.environ.get("STANDIN_SCALE", "1")) * process_factor
            us = "%.3f" % ((10 + n % 7) * scale)
            noise = float(os.environ.get("STANDIN_NOISE", "0.01"))
            if setup.get("samples"):
                draw = random.Random(os.getpid() * 1000003 + n * 7919 + int(time.time() * 1e6))
                print("samples %d %s" % (n, " ".join(
                    "%.4f" % max(0.0, float(us) * draw.gauss(1, noise)) for _ in range(200))), flush=True)
            values.update(timed_as)
            values.update(status="passed", written_tokens="1", bytes="1000",
                          samples="10", launches_per_sample="10", converged="true",
                          median_us=us, mean_us=us, min_us=us, max_us=us, p10_us=us, p90_us=us,
                          rel_stdev="0.0001", median_ci_rel="0.0001", gbps="100.0",
                          pct_of_measured_peak="10.0", pct_of_theoretical_peak="9.0",
                          sm_clock_mhz="1980", clock_low="false")
        unknown = set(values) - set(columns)
        assert not unknown, unknown  # a column the binary does not have
        line = io.StringIO()
        csv.writer(line, lineterminator="").writerow([values.get(c, "") for c in columns])
        print("row %d %s" % (n, line.getvalue()), flush=True)
        if action == "fault":
            print("bye device fault", flush=True)
            return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
