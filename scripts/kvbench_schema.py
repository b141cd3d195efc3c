"""The columns of kvbench's result rows, read from the kvbench binary: one source of truth.

The binary defines the columns once (src/core/columns.hpp), each with its role: case_key (the
columns that identify a case: kernel, variant, sweep, num_tokens, ... slots), result or
metadata. Scripts ask the binary instead of copying the lists:
  - `kvbench schema --columns` prints every column with its role, as CSV (column,role);
  - `kvbench schema --case-key` prints the case key comma-separated on one line; a binary
    without that flag gives the same list as the header of `kvbench list CONFIG --format csv`
    less its leading `case` column.

The binary is the one given, else $KVBENCH, else build/kvbench at the repository root.

It also holds what the scripts share for reading result CSVs and their sidecars as kvbench does
(src/core/result_csv.cpp): read_result_rows, number, integer, check_numbers, check_rows,
read_sidecar, read_sidecar_file, sidecar_number; every script and tool that reads a result CSV
or a sidecar reads it through these. Every problem is an InputError whose text is one line
naming the file (and the line and column where there is one). ArgumentParser exits 3 on a bad
command line. How each operation's rows read (labels): scripts/kvbench_operations.py.
"""
import argparse
import codecs
import csv
import functools
import io
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Any shipped config: only the header of its case list is read.
LIST_CONFIG = os.path.join(ROOT, "configs", "smoke.yaml")


class SchemaError(Exception):
    pass


class InputError(Exception):
    """A bad input file or flag: the text is one line naming the file (line, column) or flag."""


# The longest line kvbench reads in a result CSV (kMaxResultLine, src/core/result_csv.hpp).
MAX_LINE = 1 << 20
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE))


