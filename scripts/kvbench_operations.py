"""How a result row of each kvbench operation reads: one entry per operation, keyed by the CSV's
`kernel` value (src/core/types.cpp), that describes the row from its case-key columns.

describe(row) is kvbench's own text for the row's case (each operation's `describe_key`,
src/ops/*/operation.cpp, as `kvbench compare` prints it): "T=128 H=8 D=128 BS=16 nhd
bf16->bf16 strides=contiguous scale=none slots=random". shape(row) is the same text less the
token count, in two halves (geometry, data), for a panel title of two lines. brief(row) is the
short shape of the Markdown tables (scripts/perf_report.py, tools/perf_targets.py): the
operation's name and what tells its shapes apart, "cache H=8 D=128 BS=16 bf16->bf16 nhd".
A kernel no entry names (a row of another build) is described by its case-key columns by name,
as kvbench describes it, never as some other operation.
"""
import os
import sys
from typing import Callable, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvbench_schema  # noqa: E402


class Operation(NamedTuple):
    kernel: str  # the `kernel` column's value
    name: str  # in tables and file names: concat, cache, mla_cache
    shape: Callable  # row -> (geometry, data): describe_key less "T=N"
    brief: Callable  # row -> the short shape after the name


def _concat_shape(r):  # src/ops/concat_mha_k/operation.cpp
    return (f"H={r['num_heads']} NOPE={r['head_dim']} ROPE={r['rope_dim']}",
            f"{r['in_dtype']}->{r['out_dtype']} strides={r['strides']}")


def _concat_brief(r):
    return f"H={r['num_heads']} {r['in_dtype']}->{r['out_dtype']} {r['strides']}"


def _cache_shape(r):  # src/ops/cache_write/operation.cpp
    data = (f"{r['in_dtype']}->{r['out_dtype']} strides={r['strides']} scale={r['scale']} "
            f"slots={r['slots']}")
    data += " swa" if r["swa"] == "true" else ""
    data += " kv_interleaved" if r["kv_interleaved"] == "true" else ""
    return f"H={r['num_heads']} D={r['head_dim']} BS={r['block_size']} {r['layout']}", data


def _cache_brief(r):
    s = (f"H={r['num_heads']} D={r['head_dim']} BS={r['block_size']} "
         f"{r['in_dtype']}->{r['out_dtype']} {r['layout']}")
    s += f" scale={r['scale']}" if r["scale"] != "none" else ""
    s += " swa" if r["swa"] == "true" else ""
    return s


def _mla_cache_shape(r):  # src/ops/mla_cache/operation.cpp
    return (f"L={r['head_dim']} R={r['rope_dim']} BS={r['block_size']} {r['layout']}",
            f"{r['in_dtype']}->{r['out_dtype']} strides={r['strides']} scale={r['scale']} "
            f"slots={r['slots']}")


def _mla_cache_brief(r):
    s = (f"L={r['head_dim']} R={r['rope_dim']} BS={r['block_size']} "
         f"{r['in_dtype']}->{r['out_dtype']} {r['layout']}")
    s += f" scale={r['scale']}" if r["scale"] != "none" else ""
    return s


OPERATIONS = {op.kernel: op for op in (
    Operation("concat_and_cast_mha_k", "concat", _concat_shape, _concat_brief),
    Operation("reshape_and_cache_flash", "cache", _cache_shape, _cache_brief),
    Operation("concat_and_cache_mla", "mla_cache", _mla_cache_shape, _mla_cache_brief),
)}

# Named apart from the description: the operation, the variant and the sweep.
_NAMED_APART = ("kernel", "variant", "sweep")
# An axis a row of an older schema lacks reads as kvbench's default for it (docs/sweeps.md).
_DEFAULTS = {"rope_dim": "0", "layout": "nhd", "scale": "none", "swa": "false",
             "kv_interleaved": "false", "strides": "contiguous", "slots": "random"}


class _Row(dict):
    """A row whose missing or empty key columns read as kvbench's default, else as empty."""

    def __missing__(self, column):
        return _DEFAULTS.get(column, "")


def _row(row):
    return _Row({c: v for c, v in row.items() if isinstance(c, str) and v not in (None, "")})


def operation(row):
    """The row's Operation, None for a kernel no entry names."""
    return OPERATIONS.get(row.get("kernel") or "")


def name(row):
    """The operation's short name (concat, cache, mla_cache); an unknown kernel's own value."""
    op = operation(row)
    return op.name if op else row.get("kernel") or ""


def _generic(row, key_columns, with_tokens):
    key = kvbench_schema.case_key_columns() if key_columns is None else key_columns
    skip = _NAMED_APART + (() if with_tokens else ("num_tokens",))
    return [f"{c}={row.get(c) or ''}" for c in key if c not in skip]


def shape(row, key_columns=None):
    """(geometry, data): the row's description less its token count, in two halves. An unknown
    kernel's: its case-key columns as column=value, less kernel, variant, sweep and num_tokens
    (key_columns, else the kvbench binary's case key), split in the middle."""
    op = operation(row)
    if op:
        return op.shape(_row(row))
    parts = _generic(row, key_columns, with_tokens=False)
    half = (len(parts) + 1) // 2
    return " ".join(parts[:half]), " ".join(parts[half:])


def shape_label(row, separator=" ", key_columns=None):
    """shape(row)'s halves joined by separator ("\\n": two lines)."""
    return separator.join(part for part in shape(row, key_columns) if part)


def describe(row, key_columns=None):
    """kvbench's text for the row's case: "T=<num_tokens> " and shape_label(row); for an unknown
    kernel, every case-key column but kernel, variant and sweep as column=value."""
    if operation(row):
        return f"T={row.get('num_tokens') or ''} {shape_label(row)}"
    return " ".join(_generic(row, key_columns, with_tokens=True))


def brief(row, key_columns=None):
    """The short shape the Markdown tables print: the operation's name, then what tells its
    shapes apart (slots= when not random); an unknown kernel's value and its shape_label
    (key_columns as for shape)."""
    op = operation(row)
    if not op:
        return f"{name(row)} {shape_label(row, key_columns=key_columns)}"
    text = f"{op.name} {op.brief(_row(row))}"
    if (row.get("slots") or "random") != "random":
        text += f" slots={row['slots']}"
    return text
