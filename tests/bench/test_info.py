"""The registry of metadata keys (bench.info): every key a sweep writes declared once, with its type and
format; typed families read back only the text they write; the dotted key strings stay here."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import hipexplore as hx
from hipexplore.bench import info
from hipexplore.bench.runinfo import RunInfo

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "metadata" / "main-62221f9"


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
    ) == {"none": 0}
    assert not info.FLUSH_BYTES.owns("flush.factor.l2-read") or info.FLUSH_FACTOR.owns("flush.factor.l2-read")
    assert all(k.description for k in info.KEYS.values()) and all(f.description for f in info.FAMILIES.values())
    # text a key would not write that way stays as it was (other), so the file still writes back the same
    odd = {"counters.wall_s": "2.1", "units.resolution": "1%"}
    back = RunInfo.from_metadata(odd)
    assert back.other == odd and back.to_metadata() == odd


def test_a_typed_family_takes_only_the_text_it_writes():
    """A family's members are parsed (a floor in seconds, a pool's word, a unit's number) and taken out
    of a file's metadata only where writing the value back gives the same text: the rest stays, so the
    file is written back as it was."""
    meta = {
        "floor.none.median_s": "2.6e-06",
        "floor.l2-read.median_s": "2.60e-06",  # not how a floor is written: stays
        "interleave.pool.16384": "shared",
        "interleave.pool.016": "shared",  # not how a size is written: stays
        "verify.triad.16384": "rel_l2_error=1.72e-08",
        "verify.copy.16384": "1e-9",  # no rel_l2_error=: stays
        "flush.a.b.bytes": "1",  # a flush mode has no dot: no member
        "other": "x",
    }
    assert info.FLOOR.take(meta) == {"none": 2.6e-06} and info.POOL.take(meta) == {16384: True}
    assert info.VERIFY.take(meta) == {"triad.16384": 1.72e-08} and info.FLUSH_BYTES.take(meta) == {}
    assert set(meta) == {
        "floor.l2-read.median_s",
        "interleave.pool.016",
        "verify.copy.16384",
        "flush.a.b.bytes",
        "other",
    }
    assert info.VERIFY.entries({"k.1": math.nan, "k.2": 0.0}) == {
        "verify.k.1": "rel_l2_error=nan",
        "verify.k.2": "rel_l2_error=0",
    }
    assert info.POOL.entries({4096: False}) == {"interleave.pool.4096": "own sets"}
    assert info.IDENTITY.of({"sweep.kernels": "triad", "identity.triad": "c36c"}) == {"triad": "c36c"}
    assert info.DEVICE_LLC_BYTES.exact("503316480") == 503316480
    for text in ("5e8", "", "0x10"):
        try:
            info.DEVICE_LLC_BYTES.exact(text)
        except ValueError as exc:
            assert "device.llc_bytes" in str(exc)
        else:
            raise AssertionError(text)


def test_a_specs_entries_are_what_resume_compares():
    """``spec_entries``: the readable keys and the whole record as JSON; ``measurement_entries`` of an
    older record (passes, no leads or trails) reads as a new one would."""
    record = {
        "kernels": ["triad"],
        "sizes": [4096],
        "rotating": [1, "auto"],
        "flush": ["none"],
        "timers": ["events"],
        "chunk": 4,
        "mem_fraction": 0.5,
        "reference": False,
        "reference_samples": 48,
        "flush_end_event": False,
        "flush_factors": {"l2-read": 3.0},
        "passes": 3,
    }
    got = info.spec_entries(record, "StopRule()")
    assert got[info.SWEEP_ROTATING.name] == "1,auto" and json.loads(got[info.SWEEP_SPEC.name]) == record
    assert got[info.SWEEP_UNITS.name] == "3" and got[info.SWEEP_REFERENCE_SAMPLES.name] == "0"
    assert got[info.FLUSH_FACTOR.key("l2-read")] == "3.0" and got[info.SWEEP_INTERLEAVE.name] == "no"
    assert (got[info.SWEEP_CHUNK_LEAD.name], got[info.SWEEP_CHUNK_TRAIL.name]) == ("0", "0")
    loose = info.recorded_measurement_keys({info.SWEEP_CHUNK.name: "4", "device.name": "x"})
    assert loose == {info.SWEEP_CHUNK_LEAD.name: "0", info.SWEEP_CHUNK_TRAIL.name: "0", info.SWEEP_CHUNK.name: "4"}


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
