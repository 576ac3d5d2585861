"""hipexplore.compile.events: one row per cache lookup, so every claim about the cache is a sum over
recorded lookups. The frame's columns and dtypes are the contract (also when empty); the rows are
those of real lookups through a cache with the host compiler (compiled, memory hit, disk hit,
failed), and ``seconds_saved`` is signed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.events import EVENT_COLUMNS, HIT_OUTCOMES, OUTCOMES, CacheEvent, events_frame
from hipexplore.errors import CompileError, ConfigError

DTYPES = {
    "seq": "int64",
    "time": "float64",
    "lookup_seconds": "float64",
    "compile_seconds": "float64",
    "seconds_saved": "float64",
    "bytes": "int64",
}


def event(outcome: str, **kw) -> CacheEvent:
    base = dict(
        seq=0,
        time=1.0,
        digest="ab" * 8,
        kernel="k",
        compiler="host",
        target="host",
        mode="",
        outcome=outcome,
        lookup_seconds=0.5,
        compile_seconds=0.2,
        seconds_saved=-0.3,
        bytes=10,
    )
    return CacheEvent(**{**base, **kw})


@pytest.mark.timeout(30)
def test_an_event_outcome_outside_the_contract_is_refused():
    assert set(HIT_OUTCOMES) < set(OUTCOMES)
    for outcome in OUTCOMES:
        assert event(outcome).outcome == outcome
    with pytest.raises(ConfigError, match=r"^cache event outcome must be one of \('memory-hit', .*\); got 'hit'$"):
        event("hit")


@pytest.mark.timeout(30)
def test_the_frame_has_exactly_the_columns_and_dtypes_even_empty():
    for frame in (events_frame([]), events_frame(iter([event("disk-hit"), event("failed", error="boom")]))):
        assert list(frame.columns) == list(EVENT_COLUMNS)
        assert {c: str(frame[c].dtype) for c in DTYPES} == DTYPES
        assert all(str(frame[c].dtype) == "object" for c in EVENT_COLUMNS if c not in DTYPES)
    frame = events_frame([event("disk-hit"), event("failed", error="boom")])
    assert frame["seconds_saved"].tolist() == [-0.3, -0.3]  # kept signed: a slow hit of a fast compile
    assert frame["error"].tolist() == ["", "boom"]


@pytest.mark.timeout(300)
def test_real_lookups_are_rows_in_order(tmp_path):
    from conftest import require_compiler

    host = require_compiler("host")
    cache = CompileCache(disk_dir=tmp_path / "c")
    good = CompileRequest(Source("a.c", "int a(void) { return 1; }\n"), "host", "host", label="good")
    cache.get_or_compile(good, host)
    cache.get_or_compile(good, host)
    with pytest.raises(CompileError):
        cache.get_or_compile(CompileRequest(Source("b.c", "int b( {\n"), "host", "host", label="bad"), host)
    again = CompileCache(disk_dir=tmp_path / "c")  # another cache object on the same folder: a disk hit
    again.get_or_compile(good, host)
    rows = cache.events()
    assert list(rows["outcome"]) == ["compiled", "memory-hit", "failed"] and list(rows["seq"]) == [0, 1, 2]
    assert list(rows["kernel"]) == ["good", "good", "bad"]
    first, hit = rows.iloc[0], rows.iloc[1]
    assert first["compile_seconds"] > 0 and first["seconds_saved"] == 0 and first["bytes"] > 0
    assert hit["compile_seconds"] == first["compile_seconds"]  # the original compile's time on a hit
    assert hit["seconds_saved"] == pytest.approx(hit["compile_seconds"] - hit["lookup_seconds"])
    assert rows.iloc[2]["error"] and rows.iloc[2]["seconds_saved"] == 0
    disk = again.events().iloc[0]
    assert disk["outcome"] == "disk-hit" and disk["compile_seconds"] == pytest.approx(first["compile_seconds"])


@pytest.mark.timeout(120)
def test_events_need_no_pandas_until_a_frame_is_asked_for():
    code = (
        "import sys; import hipexplore.compile.events as e; "
        "e.CacheEvent(0, 0.0, 'd', 'k', 'host', 'host', '', 'compiled', 0.0, 0.0, 0.0, 0); "
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100, check=True).stdout
    assert out.strip() == "False"
