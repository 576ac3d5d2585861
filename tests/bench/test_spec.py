"""SweepSpec: a frozen, picklable, validated description of a sweep; run(spec, device); resume
compares the recorded spec (and keeps refusing legacy files measured another way)."""
from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from hipexplore.bench import StopRule, SweepHooks, SweepSpec, run, sweep
from hipexplore.bench.io import output_paths
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError
from hipexplore.schema import SAMPLES, SUMMARY, schema_of

KIB = 1 << 10


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=128 * KIB)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("speccache"))
    return d


def test_spec_normalises_is_frozen_and_pickles() -> None:
    spec = SweepSpec("triad", "16KiB", "auto", "l2-read", stop=StopRule(iterations=4), flush_factors={"l2-read": 3.0})
    assert spec.kernels == ("triad",) and spec.sizes == (16 * KIB,) and spec.rotating == ("auto",)
    assert spec.flush == ("l2-read",) and spec.flush_factor == {"l2-read": 3.0}
    assert pickle.loads(pickle.dumps(spec)) == spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.chunk = 3  # type: ignore[misc]
    assert len(spec.configurations()) == 1 * 1 * (1 * 1 + 1)
    rec = spec.record()
    stored = json.loads(rec["sweep.spec"])
    assert stored["flush_factors"] == {"l2-read": 3.0} and stored["kernels"] == ["triad"] and stored["verify"] is True
    assert rec["sweep.stop_rule"] == repr(StopRule(iterations=4))
    assert SweepSpec.recorded_measurement(rec) == spec.measurement()
    # a recorded spec is read from sweep.spec, not from the loose keys beside it
    assert SweepSpec.recorded_measurement({**rec, "sweep.chunk": "999"})["sweep.chunk"] == str(spec.chunk)


@pytest.mark.parametrize("kw,needle", [
    ({"kernels": "nope"}, "'nope'"),
    ({"sizes": "12 apples"}, "'12 apples'"),
    ({"rotating": 0}, "rotating"),
    ({"flush": "flushy"}, "'flushy'"),
    ({"flush": ()}, "at least one"),
    ({"chunk": 0}, "chunk"),
    ({"chunk": 2.5}, "chunk"),
    ({"mem_fraction": 1.5}, "mem_fraction"),
    ({"reference_samples": 0}, "reference_samples"),
    ({"warmup_s": float("nan")}, "warmup_s"),
    ({"flush_factors": {"l2-read": -1}}, "l2-read"),
    ({"flush_factors": {"l3": 2}}, "'l3'"),
    ({"verify": "yes"}, "verify"),
    ({"stop": 5}, "StopRule"),
])
def test_bad_fields_are_config_errors(kw, needle) -> None:
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(**kw)


def test_no_reference_allows_zero_reference_samples() -> None:
    assert SweepSpec(reference=False, reference_samples=0).measurement()["sweep.reference_samples"] == "0"


def test_run_takes_a_spec_and_writes_schema_tagged_files(dev, tmp_path) -> None:
    out = tmp_path / "s.parquet"
    seen: list[dict] = []
    spec = SweepSpec("triad", "16KiB", 1, "none", stop=StopRule(iterations=4), reference=False, warmup_s=0, units=1)
    res = run(spec, dev, out=out, hooks=SweepHooks(on_result=seen.append), progress=False)
    assert len(res.summary) == 1 and len(seen) == 1 and len(res.samples) == 4
    samples, summary, meta = output_paths(out)
    assert schema_of(samples) == SAMPLES and schema_of(summary) == SUMMARY
    assert SweepSpec.recorded_measurement(json.loads(meta.read_text())) == spec.measurement()
    with pytest.raises(ConfigError, match="SweepSpec"):
        run({"kernels": "triad"}, dev)  # type: ignore[arg-type]


def test_resume_grows_but_refuses_another_measurement(dev, tmp_path) -> None:
    out = tmp_path / "r.parquet"
    kw = dict(device=dev, iterations=4, reference=False, out=out, progress=False, warmup_s=0)
    sweep("triad", "16KiB", 1, "none", **kw)
    grown = sweep("triad", ["16KiB", "32KiB"], [1, 2], "none", **kw)  # more sizes and rotating counts: resumes
    assert len(grown.summary) == 4
    with pytest.raises(ConfigError, match=r"flush\.factor\.l2-read"):
        sweep("triad", "16KiB", 1, "l2-read", flush_factor={"l2-read": 3.0}, **kw)
    with pytest.raises(ConfigError, match=r"sweep\.chunk"):
        sweep("triad", "16KiB", 1, "none", chunk=7, **kw)


def test_resume_of_a_legacy_file_without_a_recorded_spec(dev, tmp_path) -> None:
    out = tmp_path / "legacy.parquet"
    kw = dict(device=dev, iterations=4, reference=False, out=out, progress=False, warmup_s=0)
    sweep("triad", "16KiB", 1, "none", **kw)
    meta_path = output_paths(out)[2]
    meta = json.loads(meta_path.read_text())
    del meta["sweep.spec"]  # what files written before SweepSpec hold: the loose sweep.* keys
    meta_path.write_text(json.dumps(meta))
    assert len(sweep("triad", "16KiB", [1, 2], "none", **kw).summary) == 2
    meta = json.loads(meta_path.read_text())
    del meta["sweep.spec"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match=r"sweep\.stop_rule"):
        sweep("triad", "16KiB", 1, "none", **{**kw, "iterations": 8})
