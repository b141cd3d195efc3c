"""The columns of kvbench's result rows, read from the kvbench binary: one source of truth.

The binary defines the columns once (src/core/columns.hpp), each with its role: case_key (the
columns that identify a case: kernel, variant, sweep, num_tokens, ... slots), result or
metadata. Scripts ask the binary instead of copying the lists:
  - `kvbench schema --columns` prints every column with its role, as CSV (column,role);
  - `kvbench schema --case-key` prints the case key comma-separated on one line; a binary
    without that flag gives the same list as the header of `kvbench list CONFIG --format csv`
    less its leading `case` column.

The binary is the one given, else $KVBENCH, else build/kvbench at the repository root.
"""
import csv
import functools
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Any shipped config: only the header of its case list is read.
LIST_CONFIG = os.path.join(ROOT, "configs", "smoke.yaml")


class SchemaError(Exception):
    pass


def find_binary(kvbench=None):
    """The kvbench binary to ask: `kvbench` if given, else $KVBENCH, else build/kvbench."""
    path = kvbench or os.environ.get("KVBENCH") or os.path.join(ROOT, "build", "kvbench")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SchemaError(f"{path}: no kvbench binary there (build it with scripts/test.sh, "
                          f"or name it with $KVBENCH)")
    return path


def _output(binary, *args):
    try:
        done = subprocess.run([binary, *args], capture_output=True, text=True)
    except OSError as e:
        raise SchemaError(f"{binary}: {e.strerror}")
    return done.returncode, done.stdout, done.stderr.strip()


@functools.lru_cache(maxsize=None)
def _case_key(binary):
    rc, out, _ = _output(binary, "schema", "--case-key")
    if rc == 0 and out.strip():
        return tuple(out.strip().split(","))
    rc, out, err = _output(binary, "list", LIST_CONFIG, "--format", "csv")
    header = out.splitlines()[0].split(",") if rc == 0 and out else []
    if header[:1] != ["case"] or len(header) < 2:
        raise SchemaError(f"{binary} list {LIST_CONFIG} --format csv: exit {rc}: "
                          f"{err or 'no case header'}")
    return tuple(header[1:])


@functools.lru_cache(maxsize=None)
def _columns(binary):
    rc, out, err = _output(binary, "schema", "--columns")
    rows = list(csv.reader(out.splitlines())) if rc == 0 else []
    if rows[:1] != [["column", "role"]] or len(rows) < 2 or any(len(r) != 2 for r in rows):
        raise SchemaError(f"{binary} schema --columns: exit {rc}: {err or 'no column table'}")
    return tuple((name, role) for name, role in rows[1:])


def case_key_columns(kvbench=None):
    """The case-key column names, in CSV order, as a new list."""
    return list(_case_key(find_binary(kvbench)))


def columns(kvbench=None, role=None):
    """Every column name of a result row in CSV order (with `role`, only the columns of that
    role: case_key, result or metadata), as a new list."""
    return [name for name, r in _columns(find_binary(kvbench)) if role in (None, r)]


if __name__ == "__main__":
    # kvbench_schema.py [KVBENCH]: print the case key, comma-separated (what the scripts use).
    import sys
    try:
        print(",".join(case_key_columns(sys.argv[1] if len(sys.argv) > 1 else None)))
    except SchemaError as e:
        sys.exit(f"kvbench_schema.py: {e}")
