"""A sweep's metadata, typed (bench.runinfo): ``RunInfo``, the one reader and the one writer of the flat
keys files carry, which reads every recorded file in data/ and the previous revision's files back
unchanged; a sweep's own metadata read as typed fields."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pyarrow.parquet as pq

import hipexplore as hx
from hipexplore.bench.measured import MeasuredInfo
from hipexplore.bench.runinfo import ClusterInfo, CountersInfo, ResolutionInfo, RunInfo, UnitsInfo

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
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none", "l2-read"],
        device="host",
        iterations=6,
        units=2,
        reference_samples=4,
        warmup_s=0.0,
        progress=False,
        out=tmp_path / "i.parquet",
    )
    info = res.info
    assert info.run_id == res.metadata["run_id"] and info.cluster is None
    assert (info.units.planned, info.units.done, info.units.location) == (2, 2, "in-process")
    assert len(info.units.pad_bytes) == 2 and info.units.pad_bytes[0] == 0
    assert set(info.measured.flush_bytes) == {"none", "l2-read"} and info.measured.flush_bytes["l2-read"] > 0
    assert info.measured.verify == {"triad.16384": 0.0} and info.identities.keys() == {"triad"}
    assert info.measured.llc_bytes > 0 and isinstance(info.measured.telemetry_max_clock_mhz, float)
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


# -- files written by the previous revision -----------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "metadata"
GOLDEN = FIXTURES / "main-62221f9"  # a host sweep in units with --resolution and --counters, written by main 62221f9


def test_a_run_written_by_the_previous_revision_reads_back_identically():
    """Each of its files (samples, units, summary, meta.json) reads as the same flat metadata, which
    writes back byte for byte; the typed fields are what that revision's reader gave, and the keys it
    left untyped (counters, resolution) are typed now."""
    from hipexplore.schema import METADATA_KEY

    raw = json.loads(GOLDEN.with_suffix(".meta.json").read_text())
    embedded = (pq.read_schema(GOLDEN.with_suffix(".summary.parquet")).metadata or {})[METADATA_KEY.encode()]
    assert json.dumps(RunInfo.from_metadata(raw).to_metadata(), sort_keys=True).encode() == embedded
    for suffix in (".parquet", ".units.parquet", ".summary.parquet", ".meta.json"):
        got = RunInfo.read(f"{GOLDEN}{suffix}")
        assert got.to_metadata() == raw, suffix
    then = json.loads(GOLDEN.with_suffix(".typed.json").read_text())
    assert (got.run_id, got.timing_method, got.provenance, got.code, got.identities, got.spec, got.cluster) == (
        then["run_id"],
        then["timing_method"],
        then["provenance"],
        then["code"],
        then["identities"],
        then["spec"],
        None,
    )
    m = then["measured"]  # that revision's fields, as text: the typed fields write the same text
    assert got.measured.entries() == {
        k: v
        for k, v in {
            "telemetry.source": m["telemetry_source"],
            "telemetry.max_clock_mhz": m["telemetry_max_clock_mhz"],
            **{f"flush.{f}.bytes": str(n) for f, n in m["flush_bytes"].items()},
            "device.llc_bytes": m["llc_bytes"],
            "device.llc_source": m["llc_source"],
            "warmup.clock": m["warmup_clock"],
            **{f"verify.{k}": v for k, v in m["verify"].items()},
            **{f"floor.{f}.median_s": v for f, v in m["floors"].items()},
            **{f"interleave.pool.{s}": v for s, v in m["pools"].items()},
            "worker.pad_bytes": m["worker_pad_bytes"],
            **{f"inputs.unit.{k}": v for k, v in then["units"]["inputs"].items()},
        }.items()
        if v != ""
    }
    assert (got.measured.llc_bytes, got.measured.verify, got.measured.pools, got.measured.worker_pad_bytes) == (
        503316480,
        {"copy.16384": 0.0, "triad.16384": 0.0},
        {16384: False},
        None,
    )
    assert math.isnan(got.measured.telemetry_max_clock_mhz) and got.measured.flush_bytes["l2-read"] == 2013265920
    assert dataclasses.asdict(got.units) == {k: v for k, v in then["units"].items() if k != "inputs"}
    typed_now = {"counters.status", "units.resolution", "units.resolution_outcome"}
    assert got.other == {k: v for k, v in then["other"].items() if k not in typed_now}
    assert got.counters == CountersInfo(raw["counters.status"]) and got.counters.missing
    assert got.resolution == ResolutionInfo(0.45, raw["units.resolution_outcome"])
    assert got.resolution.shown() == "±" + raw["units.resolution"] and got.device_kind == "host"


def test_a_counted_run_on_the_h200_reads_its_counters_typed():
    got = RunInfo.read(DATA / "counters" / "h200-cupti" / "triad-counted.summary.parquet")
    assert (
        got.counters.backend.startswith("CUPTI") and isinstance(got.counters.wall_s, float) and got.counters.wall_s > 0
    )
    assert got.counters.status.startswith("counted ") and not got.counters.missing
    assert got.to_metadata() == json.loads((DATA / "counters" / "h200-cupti" / "triad-counted.meta.json").read_text())


def test_a_run_info_reads_a_mapping_and_carries_what_the_units_report():
    """``RunInfo.of``: a file's flat metadata, read back, is read as a ``RunInfo`` (written back the
    same); units' reports merge into ``measured`` and write the registry's text."""
    flat = {"run_id": "r1", "sweep.units": "2", "unknown.key": "x"}
    info = RunInfo.of(flat)
    assert RunInfo.of(info) is info and info.to_metadata() == flat and info.other == {"unknown.key": "x"}
    info.measured.merge(MeasuredInfo(floors={"none": 2.6e-06}, worker_pad_bytes=4096))
    info.measured.merge(MeasuredInfo(floors={"l2-read": 3e-06}, inputs={1: "drawn 2, mapped 0"}))
    info.units = UnitsInfo(2, 1, "worker", [0, 4096])
    info.counters = CountersInfo.skipped("host: no hardware counters")
    info.resolution = ResolutionInfo(0.01, "reached")
    flat2 = info.to_metadata()
    assert flat2["floor.none.median_s"] == "2.6e-06" and flat2["floor.l2-read.median_s"] == "3e-06"
    assert flat2["worker.pad_bytes"] == "4096" and flat2["inputs.unit.1"] == "drawn 2, mapped 0"
    assert flat2["sweep.unit_pad_bytes"] == "0,4096" and flat2["units.resolution"] == "1.00%"
    assert flat2["counters.status"] == "no counters: host: no hardware counters"
    assert RunInfo.from_metadata(flat2) == info
