"""A result's samples on the wire: the schema's columns, each of a declared type, as raw arrays.

Why typed here: a ``bench.wire`` frame's body is nothing but the numeric columns of the tables its
header declares, raw little-endian arrays; the reader must know, for every column of
``schema.SAMPLE_COLUMNS`` (and a cluster unit's ``CLUSTER_COLUMNS``), whether it is text (in the
header, one value for every row or a list), a 64-bit integer, a 64-bit float or a boolean. A table's
columns, their order and dtypes must be exactly the schema's (``SAMPLE_TYPES``), its row count
bounded, the body exactly as long as the arrays it declares, booleans 0 or 1. A column of the schema
that none of the lists below names is ``UNTYPED`` (a test fails on it: give it its type).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, Configuration
from .outcome import Samples
from .wire_values import WireError, clean, int_of, list_of, object_of, text_of
from ..untrusted import shown

TEXT, INT, FLOAT, BOOL = "text", "<i8", "<f8", "|b1"
ITEMSIZE = {INT: 8, FLOAT: 8, BOOL: 1}
_INTS = (
    "size_bytes",
    "footprint_bytes",
    "rotating",
    "iteration",
    "pass_index",
    "chunk",
    "position",
    "lead",
    "buffer_set",
)
#: the configuration key's columns are text but for its size (``size_bytes``, above)
_TEXTS = ("run_id", "device", "device_name", *(c for c in Configuration.COLUMNS if c != "size_bytes"), *CLUSTER_COLUMNS)
_BOOLS = ("throttled", "dropped")
_FLOATS = ("time_s", "flush_s", "gap_s", "clock_mhz", "temp_c", "power_w", "host_load", "host_busy", "host_steal")
#: a column of the schema none of the lists above names (a test fails on it: give it its type)
UNTYPED = "untyped"


def _types(columns: Sequence[str]) -> dict[str, str]:
    return {
        c: TEXT if c in _TEXTS else INT if c in _INTS else BOOL if c in _BOOLS else FLOAT if c in _FLOATS else UNTYPED
        for c in columns
    }


#: the declared type of every column of a sample frame (a unit's, and a cluster unit's); a summary's
#: columns are the fields of a result's parts (``bench.outcome``), typed there
SAMPLE_TYPES = _types(SAMPLE_COLUMNS)
CLUSTER_SAMPLE_TYPES = _types([*SAMPLE_COLUMNS, *CLUSTER_COLUMNS])


def row_bytes(types: Mapping[str, str]) -> int:
    """The body bytes one row of a table of ``types`` takes (its text columns travel in the header)."""
    return sum(ITEMSIZE.get(t, 0) for t in types.values())


def encode_table(columns: Samples, types: Mapping[str, str]) -> tuple[dict[str, Any], list[bytes]]:
    """A result's samples as (header description, body arrays) of ``types``' columns."""
    import numpy as np

    n = columns.n
    text: dict[str, Any] = {}
    arrays, body = [], []
    for c, t in types.items():
        col = columns[c]
        if t == TEXT:
            values = [clean(v) for v in col.tolist()]
            text[c] = values[0] if n and all(v == values[0] for v in values) else values
        else:
            arrays.append([c, t])
            body.append(
                np.ascontiguousarray(
                    np.asarray(col, dtype=np.dtype(t).newbyteorder("<") if t != BOOL else bool)
                ).tobytes()
            )
    return {"rows": n, "text": text, "arrays": arrays}, body


def decode_table(
    desc: Any, body: memoryview, offset: int, types: Mapping[str, str], what: str, max_rows: int
) -> tuple[dict[str, Any], int, int]:
    """(columns, rows, new offset) of a table ``encode_table`` described, checked against ``types``."""
    desc = object_of(desc, what, ("rows", "text", "arrays"))
    n = int_of(desc["rows"], f"{what} rows", 0, max_rows)
    texts = [c for c, t in types.items() if t == TEXT]
    want_arrays = [[c, t] for c, t in types.items() if t != TEXT]
    if not isinstance(desc["text"], dict) or sorted(desc["text"]) != sorted(texts):
        given = sorted(map(str, desc["text"])) if isinstance(desc["text"], dict) else desc["text"]
        raise WireError(f"{what} has text columns {shown(str(given), 200)}; expected {texts}")
    if desc["arrays"] != want_arrays:
        raise WireError(f"{what} declares arrays {shown(str(desc['arrays']), 200)}; expected {want_arrays}")
    out: dict[str, Any] = {c: _text_column(desc["text"][c], n, f"{what} column {c}", max_rows) for c in texts}
    for c, t in want_arrays:
        out[c], offset = _array(body, offset, n, t, f"{what} column {c}")
    return out, n, offset


def _text_column(v: Any, n: int, what: str, max_rows: int) -> list[str]:
    """A text column: one value for every row, or a list of exactly ``n``."""
    if isinstance(v, str):
        return [text_of(v, what)] * n
    values = list_of(v, what, max_rows)
    if len(values) != n:
        raise WireError(f"{what} has {len(values)} values for {n} rows")
    return [text_of(x, what) for x in values]


def _array(body: memoryview, offset: int, n: int, t: str, what: str) -> tuple[Any, int]:
    """(the ``n`` values of type ``t`` at ``offset`` of ``body``, the offset after them)."""
    import numpy as np

    size = n * ITEMSIZE[t]
    if offset + size > len(body):
        raise WireError(f"{what} needs {size} bytes at {offset}; the body has {len(body)}")
    arr = np.frombuffer(body, dtype=np.dtype(t), count=n, offset=offset).copy()
    if t == BOOL and n and int(arr.view(np.uint8).max()) > 1:
        raise WireError(f"{what} holds a boolean that is neither 0 nor 1")
    return arr.astype(np.int64 if t == INT else np.float64 if t == FLOAT else bool), offset + size


def samples_of(columns: dict[str, Any], types: Mapping[str, str]) -> Samples:
    """The decoded columns as a result's ``Samples`` (text as object arrays)."""
    import numpy as np

    return Samples(
        {
            c: np.fromiter(columns[c], dtype=object, count=len(columns[c])) if t == TEXT else columns[c]
            for c, t in types.items()
        }
    )


__all__ = [
    "BOOL",
    "CLUSTER_SAMPLE_TYPES",
    "FLOAT",
    "INT",
    "ITEMSIZE",
    "SAMPLE_TYPES",
    "TEXT",
    "UNTYPED",
    "decode_table",
    "encode_table",
    "row_bytes",
    "samples_of",
]
