"""Typed run metadata (bench.info): one reader and one writer of the flat keys files carry, which
read every recorded file in data/ back unchanged."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

import hipexplore as hx
from hipexplore.bench.info import ClusterInfo, RunInfo, UnitsInfo

DATA = Path(__file__).resolve().parents[2] / "data"


def _recorded() -> list[dict[str, str]]:
    out = [json.loads(p.read_text()) for p in DATA.rglob("*.meta.json")]
    for p in DATA.rglob("*.parquet"):
        raw = (pq.read_schema(p).metadata or {}).get(b"hipexplore")
        if raw:
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    return [{str(k): str(v) for k, v in m.items()} for m in out if isinstance(m, dict)]


def test_every_recorded_file_reads_and_writes_back_unchanged():
    recorded = _recorded()
    assert len(recorded) > 100  # the sweeps, replays and cluster runs under data/
    for meta in recorded:
        assert RunInfo.from_metadata(meta).to_metadata() == meta


def test_a_sweep_in_units_reads_as_typed_fields(tmp_path):
    res = hx.sweep("triad", ["16KiB"], [1], ["none", "l2-read"], device="host", iterations=6, units=2, reference_samples=4,
                   warmup_s=0.0, progress=False, out=tmp_path / "i.parquet")
    info = res.info
    assert info.run_id == res.metadata["run_id"] and info.cluster is None
    assert (info.units.planned, info.units.done, info.units.location) == (2, 2, "in-process")
    assert len(info.units.pad_bytes) == 2 and info.units.pad_bytes[0] == 0
    assert set(info.measured.flush_bytes) == {"none", "l2-read"} and info.measured.flush_bytes["l2-read"] > 0
    assert info.measured.verify and info.identities.keys() == {"triad"}
    assert info.spec["sweep.units"] == "2" and "sweep.spec" in info.spec
    on_disk = json.loads((tmp_path / "i.meta.json").read_text())
    assert RunInfo.from_metadata(on_disk).to_metadata() == on_disk == res.metadata


def test_cluster_lists_are_lists_in_code_and_json_on_disk():
    c = ClusterInfo("host", "tcp://127.0.0.1:1", "", ["w1"], [{"group": "g", "attempts": 2}], [], "")
    flat = c.entries()
    assert flat["cluster.reruns"] == '[{"group": "g", "attempts": 2}]' and flat["cluster.failed"] == "[]"
    back = RunInfo.from_metadata(flat).cluster
    assert back == c and back.shown()["reruns"] == flat["cluster.reruns"]
    assert UnitsInfo().entries() == {}  # a one-unit sweep records no unit keys