def read_result_rows(path):
    """(column names, [(line, row dict)]) of a CSV kvbench writes (result rows, `kvbench bounds`
    rows), each row with the number of the line it ends on. Zero bytes are ([], []). InputError
    for a file that cannot be read (a directory too), a line over MAX_LINE bytes, bytes that are
    not UTF-8, a last line without its newline (a row cut short), CSV the csv module refuses, and
    a row of more or fewer fields than the header; checking the columns and values is the
    caller's."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}")
    for line, text in enumerate(data.split(b"\n"), 1):
        if len(text.rstrip(b"\r")) > MAX_LINE:
            raise InputError(f"{path}:{line}: line longer than {MAX_LINE} bytes "
                             f"(is this a result CSV?)")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0  # kvbench drops it
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = bom + e.start
        line, column = data.count(b"\n", 0, at) + 1, at - data.rfind(b"\n", 0, at)
        raise InputError(f"{path}:{line}:{column}: byte 0x{data[at]:02x} is not UTF-8 "
                         f"(is this a result CSV?)")
    if data and not text.strip("\r\n"):  # as kvbench says of blank lines (one \r, say)
        raise InputError(f"{path}:1: no header line (is this a result CSV?)")
    if data and not data.endswith(b"\n"):
        line = data.count(b"\n") + 1
        raise InputError(f"{path}:{line}: no newline at the end of the last line "
                         f"(a row cut short?)")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        fieldnames = list(reader.fieldnames or [])
        for row in reader:
            if None in row.values():
                raise InputError(f"{path}:{reader.line_num}: too few columns (truncated line?)")
            if None in row:
                raise InputError(f"{path}:{reader.line_num}: too many columns")
            rows.append((reader.line_num, row))
    except csv.Error as e:
        raise InputError(f"{path}:{reader.line_num}: {e}")
    return fieldnames, rows


def _at(path, line):
    return path if line is None else f"{path}:{line}"


def number(text, path, line, column):
    """A column's text as a finite non-negative number (what kvbench writes for times, bytes and
    rates), None when empty; InputError naming the file, line (when not None) and column for
    anything else (nan, inf, -1, abc)."""
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{_at(path, line)}: column '{column}': '{text}' is not a "
                         f"non-negative number")
    return v


def integer(text, path, line, column):
    """A column's text as a non-negative integer (digits only), None when empty; InputError
    naming the file, line (when not None) and column for anything else."""
    if text == "":
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise InputError(f"{_at(path, line)}: column '{column}': '{text}' is not an integer "
                         f"(up to 18 digits)")
    return int(text)


def check_numbers(path, rows, numbers=(), integers=()):
    """number() and integer() on the columns named, in each (line, row) of rows that has them."""
    for line, row in rows:
        for column in numbers:
            number(row.get(column) or "", path, line, column)
        for column in integers:
            integer(row.get(column) or "", path, line, column)


# The case-key columns kvbench reads as integers (digits only: '1e3' and '1_0' are refused).
INTEGER_KEY_COLUMNS = ("num_tokens", "num_heads", "head_dim", "rope_dim", "block_size")


def check_rows(path, fieldnames, rows, kvbench=None):
    """What kvbench's readers refuse across a CSV's (line, row) pairs beyond one value at a time:
    an integer key column that is not digits, a timed row (median_us set) of 0 µs or of a case
    not supported or rejected, two rows of
    one case, and rows of two GPU models (the `device` column). InputError naming the lines."""
    for line, row in rows:
        for column in INTEGER_KEY_COLUMNS:
            if column in row and integer(row[column], path, line, column) is None:
                raise InputError(f"{path}:{line}: column '{column}': empty")
        median = row.get("median_us") or ""
        if median and row.get("status") in ("not_supported", "rejected"):
            raise InputError(f"{path}:{line}: column 'median_us': set in a {row['status']} row "
                             f"(nothing was launched)")
        if median and number(median, path, line, "median_us") == 0:
            raise InputError(f"{path}:{line}: column 'median_us': 0 in a timed row")
    # A key column an older schema lacks has kvbench's default in every row.
    key = [c for c in case_key_columns(kvbench) if c in fieldnames]
    seen, device_at = {}, None
    for line, row in rows:
        if "kernel" in key and "variant" in key:
            k = tuple(row[c] for c in key)
            if k in seen:
                raise InputError(f"{path}: lines {seen[k]} and {line} are one case "
                                 f"({row['kernel']} {row['variant']} T={row['num_tokens']})")
            seen[k] = line
        device = row.get("device") or ""
        if device and device_at is None:
            device_at = (line, device)
        elif device and device != device_at[1]:
            raise InputError(f"{path}:{line}: column 'device' is '{device}', line "
                             f"{device_at[0]}'s is '{device_at[1]}' (rows of two GPU models)")


def sidecar_path(csv_path):
    """The JSON sidecar of the CSV at csv_path: <csv>.json beside the file it names, for a symlink
    to an existing file beside its target, as kvbench reads and writes it (core/file_io.hpp)."""
    if not os.path.exists(csv_path):
        return csv_path + ".json"
    path = csv_path
    for _ in range(40):
        if not os.path.islink(path):
            break
        try:
            target = os.readlink(path)
        except OSError:
            return csv_path + ".json"
        path = os.path.join(os.path.dirname(path), target)
    return os.path.normpath(path) + ".json"


def read_sidecar(csv_path):
    """The JSON sidecar <csv>.json as a dict; {} when there is none (older CSVs have none).
    InputError as read_sidecar_file says."""
    sidecar = sidecar_path(csv_path)
    if not os.path.lexists(sidecar):
        return {}
    return read_sidecar_file(sidecar)


def read_sidecar_file(sidecar, name=None):
    """The JSON sidecar at the path `sidecar` as a dict. InputError naming it (as `name` when
    given, a path relative to a repository, say) when it cannot be read, is not JSON or not a
    JSON object, or when its measured_peak_gbps or theoretical_peak_gbps is not a finite
    non-negative number (0 and null: not known)."""
    name = name or sidecar
    try:
        with open(sidecar, encoding="utf-8") as f:
            meta = json.load(f)
    except OSError as e:
        raise InputError(f"{name}: {e.strerror or e}")
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{name}: not JSON ({e})")
    if not isinstance(meta, dict):
        raise InputError(f"{name}: not a JSON object")
    for key in ("measured_peak_gbps", "theoretical_peak_gbps"):
        sidecar_number(meta, name, key)
    return meta


def sidecar_number(meta, sidecar, *keys):
    """meta[keys[0]][keys[1]]... as a float: None when a key is absent or the value null;
    InputError naming the sidecar and the key when the value is not a finite non-negative
    number or an object on the way is not an object."""
    value = meta
    for i, key in enumerate(keys):
        if not isinstance(value, dict):
            raise InputError(f"{sidecar}: key '{'.'.join(keys[:i])}' is not a JSON object")
        value = value.get(key)
        if value is None:
            return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise InputError(f"{sidecar}: key '{'.'.join(keys)}': {json.dumps(value)} is not a "
                         f"non-negative number")
    return float(value)


def same_file(a, b):
    """Whether paths a and b name one file: the same device and inode when both exist (a hard or
    symbolic link of it too), else the same resolved path."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with kvbench's exit code for a bad command line: the usage, one line naming the
    problem, exit 3 (argparse's own is 2)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(3, f"{self.prog}: error: {message}\n")


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
    try:
        print(",".join(case_key_columns(sys.argv[1] if len(sys.argv) > 1 else None)))
    except SchemaError as e:
        sys.exit(f"kvbench_schema.py: {e}")
