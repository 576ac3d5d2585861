"""``hipexplore.bench.wire_tables``: a result's samples as raw arrays and back. Every schema column
has its declared type; a table round-trips value for value (a text column the same for every row
travels once); its declared shape must be exactly the schema's, its rows bounded, its booleans 0 or 1."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench.wire_tables import (
    BOOL,
    CLUSTER_SAMPLE_TYPES,
    ITEMSIZE,
    SAMPLE_TYPES,
    TEXT,
    UNTYPED,
    decode_table,
    encode_table,
    row_bytes,
    samples_of,
)
from hipexplore.bench.wire_values import WireError
from hipexplore.schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, Configuration

from .made import samples

C = Configuration("t", 16384, "1", "none")


def _round(n: int, types=SAMPLE_TYPES, cluster: bool = False, max_rows: int = 1 << 20):
    s = samples(C, "run0001", n, cluster)
    desc, body = encode_table(s, types)
    cols, rows, end = decode_table(desc, memoryview(b"".join(body)), 0, types, "a table", max_rows)
    return s, desc, body, samples_of(cols, types), rows, end


def test_every_column_of_the_schema_has_its_type():
    assert list(SAMPLE_TYPES) == list(SAMPLE_COLUMNS) and UNTYPED not in SAMPLE_TYPES.values()
    assert list(CLUSTER_SAMPLE_TYPES) == [*SAMPLE_COLUMNS, *CLUSTER_COLUMNS]
    assert all(CLUSTER_SAMPLE_TYPES[c] == TEXT for c in CLUSTER_COLUMNS)
    assert row_bytes(SAMPLE_TYPES) == sum(ITEMSIZE[t] for t in SAMPLE_TYPES.values() if t != TEXT)


@pytest.mark.parametrize("cluster", [False, True])
def test_a_table_round_trips_value_for_value(cluster):
    types = CLUSTER_SAMPLE_TYPES if cluster else SAMPLE_TYPES
    s, desc, body, back, rows, end = _round(5, types, cluster)
    assert rows == 5 and end == sum(len(b) for b in body) == 5 * row_bytes(types)
    assert desc["text"]["kernel"] == "t"  # the same for every row: one value in the header
    for c in types:
        assert back[c].tolist() == s[c].tolist(), c
    assert back["throttled"].dtype == bool and back["chunk"].dtype == np.int64


def test_a_declared_shape_other_than_the_schemas_is_refused():
    _s, desc, body, *_ = _round(3)
    blob = memoryview(b"".join(body))
    with pytest.raises(WireError, match="at most 2|rows must be an integer in"):
        decode_table(desc, blob, 0, SAMPLE_TYPES, "a table", 2)  # more rows than the reader's bound
    wrong = {**desc, "text": {**desc["text"], "kernel": ["a", "b"]}}
    with pytest.raises(WireError, match="column kernel has 2 values for 3 rows"):
        decode_table(wrong, blob, 0, SAMPLE_TYPES, "a table", 100)
    with pytest.raises(WireError, match="needs .* bytes"):
        decode_table(desc, blob[:-1], 0, SAMPLE_TYPES, "a table", 100)
    first_bool = 3 * sum(ITEMSIZE[t] for c, t in SAMPLE_TYPES.items() if t not in (TEXT, BOOL))
    bad = bytearray(blob)
    bad[first_bool] = 2
    with pytest.raises(WireError, match="neither 0 nor 1"):
        decode_table(desc, memoryview(bytes(bad)), 0, SAMPLE_TYPES, "a table", 100)
