"""Typed run metadata (bench.info): one reader and one writer of the flat keys files carry, which
read every recorded file in data/ back unchanged."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from pathlib import Path

import pyarrow.parquet as pq

import hipexplore as hx
from hipexplore.bench import info
from hipexplore.bench.info import ClusterInfo, CountersInfo, ResolutionInfo, RunInfo, UnitsInfo

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


# -- the registry of keys, and files written by the previous revision -----------------------------

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
    assert dataclasses.asdict(got.measured) == then["measured"]
    assert dataclasses.asdict(got.units) == {
        **then["units"],
        "inputs": {int(k): v for k, v in then["units"]["inputs"].items()},
    }
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


def test_a_new_run_writes_the_keys_the_previous_revision_wrote_each_declared_once(tmp_path):
    """The same sweep as the golden one, now: the same keys (numbers aside), each declared in the
    registry (a key or a family); the typed fields write the same text the code wrote before."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CountersSkipped: the host has no counters
        res = hx.sweep(
            ["triad", "copy"],
            ["16KiB"],
            [1],
            ["none", "l2-read"],
            device="host",
            interleave=True,
            progress=False,
            reference_samples=4,
            iterations=6,
            resolution=0.45,
            resolution_budget=0.5,
            counters=True,
            warmup_s=0.0,
            out=tmp_path / "n.parquet",
        )
    shape = lambda keys: {re.sub(r"\d+", "N", k) for k in keys}  # noqa: E731
    assert shape(res.metadata) == shape(json.loads(GOLDEN.with_suffix(".meta.json").read_text()))
    undeclared = [k for k in res.metadata if k not in info.KEYS and not any(f.owns(k) for f in info.FAMILIES.values())]
    assert undeclared == []
    assert res.info.to_metadata() == res.metadata and res.info.resolution.asked == 0.45


def test_a_key_parses_and_formats_its_values_and_a_family_names_its_members():
    assert info.UNITS_RESOLUTION.entry(0.0001) == {"units.resolution": "0.01%"}
    assert info.UNITS_RESOLUTION.of({"units.resolution": "1.00%"}) == 0.01
    assert info.UNITS_RESOLUTION.of({"units.resolution": "lots"}, -1) == -1 and info.DEVICE_NAME.of({}, "x") == "x"
    assert info.COUNTERS_WALL_S.entry(2.1568) == {"counters.wall_s": "2.157"}
    assert info.SWEEP_UNIT_PAD_BYTES.of({"sweep.unit_pad_bytes": "0,4096"}) == [0, 4096]
    assert info.FLUSH_BYTES.key("l2-read") == "flush.l2-read.bytes" and info.FLUSH_BYTES.of(
        {"flush.none.bytes": "0"}
    ) == {"none": "0"}
    assert not info.FLUSH_BYTES.owns("flush.factor.l2-read") or info.FLUSH_FACTOR.owns("flush.factor.l2-read")
    assert all(k.description for k in info.KEYS.values()) and all(f.description for f in info.FAMILIES.values())
    # text a key would not write that way stays as it was (other), so the file still writes back the same
    odd = {"counters.wall_s": "2.1", "units.resolution": "1%"}
    back = RunInfo.from_metadata(odd)
    assert back.other == odd and back.to_metadata() == odd


#: the dotted metadata keys code outside bench/info.py may still spell out (issue 48's done-when: at most 10)
_DOTTED = re.compile(
    r"[\"'](units|counters|compile|device|host|run|sweep|rotating|flush|timer|provenance|git|calibration"
    r"|compiler_cache|resolution)\.[a-z_]+[\"']"
)


def test_metadata_keys_are_spelled_in_bench_info_only():
    package = Path(hx.__file__).resolve().parent
    found = [
        f"{p.relative_to(package)}:{n}: {m.group(0)}"
        for p in sorted(package.rglob("*.py"))
        if p != package / "bench" / "info.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        for m in _DOTTED.finditer(line)
    ]
    assert len(found) <= 10, (
        "metadata keys belong in hipexplore/bench/info.py (name them by their constant):\n" + "\n".join(found)
    )
