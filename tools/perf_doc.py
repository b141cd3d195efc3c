#!/usr/bin/env python3
"""The generated sections of the performance docs: tables printed by a script from committed CSVs,
never typed.

A generated section is the output of the command named in its opening marker:

    <!-- generated: python3 scripts/perf_report.py results/h200/perf.csv -->
    ...what that command prints...
    <!-- end generated -->

The command must be `python3` and a script under scripts/ or tools/ of this repository, with
arguments; it runs from the repository root with this interpreter.

usage: tools/perf_doc.py --check [FILE...]   exit 1, with a diff, when a section differs
       tools/perf_doc.py --write [FILE...]   rewrite every section from its command
FILE defaults to docs/performance.md and docs/dev/targets.md. The scripts read the case key from
the kvbench binary ($KVBENCH, else build/kvbench).
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = ["docs/performance.md", "docs/dev/targets.md"]
OPEN = re.compile(r"^<!-- generated: (.+?) -->$")
CLOSE = "<!-- end generated -->"


class DocError(Exception):
    pass


def run(command, where):
    """What the section's command prints, trailing spaces and blank edge lines removed."""
    argv = shlex.split(command)
    script = argv[1] if len(argv) > 1 else ""
    if argv[:1] != ["python3"] or not re.fullmatch(r"(scripts|tools)/[\w.-]+\.py", script):
        raise DocError(f"{where}: '{command}' is not `python3 scripts/X.py ...` or "
                       f"`python3 tools/X.py ...`")
    done = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise DocError(f"{where}: '{command}' exited {done.returncode}: "
                       f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")
    return [line.rstrip() for line in done.stdout.strip("\n").splitlines()]


def sections(lines, path):
    """(opening line index, closing line index, command) of every generated section."""
    out, i = [], 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if m:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == CLOSE), None)
            if end is None:
                raise DocError(f"{path}:{i + 1}: generated section without '{CLOSE}'")
            if any(OPEN.match(x) for x in lines[i + 1:end]):
                raise DocError(f"{path}:{i + 1}: generated section opened again before '{CLOSE}'")
            out.append((i, end, m.group(1)))
            i = end
        i += 1
    return out


def process(path, write):
    """Number of sections that differ (check) or were rewritten (write)."""
    full = os.path.join(ROOT, path)
    with open(full) as f:
        lines = f.read().splitlines()
    found = sections(lines, path)
    if not found:
        raise DocError(f"{path}: no generated section")
    differ = 0
    # From the last section up, so that earlier indices stay valid while rewriting.
    for start, end, command in reversed(found):
        want = run(command, f"{path}:{start + 1}")
        have = lines[start + 1:end]
        if have != [""] + want + [""]:
            differ += 1
            if write:
                lines[start + 1:end] = [""] + want + [""]
            else:
                sys.stdout.writelines(difflib.unified_diff(
                    [x + "\n" for x in have], [x + "\n" for x in [""] + want + [""]],
                    f"{path}:{start + 2} (as committed)", f"{command} (now)", n=1))
    if write and differ:
        with open(full, "w") as f:
            f.write("\n".join(lines) + "\n")
    verb = "rewritten" if write else "differ from their command's output"
    print(f"{path}: {len(found)} generated sections, {differ} {verb}")
    return differ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    ap.add_argument("files", nargs="*", default=DEFAULT_FILES)
    args = ap.parse_args()
    try:
        differ = sum(process(f, args.write) for f in args.files)
    except (DocError, OSError) as e:
        print(f"perf_doc.py: {e}", file=sys.stderr)
        return 2
    return 1 if differ and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
