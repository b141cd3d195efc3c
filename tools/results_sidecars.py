#!/usr/bin/env python3
"""The sidecars of the committed result CSVs (results/**/<csv>.json).

  results_sidecars.py check [ROOT]
      Every CSV under ROOT/results has a sidecar <csv>.json holding the run's device (`device.name`,
      `device.uuid`), commit (`git_sha`) and config (`config.path`, a file of the repository, and
      `config.fnv1a64`), whose `csv` is the CSV's own path relative to ROOT, and in which no string
      is an absolute path. A value that the run did not record may be null only when `notes` says
      why. Exit 0 when all hold, 1 with one line per problem.

  results_sidecars.py derive CSV --from RUN.csv.json --tool TEXT [--input PATH] [--note TEXT]...
      Writes CSV.json for a CSV that `kvbench run` did not write (a `kvbench bounds` CSV, a
      CSV of the older triton_baseline.py): device name, UUID and commit from the CSV's own `device`,
      `device_uuid` and `git_sha` columns (each must hold one value); config and the device's
      other properties from RUN.csv.json when its UUID is the same; `tool` says what wrote the
      CSV, `input` the result CSV it read, `notes` what was filled in afterwards and from what.

  results_sidecars.py put SRC.csv DEST.csv [--root ROOT]
      Copies a run's CSV and its sidecar SRC.csv.json into the repository as DEST.csv and
      DEST.csv.json, the sidecar's `csv` set to DEST's path in the repository (a run on a GPU host
      records where it wrote there), then checks DEST as `check` does. Exit 1 with the problems
      left (an absolute path elsewhere in the sidecar, say); the copies stay for a look.

ROOT defaults to the repository holding this script; paths are relative to it.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import kvbench_schema  # noqa: E402
from kvbench_schema import InputError  # noqa: E402

REQUIRED = [("git_sha",), ("config", "path"), ("config", "fnv1a64"), ("device", "name"),
            ("device", "uuid"), ("csv",)]


def lookup(doc, path):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            raise KeyError(".".join(path))
        doc = doc[key]
    return doc


def absolute_strings(doc, where=""):
    """(key path, value) of every string in doc that is an absolute path."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from absolute_strings(v, f"{where}.{k}" if where else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from absolute_strings(v, f"{where}[{i}]")
    elif isinstance(doc, str) and (doc.startswith("/") or doc.startswith("~")):
        yield where, doc


def check_one(root, rel):
    """Problems of one CSV's sidecar, as lines naming the file."""
    side = rel + ".json"
    path = os.path.join(root, side)
    if not os.path.exists(path):
        return [f"{rel}: no sidecar {side}"]
    try:
        doc = kvbench_schema.read_sidecar_file(path, side)
    except InputError as e:
        return [str(e)]
    problems, notes = [], doc.get("notes") or []
    for key in REQUIRED:
        name = ".".join(key)
        try:
            value = lookup(doc, key)
        except KeyError:
            problems.append(f"{side}: missing key {name}")
            continue
        if value is None or value == "":
            if not any(name in n for n in notes):
                problems.append(f"{side}: {name} is empty and no note says why")
    if doc.get("csv") not in (None, rel):
        problems.append(f"{side}: csv is '{doc.get('csv')}', not the CSV's path in the repository "
                        f"'{rel}'")
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    if isinstance(config.get("path"), str) and config["path"] and \
            not os.path.isfile(os.path.join(root, config["path"])):
        problems.append(f"{side}: config.path '{config['path']}' is not a file of the repository")
    uuid = doc.get("device", {}).get("uuid") if isinstance(doc.get("device"), dict) else None
    if isinstance(uuid, str) and uuid and not uuid.startswith("GPU-"):
        problems.append(f"{side}: device.uuid '{uuid}' is not a GPU UUID")
    for where, value in absolute_strings(doc):
        problems.append(f"{side}: {where} is an absolute path ('{value}')")
    return problems


def check(root):
    csvs = []
    for d, _, files in os.walk(os.path.join(root, "results")):
        csvs += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(".csv")]
    if not csvs:
        print(f"no CSV under {os.path.join(root, 'results')}")
        return 1
    problems = [p for rel in sorted(csvs) for p in check_one(root, rel)]
    for p in problems:
        print(p)
    print(f"{len(csvs)} result CSVs, {len(problems)} problem(s)")
    return 1 if problems else 0


def one_value(rows, column, csv_path):
    values = {r.get(column, "") for r in rows}
    if len(values) != 1:
        sys.exit(f"results_sidecars.py: {csv_path}: column {column} holds {len(values)} values "
                 f"({', '.join(sorted(values))}), not one")
    return values.pop()


def derive(args):
    rel = os.path.relpath(os.path.abspath(args.csv), ROOT)
    try:
        rows = [row for _, row in kvbench_schema.read_result_rows(args.csv)[1]]
        run = kvbench_schema.read_sidecar_file(args.run)
    except InputError as e:
        sys.exit(f"results_sidecars.py: {e}")
    if not rows:
        sys.exit(f"results_sidecars.py: {args.csv}: no rows")
    name = one_value(rows, "device", args.csv)
    uuid = one_value(rows, "device_uuid", args.csv) or None
    sha = one_value(rows, "git_sha", args.csv)
    same_board = uuid is not None and run.get("device", {}).get("uuid") == uuid
    device = dict(run["device"]) if same_board else {"name": name, "uuid": uuid}
    doc = {"tool": args.tool, "git_sha": sha, "config": run["config"], "csv": rel}
    if args.input:
        doc["input"] = args.input
    doc["device"] = device
    if args.note:
        doc["notes"] = args.note
    with open(args.csv + ".json", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


def put(args):
    root = os.path.abspath(args.root)
    dest = os.path.abspath(args.dest)
    rel = os.path.relpath(dest, root)
    if rel.startswith(".."):
        sys.exit(f"results_sidecars.py: {args.dest}: not inside the repository {root}")
    try:
        doc = kvbench_schema.read_sidecar_file(kvbench_schema.sidecar_path(args.src))
        with open(args.src, "rb") as f:
            data = f.read()
    except InputError as e:
        sys.exit(f"results_sidecars.py: {e}")
    except OSError as e:
        sys.exit(f"results_sidecars.py: {args.src}: {e.strerror or e}")
    doc["csv"] = rel
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(data)
    with open(dest + ".json", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    problems = check_one(root, rel)
    for p in problems:
        print(p)
    print(f"{rel}: {len(problems)} problem(s)")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("root", nargs="?", default=ROOT)
    d = sub.add_parser("derive")
    d.add_argument("csv")
    d.add_argument("--from", dest="run", required=True)
    d.add_argument("--tool", required=True)
    d.add_argument("--input")
    d.add_argument("--note", action="append")
    p = sub.add_parser("put")
    p.add_argument("src")
    p.add_argument("dest")
    p.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    if args.command == "check":
        return check(os.path.abspath(args.root))
    return derive(args) if args.command == "derive" else put(args)


if __name__ == "__main__":
    sys.exit(main())
