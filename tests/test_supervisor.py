#!/usr/bin/env python3
"""`kvbench run` as a supervisor, driven by the stand-in worker (tests/workers/standin_worker.py)
on a machine without a GPU: faults at case k, signals, --resume, --devices, --shard and merge.

Usage: test_supervisor.py KVBENCH SCENARIO WORKDIR   (SCENARIO: one of SCENARIOS, or all)
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SMOKE = os.path.join(ROOT, "configs", "smoke.yaml")
VALIDATION = os.path.join(ROOT, "configs", "validation.yaml")
KVBENCH = ""
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import kvbench_schema  # noqa: E402


def env(**extra):
    e = dict(os.environ)
    e["KVBENCH_WORKER"] = sys.executable + " " + os.path.join(HERE, "workers", "standin_worker.py")
    e["STANDIN_KVBENCH"] = KVBENCH
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(args, **extra):
    p = subprocess.run([KVBENCH] + args, env=env(**extra), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def key(r):
    """The row's case key: the binary's case-key columns (scripts/kvbench_schema.py)."""
    return tuple(r[c] for c in kvbench_schema.case_key_columns(KVBENCH))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def faults():
    """Crash, hang, OOM kill, device fault and early exit at cases 2-10, and a malformed row at
    case 11: each row says why and the next case runs on a fresh worker (or the same one)."""
    code, out, err = run(["run", SMOKE, "-o", "faults.csv", "--case-timeout", "2", "--case"] +
                         [str(i) for i in range(12)],
                         STANDIN_PLAN="2=crash,4=hang,6=kill,8=fault,10=exit,11=badrow")
    check(code == 2, "exit %d, expected 2 (failed cases): %s" % (code, err))
    r = rows("faults.csv")
    check(len(r) == 12, "%d rows, expected 12" % len(r))
    want = {2: "worker killed by signal 11 (Segmentation fault)",
            4: "worker timed out after 2 s (hung?)",
            6: "worker killed by signal 9 (out of memory?)",
            8: "device fault: an illegal memory access was encountered",
            10: "worker exited with status 3 before reporting the case",
            11: "the worker sent a malformed row (the worker's row:2: too few columns (truncated "
                "line?))"}
    for i, row in enumerate(r):
        if i in want:
            check(row["status"] == "failed" and row["reason"] == want[i],
                  "case %d: %s %r, expected failed %r" % (i, row["status"], row["reason"], want[i]))
            check(row["device"] == "Stand-in GPU", "case %d: device %r" % (i, row["device"]))
        else:
            check(row["status"] == "passed", "case %d: %s %s" % (i, row["status"], row["reason"]))
    meta = json.load(open("faults.csv.json"))
    check(meta["cases_done"] == 12 and meta["cases_failed"] == 6 and meta["finished_at"],
          "sidecar counts: %s" % meta)


def start(args, **extra):
    return subprocess.Popen([KVBENCH] + args, env=env(**extra), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def wait_rows(path, n, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and len(open(path).read().splitlines()) > n:
            return
        time.sleep(0.05)
    raise AssertionError("%s: fewer than %d rows after %d s" % (path, n, timeout))


def signals():
    """SIGTERM and SIGINT: finished rows intact, sidecar finalized, exit 143 / 130; --resume
    then runs the rest and the union equals a clean run (compare: all same)."""
    code, _, err = run(["run", SMOKE, "-o", "clean.csv"])
    check(code == 0, "clean run: exit %d: %s" % (code, err))
    for sig, want in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        out = "interrupted_%d.csv" % sig
        p = start(["run", SMOKE, "-o", out], STANDIN_DELAY=0.05)
        wait_rows(out, 5)
        p.send_signal(sig)
        _, err = p.communicate(timeout=20)
        check(p.returncode == want, "signal %d: exit %d, expected %d: %s" % (sig, p.returncode, want, err))
        meta = json.load(open(out + ".json"))
        done = rows(out)
        check(meta["interrupted"] is True and meta["finished_at"], "sidecar not finalized: %s" % meta)
        check(meta["cases_done"] == len(done) and 5 <= len(done) < 64,
              "cases_done %d, rows %d" % (meta["cases_done"], len(done)))
        check(open(out).read().endswith("\n"), "a half-written row")
        code, _, err = run(["run", SMOKE, "-o", out, "--resume"])
        check(code == 0, "--resume: exit %d: %s" % (code, err))
        check("%d cases already in" % len(done) in err, "--resume did not skip: %s" % err)
        check(sorted(map(key, rows(out))) == sorted(map(key, rows("clean.csv"))),
              "resumed case set differs from the clean run's")
        code, report, err = run(["compare", "clean.csv", out])
        check(code == 0 and "64 same" in report, "compare: exit %d: %s %s" % (code, report, err))
        meta = json.load(open(out + ".json"))
        check(meta["interrupted"] is False and meta["cases_done"] == 64, "after resume: %s" % meta)


def background():
    """Started in the background of a non-interactive shell (SIGINT ignored): SIGINT does not
    stop it, SIGTERM does."""
    script = 'exec 2>/dev/null; "$0" run "$1" -o bg.csv >/dev/null & echo $! > bg.pid; wait $!; echo $? > bg.rc'
    sh = subprocess.Popen(["sh", "-c", script, KVBENCH, SMOKE], env=env(STANDIN_DELAY=0.05))
    wait_rows("bg.csv", 3)
    pid = int(open("bg.pid").read())
    os.kill(pid, signal.SIGINT)
    time.sleep(0.5)
    check(sh.poll() is None, "SIGINT stopped a run whose shell ignores it")
    os.kill(pid, signal.SIGTERM)
    sh.wait(timeout=20)
    check(open("bg.rc").read().strip() == "143", "exit %s after SIGTERM" % open("bg.rc").read())
    check(json.load(open("bg.csv.json"))["interrupted"] is True, "sidecar not finalized")


def resume_mismatch():
    """--resume refuses other settings or another config, naming what differs, and rows of cases
    it does not select (exit 3)."""
    run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "1"])
    code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "1", "--resume", "--seed", "7"])
    check(code == 3 and err.strip() == "kvbench: --resume: settings.seed is 1 in mm.csv.json, 7 now",
          "exit %d: %r" % (code, err))
    code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "--resume"])
    check(code == 3 and "--case or --max-tokens (selected_cases) is [0,1] in mm.csv.json, [0] now" in err,
          "exit %d: %r" % (code, err))
    code, _, err = run(["run", VALIDATION, "-o", "mm.csv", "--case", "0", "1", "--resume"])
    check(code == 3 and "the config differs" in err, "exit %d: %r" % (code, err))
    # The same cases in another order are the same selection.
    code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "1", "0", "--resume"])
    check(code == 0, "--case in another order: exit %d: %r" % (code, err))
    # A CSV converted to CRLF, or emptied, beside its sidecar: named for what it is.
    before = open("mm.csv", "rb").read()
    for name, data, message in (
            ("crlf", before.replace(b"\n", b"\r\n"), "mm.csv:1: CRLF line endings (the file was converted)"),
            ("empty", b"", "mm.csv: empty (no header line), but its sidecar is there")):
        with open("mm.csv", "wb") as f:
            f.write(data)
        code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "1", "--resume"])
        check(code == 3 and err.startswith("kvbench: --resume: " + message), "%s: exit %d: %r" % (name, code, err))
    with open("mm.csv", "wb") as f:
        f.write(before)
    # Rows of another config appended to the CSV, or a case twice: refused, the file unchanged.
    run(["run", VALIDATION, "-o", "other.csv", "--case", "0"])
    with open("mm.csv", "a") as f, open("other.csv") as g:
        f.write(g.read().splitlines()[1] + "\n")
    before = open("mm.csv").read()
    code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "1", "--resume"])
    check(code == 3 and err.startswith("kvbench: --resume: mm.csv:4: a case this run does not select (")
          and err.strip().endswith("rows of another config, --case or --shard"), "foreign: exit %d: %r" % (code, err))
    check(open("mm.csv").read() == before, "a refused --resume changed the CSV")
    with open("mm.csv", "w") as f:
        f.write("".join(before.splitlines(True)[:3]) + before.splitlines(True)[1])
    code, _, err = run(["run", SMOKE, "-o", "mm.csv", "--case", "0", "1", "--resume"])
    check(code == 3 and "mm.csv:4: the case of line 2 again" in err, "twice: exit %d: %r" % (code, err))
    # Rows of another build or another GPU model: refused, the CSV and its sidecar unchanged.
    run(["run", SMOKE, "-o", "mb.csv", "--case", "0", "1", "2"])
    with open("mb.csv") as f:
        kept = "".join(f.read().splitlines(True)[:3])
    with open("mb.csv", "w") as f:
        f.write(kept)  # case 2's row gone: a resume has a case to run
    meta = json.load(open("mb.csv.json"))
    sha = meta["git_sha"]
    meta["git_sha"] = "0123456789ab"
    with open("mb.csv.json", "w") as f:
        json.dump(meta, f)
    code, _, err = run(["run", SMOKE, "-o", "mb.csv", "--case", "0", "1", "2", "--resume"])
    check(code == 3 and err.strip() == 'kvbench: --resume: git_sha is "0123456789ab" in mb.csv.json, '
          '"%s" now (rows of two builds are not mixed into one CSV)' % sha, "build: exit %d: %r" % (code, err))
    meta["git_sha"] = sha
    with open("mb.csv.json", "w") as f:
        json.dump(meta, f)
    files = (open("mb.csv").read(), open("mb.csv.json").read())
    code, _, err = run(["run", SMOKE, "-o", "mb.csv", "--case", "0", "1", "2", "--resume"],
                       STANDIN_NAME="Other GPU")
    check(code == 3 and err.strip().endswith(
          "kvbench: --resume: mb.csv's rows ran on 'Stand-in GPU', this run's device is 'Other GPU' "
          "(rows of two GPU models are not mixed into one CSV; run without --resume or to another -o)"),
          "model: exit %d: %r" % (code, err))
    check((open("mb.csv").read(), open("mb.csv.json").read()) == files,
          "a --resume refused for its device changed the CSV or its sidecar")
    code, _, err = run(["run", SMOKE, "-o", "mb.csv", "--case", "0", "1", "2", "--resume"])
    check(code == 0 and len(rows("mb.csv")) == 3, "same model: exit %d: %r" % (code, err))
    # A kept row of another build or timing mode (pasted in): refused naming the line, the CSV
    # unchanged.
    lines = open("mb.csv").read().splitlines(True)
    header = lines[0].rstrip("\n").split(",")
    for column, value in (("git_sha", "0123456789ab"), ("mode", "cold")):
        row = lines[1].rstrip("\n").split(",")
        row[header.index(column)] = value
        edited = lines[0] + ",".join(row) + "\n" + lines[2]
        with open("mb.csv", "w") as f:
            f.write(edited)
        code, _, err = run(["run", SMOKE, "-o", "mb.csv", "--case", "0", "1", "2", "--resume"])
        check(code == 3 and err.strip().startswith("kvbench: --resume: mb.csv:2: column '%s' is '%s', "
                                                   "this run's is " % (column, value))
              and err.strip().endswith("(rows of another run are not kept)"),
              "resumed row %s: exit %d: %r" % (column, code, err))
        check(open("mb.csv").read() == edited, "a refused --resume changed the CSV")
    # One case twice in --case; a config or -o path the sidecar cannot record: refused before
    # anything is written.
    code, _, err = run(["run", SMOKE, "-o", "twice.csv", "--case", "5", "--case", "5"])
    check(code == 3 and err.strip() == "kvbench: --case 5: given twice" and not os.path.exists("twice.csv"),
          "--case twice: exit %d: %r" % (code, err))
    shutil.copy(SMOKE, b"c\xff.yaml")
    for args, named in (([b"c\xff.yaml", "-o", "ok.csv"], "CONFIG c?.yaml"),
                        ([SMOKE, "-o", b"o\xff.csv"], "--output o?.csv")):
        code, _, err = run(["run"] + args + ["--case", "0"])
        check(code == 3 and err.strip() == "kvbench: %s: not UTF-8 without control characters, "
              "which the sidecar needs to record it; rename or link the file" % named
              and not os.path.exists("ok.csv") and not os.path.exists(b"o\xff.csv"),
              "non-UTF-8 %s: exit %d: %r" % (named, code, err))
    # Through a symlink: the rows replace its target, and so does the sidecar (beside the
    # target), which --resume of either name then reads.
    run(["run", SMOKE, "-o", "real.csv", "--case", "0", "1"])
    os.symlink("real.csv", "latest.csv")
    code, _, err = run(["run", SMOKE, "-o", "latest.csv", "--case", "0", "1", "--seed", "2"])
    check(code == 0 and os.path.islink("latest.csv") and not os.path.lexists("latest.csv.json")
          and json.load(open("real.csv.json"))["settings"]["seed"] == 2,
          "symlink: exit %d, %r: %s" % (code, err, sorted(os.listdir("."))))
    for name in ("real.csv", "latest.csv"):
        code, _, err = run(["run", SMOKE, "-o", name, "--case", "0", "1", "--resume"])
        check(code == 3 and err.strip() == "kvbench: --resume: settings.seed is 2 in real.csv.json, 1 now",
              "resume %s: exit %d: %r" % (name, code, err))


def one_writer():
    """Two runs writing one CSV: the second is refused at once (exit 3, the first's pid named)
    and the first ends whole, its rows and sidecar its own."""
    first = subprocess.Popen([KVBENCH, "run", SMOKE, "-o", "cc.csv"], env=env(STANDIN_DELAY=0.05),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_rows("cc.csv", 2)
    code, _, err = run(["run", SMOKE, "-o", "./cc.csv", "--seed", "7"])
    check(code == 3 and ("another kvbench (pid %d) is writing it" % first.pid) in err
          and len(err.strip().splitlines()) == 1, "second writer: exit %d: %r" % (code, err))
    first.wait(timeout=60)
    check(first.returncode == 0, "first writer: exit %d: %s" % (first.returncode, first.stderr.read()))
    check(len(rows("cc.csv")) == 64 and json.load(open("cc.csv.json"))["settings"]["seed"] == 1,
          "the first run's CSV is not whole or its sidecar not its own")
    code, _, err = run(["run", SMOKE, "-o", "cc.csv", "--case", "0", "--seed", "7"])
    check(code == 0, "after the first: exit %d: %r" % (code, err))


def devices():
    """--devices 0,0: two workers on one GPU, never timing at once; --devices 0,1: both used,
    each row carries its device, the sidecar lists both."""
    for spec in ("0,0", "0,1"):
        log = "devices_%s.log" % spec.replace(",", "_")
        out = "devices_%s.csv" % spec.replace(",", "_")
        code, _, err = run(["run", SMOKE, "-o", out, "--devices", spec], STANDIN_DELAY=0.02,
                           STANDIN_LOG=log)
        check(code == 0, "--devices %s: exit %d: %s" % (spec, code, err))
        r = rows(out)
        check(sorted(map(key, r)) == sorted(map(key, rows_or_clean())), "case set differs")
        spans = [line.split() for line in open(log)]
        by_device, pids = {}, set()
        for device, pid, _, t0, t1 in spans:
            by_device.setdefault(device, []).append((float(t0), float(t1)))
            pids.add(pid)
        check(len(pids) == 2, "--devices %s: cases ran in %d workers, expected 2" % (spec, len(pids)))
        for device, s in by_device.items():
            s.sort()
            for a, b in zip(s, s[1:]):
                check(b[0] >= a[1], "two cases at once on device %s" % device)
        meta = json.load(open(out + ".json"))
        uuids = {d["device"]["uuid"] for d in meta["devices"]}
        if spec == "0,1":
            check(len(by_device) == 2 and len(uuids) == 2, "devices used: %s, sidecar: %s" % (by_device.keys(), uuids))
            check({row["device_uuid"] for row in r} == uuids, "rows' devices differ from the sidecar's")


def rows_or_clean():
    if not os.path.exists("clean.csv"):
        run(["run", SMOKE, "-o", "clean.csv"])
    return rows("clean.csv")


def shards():
    """--shard 0/2 + 1/2, merged, equals the unsharded run; a missing shard is named (exit 2);
    a shard given twice is refused, naming the duplicate cases (exit 3)."""
    rows_or_clean()
    for i in (0, 1):
        code, _, err = run(["run", SMOKE, "-o", "shard%d.csv" % i, "--shard", "%d/2" % i])
        check(code == 0, "shard %d: exit %d: %s" % (i, code, err))
    code, _, err = run(["merge", "merged.csv", "shard1.csv", "shard0.csv"])
    check(code == 0, "merge: exit %d: %s" % (code, err))
    check(open("merged.csv").read() == open("clean.csv").read(), "merged CSV differs from the unsharded one")
    meta = json.load(open("merged.csv.json"))
    check(meta["cases"] == 64 and meta["cases_done"] == 64, "merged sidecar: %s" % meta)
    code, _, err = run(["merge", "half.csv", "shard0.csv"])
    check(code == 2 and "case indices missing: 1, 3, 5" in err and "(no file for shard 1 of 2)" in err,
          "missing shard: exit %d: %r" % (code, err))
    code, _, err = run(["merge", "half.csv", "shard0.csv", "--allow-missing"])
    check(code == 0, "--allow-missing: exit %d" % code)
    code, _, err = run(["merge", "dup.csv", "shard0.csv", "shard0.csv"])
    check(code == 3 and "duplicate case keys: case 0 (" in err, "duplicate: exit %d: %r" % (code, err))
    # configs/bad_input.yaml gives each injection a sweep of its own, so each row a key of its
    # own: its shards merge and the gate reads the result.
    bad = os.path.join(ROOT, "configs", "bad_input.yaml")
    for i in (0, 1):
        code, _, err = run(["run", bad, "-o", "bad%d.csv" % i, "--shard", "%d/2" % i])
        check(code == 0, "bad_input shard %d: exit %d: %s" % (i, code, err))
    code, _, err = run(["merge", "bad.csv", "bad0.csv", "bad1.csv"])
    check(code == 0 and len(rows("bad.csv")) == 41, "bad_input merge: exit %d: %s" % (code, err))
    code, out, err = run(["compare", "bad.csv", "bad.csv"])
    check(code == 0, "bad_input compare: exit %d: %s" % (code, err))
    code, _, err = run(["run", SMOKE, "-o", "x.csv", "--shard", "slurm"])
    check(code == 3 and "SLURM_ARRAY_TASK_ID is not set" in err, "slurm unset: %d %r" % (code, err))
    code, out, _ = run(["list", SMOKE, "--shard", "slurm"], SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=4)
    check(code == 0 and [l.split()[0] for l in out.splitlines()][:3] == ["1", "5", "9"], "list --shard slurm: %r" % out[:80])


def sidecar_copy(src, name, change):
    """A copy of shard `src` (CSV and sidecar) as `name`, its sidecar passed through `change`."""
    shutil.copy(src, name)
    meta = json.load(open(src + ".json"))
    change(meta)
    json.dump(meta, open(name + ".json", "w"))


def merge_checks():
    """merge refuses shards run with other settings, naming the setting and both values; bounds
    the shard count and names missing shards as ranges; checks every sidecar key it reads, naming
    the file and the key, and every row against its shard's sidecar; reads a CRLF shard and refuses a directory as a shard or --config (exit 3
    each)."""
    for i, extra in ((0, []), (1, []), (2, ["--mode", "cold"]), (3, ["--rotate", "61"])):
        code, _, err = run(["run", SMOKE, "-o", "m%d.csv" % i, "--shard", "%d/2" % (i % 2)] + extra)
        check(code == 0, "shard %d: exit %d: %s" % (i, code, err))
    code, _, err = run(["merge", "mc.csv", "m0.csv", "m2.csv"])
    check(code == 3 and err.strip() == 'kvbench: m2.csv.json: settings.mode is "cold", m0.csv.json\'s '
          'is "graph" (shards run with other settings measure other things)', "mode: %d %r" % (code, err))
    code, _, err = run(["merge", "mc.csv", "m0.csv", "m3.csv"])
    check(code == 3 and 'settings.rotate is "61", m0.csv.json\'s is "1"' in err, "rotate: %d %r" % (code, err))
    check(not os.path.exists("mc.csv"), "a refused merge wrote its output")
    # A shard of another build or another GPU model.
    code, _, err = run(["run", SMOKE, "-o", "mgpu.csv", "--shard", "1/2"], STANDIN_NAME="Other GPU")
    check(code == 0, "other model: exit %d: %s" % (code, err))
    code, _, err = run(["merge", "mc.csv", "m0.csv", "mgpu.csv"])
    check(code == 3 and err.strip() == "kvbench: mgpu.csv.json: the GPU model (device.name) is "
          "'Other GPU', m0.csv.json's is 'Stand-in GPU' (shards of two GPU models are not merged "
          "into one CSV)", "model: %d %r" % (code, err))
    m0 = json.load(open("m0.csv.json"))
    sha = m0["git_sha"] + (" (uncommitted changes)" if m0["git_dirty"] else "")
    sidecar_copy("m1.csv", "mbuild.csv", lambda m: m.update(git_sha="0123456789ab", git_dirty=True))
    code, _, err = run(["merge", "mc.csv", "m0.csv", "mbuild.csv"])
    check(code == 3 and err.strip() == "kvbench: mbuild.csv.json: the build (git_sha) is 0123456789ab "
          "(uncommitted changes), m0.csv.json's is %s (shards of two builds are not merged into one "
          "CSV)" % sha, "build: %d %r" % (code, err))
    check(not os.path.exists("mc.csv"), "a refused merge wrote its output")
    # A row its own sidecar does not describe (another build, GPU model or timing mode, pasted
    # in): refused naming the line, the column and both values.
    m1 = open("m1.csv").read().splitlines(True)
    for column, value in (("git_sha", "0123456789ab"), ("device", "Other GPU"), ("mode", "cold")):
        header = m1[0].rstrip("\n").split(",")
        row = m1[1].rstrip("\n").split(",")
        was = row[header.index(column)]
        row[header.index(column)] = value
        shutil.copy("m1.csv.json", "mrow.csv.json")
        with open("mrow.csv", "w") as f:
            f.write(m1[0] + ",".join(row) + "\n" + "".join(m1[2:]))
        code, _, err = run(["merge", "mc.csv", "m0.csv", "mrow.csv"])
        key = {"git_sha": "git_sha", "device": "device.name", "mode": "settings.mode"}[column]
        check(code == 3 and err.strip() == "kvbench: mrow.csv:2: column '%s' is '%s', mrow.csv.json's "
              "%s is '%s' (rows of another run are not merged under this sidecar)"
              % (column, value, key, was), "row %s: %d %r" % (column, code, err))
        check(not os.path.exists("mc.csv"), "a refused merge wrote its output")
    # Shards run with --variants: numbered as the run numbered them, so none is missing; shards
    # of other --variants are refused naming both lists.
    for i, variants in ((0, "optimized"), (1, "optimized"), (2, "seed_port")):
        code, _, err = run(["run", SMOKE, "--variants", variants, "--shard", "%d/2" % (i % 2), "-o",
                            "v%d.csv" % i])
        check(code == 0, "--variants shard %d: exit %d: %s" % (i, code, err))
    code, out, err = run(["merge", "mv.csv", "v0.csv", "v1.csv"])
    check(code == 0 and "0 of 32 cases missing" in out, "--variants merge: %d %r %r" % (code, out, err))
    code, _, err = run(["merge", "mv2.csv", "v0.csv", "v2.csv"])
    check(code == 3 and err.strip() == "kvbench: v2.csv.json: --variants (variants) is seed_port, "
          "v0.csv.json's is optimized (shards of other variants run other cases)",
          "--variants differ: %d %r" % (code, err))
    # --shard 5/999999999 is refused; a sidecar saying it is refused by merge, at once.
    code, _, err = run(["run", SMOKE, "-o", "big.csv", "--shard", "5/999999999"])
    check(code == 3 and "--shard 5/999999999: 999999999 shards, more than 1000000" in err, "big: %d %r" % (code, err))
    sidecar_copy("m1.csv", "big.csv", lambda m: m.update(shard="5/999999999"))
    t0 = time.time()
    code, _, err = run(["merge", "mb.csv", "big.csv"])
    check(code == 3 and "big.csv.json: key 'shard': expected \"I/N\"" in err and time.time() - t0 < 5,
          "big merge: %d %r" % (code, err))
    code, _, err = run(["run", SMOKE, "-o", "many.csv", "--shard", "5/1000000"])
    check(code == 0, "5/1000000: exit %d: %s" % (code, err))
    t0 = time.time()
    code, _, err = run(["merge", "mm.csv", "many.csv"])
    check(code == 2 and "(no file for shard 0-4, 6-999999 of 1000000)" in err and time.time() - t0 < 5,
          "many: %d %r" % (code, err))
    # Sidecar keys: each defect named by file and key.
    for name, change, message in (
            ("shard_abc", lambda m: m.update(shard="abc"), "key 'shard': expected \"I/N\""),
            ("devices_numbers", lambda m: m.update(devices=[1, 2]), "key 'devices[0]': expected an object, got 1"),
            ("negative_case", lambda m: m.update(selected_cases=[-1]),
             "key 'selected_cases[0]': expected a case number (0 or more), got -1"),
            ("done_text", lambda m: m.update(cases_done="x"), "key 'cases_done': expected a non-negative integer"),
            ("no_config", lambda m: m.pop("config"), "key 'config': expected an object, missing"),
            ("uuid_number", lambda m: m["devices"][0]["device"].update(uuid=7),
             "key 'devices[0].device.uuid': expected a string or null, got 7")):
        sidecar_copy("m1.csv", name + ".csv", change)
        code, _, err = run(["merge", "o.csv", "m0.csv", name + ".csv"])
        check(code == 3 and err.strip() == "kvbench: %s.csv.json: %s" % (name, err.strip().split(": ", 2)[2])
              and message in err and len(err.strip().splitlines()) == 1, "%s: %d %r" % (name, code, err))
    # A sidecar without finished_at (a run still going, or killed): merged, the merge unfinished.
    sidecar_copy("m1.csv", "running.csv", lambda m: m.pop("finished_at"))
    code, _, err = run(["merge", "run_merged.csv", "m0.csv", "running.csv"])
    check(code == 0 and json.load(open("run_merged.csv.json"))["finished_at"] is None, "running: %d %r" % (code, err))
    # A directory where a shard should be; a shard written with CRLF line ends.
    os.mkdir("dir.csv")
    shutil.copy("m0.csv.json", "dir.csv.json")
    code, _, err = run(["merge", "o.csv", "dir.csv", "m1.csv"])
    check(code == 3 and "dir.csv: is a directory, not a result CSV" in err, "dir: %d %r" % (code, err))
    os.mkdir("cfg_dir")
    code, _, err = run(["merge", "o.csv", "m0.csv", "m1.csv", "--config", "cfg_dir"])
    check(code == 3 and err.strip() == "kvbench: cfg_dir: is a directory, not a config file "
          "(the shards' sidecars name it; --config)", "config dir: %d %r" % (code, err))
    with open("m0.csv", newline="") as f, open("crlf.csv", "w", newline="") as g:
        g.write(f.read().replace("\n", "\r\n"))
    shutil.copy("m0.csv.json", "crlf.csv.json")
    code, _, err = run(["merge", "crlf_merged.csv", "crlf.csv", "m1.csv"])
    check(code == 0 and open("crlf_merged.csv").read() == run_and_read_clean(), "crlf: %d %r" % (code, err))


def run_and_read_clean():
    rows_or_clean()
    return open("clean.csv").read()


def fatal():
    """A worker that cannot start (no device) ends the run with exit 4 and one line."""
    code, _, err = run(["run", SMOKE, "-o", "fatal.csv"], STANDIN_FATAL="no CUDA device: stand-in")
    check(code == 4 and err.strip() == "kvbench: no CUDA device: stand-in", "exit %d: %r" % (code, err))


def startup():
    """--case-timeout limits each case, not the worker's start (launch floor, calibration): a
    worker 2 s in starting under --case-timeout 1 runs its cases; a case past it still fails."""
    code, _, err = run(["run", SMOKE, "-o", "startup.csv", "--case", "0", "1", "--case-timeout", "1"],
                       STANDIN_START_DELAY=2)
    check(code == 0 and len(rows("startup.csv")) == 2, "slow start: exit %d: %s" % (code, err))
    code, _, err = run(["run", SMOKE, "-o", "startup_hang.csv", "--case", "0", "1", "--case-timeout", "1"],
                       STANDIN_START_DELAY=0.5, STANDIN_PLAN="1=hang")
    r = rows("startup_hang.csv")
    check(code == 2 and [x["status"] for x in r] == ["passed", "failed"]
          and "timed out after 1 s" in r[1]["reason"], "hung case: exit %d: %s %s" % (code, err, r))


def overhead():
    """The supervisor's cost per case, stand-in included: at most 1 ms (validation.yaml's cases)."""
    t0 = time.time()
    code, _, err = run(["run", VALIDATION, "-o", "one.csv", "--case", "0"])
    startup = time.time() - t0
    check(code == 0, "one case: exit %d: %s" % (code, err))
    t0 = time.time()
    code, _, err = run(["run", VALIDATION, "-o", "all.csv"])
    total = time.time() - t0
    n = len(rows("all.csv"))
    per_case_ms = 1000 * (total - startup) / (n - 1)
    print("supervisor overhead: %.3f ms per case over %d cases (stand-in worker included)" % (per_case_ms, n))
    check(code == 0 and n > 1000, "validation run: exit %d, %d rows: %s" % (code, n, err[-300:]))
    check(per_case_ms <= 1.0, "%.3f ms per case, more than 1 ms" % per_case_ms)


def settings():
    """Every run setting reaches the workers as the sidecar records it: each flag given a value
    other than its default, the settings the worker was handed equal the sidecar's, key by key,
    and each is the value asked for."""
    asked = {"seed": ("--seed", "3", 3), "mode": ("--mode", "hot", "hot"),
             "warmup": ("--warmup", "2", 2), "min_samples": ("--min-samples", "3", 3),
             "min_time_s": ("--min-time", "0.25", 0.25),
             "target_noise": ("--target-noise", "0.125", 0.125),
             "timeout_s": ("--timeout", "7.5", 7.5),
             "launches_per_sample": ("--launches-per-sample", "4", 4),
             "l2_flush": ("--l2-flush", "memset", "memset"), "rotate": ("--rotate", "7", "7"),
             "hot_inputs": ("--hot-inputs", None, True)}
    flags = []
    for flag, text, _ in asked.values():
        flags += [flag] + ([text] if text is not None else [])
    flags += ["--save-tensors", "tensors", "--save-tensors-all", "--check-bounds", "--max-cases", "500"]
    code, _, err = run(["run", SMOKE, "-o", "settings.csv", "--case", "0"] + flags,
                       STANDIN_ARGS="args.txt")
    check(code == 0, "exit %d: %s" % (code, err))
    with open("args.txt") as f:
        args = f.read().split("\n")
    check("--setup" in args, "the worker was not given --setup: %s" % args)
    setup = json.loads(args[args.index("--setup") + 1])
    recorded = json.load(open("settings.csv.json"))["settings"]
    check(sorted(setup["settings"]) == sorted(recorded),
          "the worker's settings have keys %s, the sidecar's %s" % (sorted(setup["settings"]), sorted(recorded)))
    # The timer's other value needs graph mode, which is the default: asked in a run of its own.
    # --context replaces --hot-inputs' after_producer, so the context and the layer size too.
    separate = {"timer": ("--timer", "cupti", "cupti"), "context": ("--context", "cold", "cold"),
                "layer_mib": ("--layer-mib", "8", 8)}
    check(sorted(recorded) == sorted(list(asked) + list(separate)), "the sidecar's settings are %s, the test asks %s: "
          "give the new setting a flag value here" % (sorted(recorded), sorted(list(asked) + list(separate))))
    for key, (flag, _, value) in asked.items():
        check(setup["settings"][key] == recorded[key] == value,
              "settings.%s (%s): the worker has %r, the sidecar %r, asked %r"
              % (key, flag, setup["settings"][key], recorded[key], value))
    check(setup["save_tensors"] == "tensors" and setup["save_tensors_all"] and setup["check_bounds"]
          and setup["max_cases"] == 500, "validation options: %s" % setup)
    for key, (flag, text, value) in separate.items():
        code, _, err = run(["run", SMOKE, "-o", key + ".csv", "--case", "0", flag, text],
                           STANDIN_ARGS=key + ".txt")
        check(code == 0, "exit %d: %s" % (code, err))
        with open(key + ".txt") as f:
            args = f.read().split("\n")
        got = json.loads(args[args.index("--setup") + 1])["settings"][key]
        recorded = json.load(open(key + ".csv.json"))["settings"][key]
        check(got == recorded == value, "settings.%s (%s): the worker has %r, the sidecar %r, asked %r"
              % (key, flag, got, recorded, value))


def save_samples():
    """run --save-samples: one record of samples per timed row, keyed by the row's case key."""
    code, _, err = run(["run", SMOKE, "-o", "s.csv", "--save-samples", "--max-tokens", "16"])
    check(code == 0, "exit %d: %s" % (code, err))
    with open("s.csv.samples.jsonl") as f:
        lines = f.read().splitlines()
    check(json.loads(lines[0]) == {"kvbench_samples": 1}, "header %r" % lines[0])
    records = [json.loads(line) for line in lines[1:]]
    table = rows("s.csv")
    check(len(records) == len(table), "%d records for %d rows" % (len(records), len(table)))
    for rec, row in zip(records, table):
        check(tuple(rec["key"][c] for c in kvbench_schema.case_key_columns(KVBENCH)) == key(row),
              "record %r is not of row %r" % (rec["key"], key(row)))
        check(len(rec["samples_us"]) == 200 and rec["timer"] == row["timer"],
              "record of %r: %d samples, timer %r" % (key(row), len(rec["samples_us"]), rec["timer"]))
    code, _, _ = run(["run", SMOKE, "-o", "plain.csv", "--max-tokens", "16"])
    check(code == 0 and not os.path.exists("plain.csv.samples.jsonl"), "samples written unasked")
    # compare judges from the samples when both runs have them: a 4% slowdown, which the rows'
    # medians alone (band 5%) call same, is slower; the same run again is same.
    code, _, err = run(["run", SMOKE, "-o", "s3.csv", "--save-samples", "--max-tokens", "16"],
                       STANDIN_SCALE="1.04")
    check(code == 0, "exit %d: %s" % (code, err))
    code, out, err = run(["compare", "s.csv", "s3.csv"])
    check(code == 1 and "trimmed means" in out and "0 same" in out, "exit %d: %s" % (code, out[-400:]))
    code, out, _ = run(["compare", "plain.csv", "s3.csv"])
    check(code == 0 and "trimmed means" not in out, "without samples on both sides: %s" % out[-300:])
    code, out, _ = run(["run", SMOKE, "-o", "again.csv", "--save-samples", "--max-tokens", "16"])
    code, out, err = run(["compare", "s.csv", "again.csv"])
    check(code == 0 and " same" in out, "exit %d: %s" % (code, out[-300:]))
    with open("bad.csv.samples.jsonl", "w") as f:
        f.write("{}\n")
    shutil.copy("s.csv", "bad.csv")
    code, _, err = run(["compare", "bad.csv", "again.csv"])
    check(code == 3 and "bad.csv.samples.jsonl:1: not a kvbench samples file" in err,
          "exit %d: %s" % (code, err))


