"""hipexplore.bench.counters.manifest: a counter pass's files read as input anyone could have written.

A counting unit's worker runs the user's kernel, which can write any file its user can, and a
recorded pass folder may come from anyone: a forged manifest or backend description is one
``CounterError`` line naming the file, never a traceback, never read past its bound; every
recorded folder under data/counters still reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hipexplore.bench.counters.backends import CounterError
from hipexplore.bench.counters.counting import collect
from hipexplore.bench.counters.manifest import MAX_BYTES, manifest_json, read_description, read_manifest

RECORDED = Path(__file__).resolve().parents[3] / "data" / "counters"


def entry(**over) -> dict:
    e = {
        "kernel": "triad",
        "entry": "triad",
        "size_bytes": 1024,
        "rotating_requested": "1",
        "flush": "none",
        "rotating": 1,
        "warmup": 2,
        "count": 2,
        "input_bytes": 2048,
        "launches": [[0, 0], [0, 1]],
        "plan_note": "",
        "values": [{"dram__bytes_read.sum": 1.0}, {"dram__bytes_read.sum": None}],
    }
    return {**e, **over}


def test_a_manifest_round_trips_a_counter_that_is_not_a_number(tmp_path):
    path = tmp_path / "manifest.json"
    nan = entry(values=[{"dram__bytes_read.sum": 1.0}, {"dram__bytes_read.sum": math.nan}])
    path.write_text(manifest_json({"device": "d", "marker": "none", "stopped": False, "entries": [nan]}))
    got = read_manifest(path)["entries"][0]
    assert got["values"][0] == {"dram__bytes_read.sum": 1.0} and math.isnan(got["values"][1]["dram__bytes_read.sum"])


@pytest.mark.parametrize(
    "content, why",
    [
        (b"\x80\x81", "not UTF-8"),
        (b"cos\nsystem\n(S'touch /tmp/x'\ntR.", "not JSON"),
        (json.dumps([1, 2]).encode(), "entries are a list"),
        (json.dumps({"entries": [{"kernel": "triad"}]}).encode(), "lacks"),
        (json.dumps({"entries": [entry(count="12")]}).encode(), "count must be an integer"),
        (json.dumps({"entries": [entry(count=-1)]}).encode(), "count must be an integer"),
        (json.dumps({"entries": [entry(kernel="triad\u001b[2J")]}).encode(), "escape"),
        (json.dumps({"entries": [entry(launches=[[0, "x"]])]}).encode(), "launches must be a list"),
        (json.dumps({"entries": [entry(values=[{"m": "1"}])]}).encode(), "map counter names to numbers"),
        (b'{"entries": [{"count": NaN}]}', "not a JSON number"),
        (b"[" * 10_000 + b"]" * 10_000, "nested more than"),
    ],
)
def test_a_forged_manifest_is_one_line_naming_the_file(tmp_path, content, why):
    path = tmp_path / "manifest.json"
    path.write_bytes(content)
    with pytest.raises(CounterError, match=why) as err:
        read_manifest(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_manifest_is_read_no_further_than_its_bound(tmp_path):
    path = tmp_path / "manifest.json"
    with open(path, "wb") as fh:
        fh.truncate(MAX_BYTES + 10)  # sparse: no disk spent
    with pytest.raises(CounterError, match=f"over {MAX_BYTES} bytes"):
        read_manifest(path)
    with pytest.raises(CounterError, match="no counter manifest at"):
        read_manifest(tmp_path / "missing.json")


def test_a_forged_backend_description_is_one_line(tmp_path):
    path = tmp_path / "backend.json"
    for doc, why in (
        ({"label": "x"}, "with a name"),
        ({"name": "ncu", "metrics": "all"}, "lists of counter names"),
        ({"name": "ncu", "profiler_range": "yes"}, "true or false"),
        ({"name": "ncu\n"}, "newline"),
    ):
        path.write_text(json.dumps(doc))
        with pytest.raises(CounterError, match=why):
            read_description(path)


def test_every_recorded_pass_folder_still_reads():
    manifests = sorted(RECORDED.rglob("group-*/manifest.json"))
    assert len(manifests) > 20
    for manifest in manifests:
        assert read_manifest(manifest)["entries"]
    for desc in RECORDED.rglob("backend.json"):
        read_description(desc)
    assert collect(RECORDED / "h200" / "triad-1MiB").records