def build(name, **env_vars):
    """A stand-in `kvbench` build for `ab`: the stand-in worker under these variables."""
    with open(name, "w") as f:
        f.write("#!/bin/sh\n" + "".join("export %s=%s\n" % kv for kv in env_vars.items()) +
                "exec %s %s \"$@\"\n" % (sys.executable, os.path.join(HERE, "workers", "standin_worker.py")))
    os.chmod(name, 0o755)
    return "./" + name


def verdicts(path):
    return {r["case"]: r for r in rows(path)}


def ab_verdicts():
    """kvbench ab: a planted 10% or 5% slowdown is slower in every case (exit 1), a speed-up
    faster, unchanged code same (exit 0); builds interleaved case by case, A B then B A."""
    base = build("base.sh", STANDIN_LOG=os.path.abspath("base.log"))
    for scale, want, want_code in (("1.10", "slower", 1), ("1.05", "slower", 1),
                                   ("0.95", "faster", 0), ("1", "same", 0)):
        cur = build("cur.sh", STANDIN_SCALE=scale, STANDIN_LOG=os.path.abspath("cur.log"))
        for log in ("base.log", "cur.log"):
            if os.path.exists(log):
                os.remove(log)
        code, out, err = run(["ab", base, cur, SMOKE, "--max-tokens", "16", "-o", "v.csv",
                              "--junit", "v.xml"])
        check(code == want_code, "scale %s: exit %d, expected %d: %s" % (scale, code, want_code, err))
        v = verdicts("v.csv")
        check(v and all(r["verdict"] == want and r["rounds"] == "4" for r in v.values()),
              "scale %s: %s" % (scale, sorted({(r["verdict"], r["rounds"]) for r in v.values()})))
        check(("-> PASS" if want_code == 0 else "-> FAIL (slower)") in out, out[-200:])
    # The logs: per case, 8 entries (4 rounds x 2 builds) in the order A B, B A, ...; each round
    # on fresh workers, one per build.
    by_case, pids = {}, []
    for build_name in ("base", "cur"):
        for line in open(build_name + ".log"):
            _, pid, case, start, _ = line.split()
            by_case.setdefault(case, []).append((float(start), build_name))
            pids.append(pid)
    check(len(set(pids)) == 8, "%d workers, expected a fresh one per build and round" % len(set(pids)))
    for case, entries in by_case.items():
        order = [name for _, name in sorted(entries)]
        pairs = [order[i:i + 2] for i in range(0, len(order), 2)]
        check(len(pairs) == 4 and all(len(set(p)) == 2 for p in pairs) and
              all(pairs[i][0] == pairs[i + 1][1] for i in range(3)),
              "case %s: builds ran in the order %s" % (case, order))


def ab_ambiguous():
    """kvbench ab: samples too noisy to tell are measured again up to --max-rounds, then called
    ambiguous (exit 0, skipped in the JUnit XML with the reason); a build without samples or a
    missing executable is refused."""
    base = build("noisy_base.sh", STANDIN_NOISE="0.6")
    cur = build("noisy_cur.sh", STANDIN_NOISE="0.6", STANDIN_SCALE="1.02")
    code, out, err = run(["ab", base, cur, SMOKE, "--case", "0", "--case", "32", "--max-rounds", "8",
                          "-o", "v.csv", "--junit", "v.xml"])
    check(code == 0, "exit %d: %s" % (code, err))
    v = verdicts("v.csv")
    check(all(r["verdict"] == "ambiguous" and r["rounds"] == "8" for r in v.values()),
          "verdicts %s" % [(r["verdict"], r["rounds"]) for r in v.values()])
    check("round 5 of 2 cases" in err and "round 8 of 2 cases" in err, "no re-measurement: %s" % err)
    xml = open("v.xml").read()
    check('skipped="2"' in xml and xml.count("<skipped message=\"ambiguous: ") == 2, xml)
    # Two processes of one build that differ by a few percent (as on a GPU at the smallest
    # sizes): never called slower or faster, since each round has fresh ones.
    base = build("jitter_base.sh", STANDIN_PROCESS_JITTER="0.03")
    same = build("jitter_cur.sh", STANDIN_PROCESS_JITTER="0.03")
    code, out, err = run(["ab", base, same, SMOKE, "--max-tokens", "16", "-o", "j.csv"])
    v = verdicts("j.csv")
    check(code == 0 and all(r["verdict"] in ("same", "ambiguous") for r in v.values()),
          "exit %d, verdicts %s" % (code, sorted((r["verdict"], r["ratio"]) for r in v.values())))
    code, _, err = run(["ab", "./nope", cur, SMOKE])
    check(code == 3 and "BASE: not an executable file: ./nope" in err, "exit %d: %s" % (code, err))
    code, _, err = run(["ab", base, cur, SMOKE, "--rounds", "6", "--max-rounds", "4"])
    check(code == 3 and "--max-rounds 4 is below --rounds 6" in err, "exit %d: %s" % (code, err))


SCENARIOS = {f.__name__: f for f in (faults, signals, background, resume_mismatch, one_writer, devices, shards,
                                     fatal, overhead, settings, merge_checks, startup, save_samples,
                                     ab_verdicts, ab_ambiguous)}


def main():
    global KVBENCH
    KVBENCH = os.path.abspath(sys.argv[1])
    names = list(SCENARIOS) if sys.argv[2] == "all" else [sys.argv[2]]
    workdir = os.path.join(sys.argv[3], sys.argv[2])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    os.chdir(workdir)
    for name in names:
        SCENARIOS[name]()
        print("ok:", name, "-", SCENARIOS[name].__doc__.split("\n")[0])


if __name__ == "__main__":
    main()
