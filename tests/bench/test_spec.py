"""SweepSpec: a frozen, picklable, validated description of a sweep; run(spec, device); resume
compares the recorded spec (and keeps refusing legacy files measured another way)."""

from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pytest

from hipexplore.bench import RunOptions, StopRule, SweepHooks, SweepSpec, run, sweep
from hipexplore.bench.io import output_paths
from hipexplore.bench.spec_checks import MAX_PASSES
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


@pytest.mark.parametrize(
    "kw,needle",
    [
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
    ],
)
def test_bad_fields_are_config_errors(kw, needle) -> None:
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(**kw)


def test_no_reference_allows_zero_reference_samples() -> None:
    assert SweepSpec(reference=False, reference_samples=0).measurement()["sweep.reference_samples"] == "0"


def test_run_takes_a_spec_and_writes_schema_tagged_files(dev, tmp_path) -> None:
    out = tmp_path / "s.parquet"
    seen: list[dict] = []
    spec = SweepSpec("triad", "16KiB", 1, "none", stop=StopRule(iterations=4), reference=False, warmup_s=0, units=1)
    res = run(spec, dev, RunOptions(out=out, hooks=SweepHooks(on_result=seen.append), progress=False))
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


def _every_field_set() -> SweepSpec:
    return SweepSpec(
        kernels=("triad", "copy"),
        sizes=("16KiB", 8192),
        rotating=(2, "auto"),
        flush=("none", "l2-read"),
        stop=StopRule(iterations=6),
        reference=False,
        reference_samples=5,
        mem_fraction=0.25,
        chunk=3,
        warmup_s=0.5,
        verify=False,
        flush_factors={"l2-read": 2.5},
        flush_end_event=True,
        timers=("events", "events"),
        reference_parts=4,
        throttle_threshold=0.5,
        drop_throttled=False,
        clock_warmup_s=1.5,
        interleave=True,
        interleave_seed=9,
        units=3,
        floor=True,
        chunk_lead=2,
        chunk_trail=0,
        counters="ncu",
        resolution=0.01,
        resolution_budget=3.0,
    )


def test_the_record_holds_every_field_under_its_own_name():
    """Why: ``sweep.spec`` is what resume (and another process) rebuilds the spec from: a field
    stored under another key, or another field's value, is a spec that reads back different."""
    spec = _every_field_set()
    assert spec.as_record() == {
        "kernels": ["triad", "copy"],
        "sizes": [16384, 8192],
        "rotating": [2, "auto"],
        "flush": ["none", "l2-read"],
        "stop": dataclasses.asdict(StopRule(iterations=6)),
        "reference": False,
        "reference_samples": 5,
        "mem_fraction": 0.25,
        "chunk": 3,
        "chunk_lead": 2,
        "chunk_trail": 0,
        "warmup_s": 0.5,
        "verify": False,
        "flush_factors": {"l2-read": 2.5},
        "flush_end_event": True,
        "timers": ["events"],
        "reference_parts": 4,
        "throttle_threshold": 0.5,
        "drop_throttled": False,
        "clock_warmup_s": 1.5,
        "interleave": True,
        "interleave_seed": 9,
        "units": 3,
        "floor": True,
        "counters": "ncu",
        "resolution": 0.01,
        "resolution_budget": 3.0,
    }
    assert SweepSpec(**{**spec.as_record(), "stop": StopRule(**spec.as_record()["stop"])}) == spec
    rec = spec.record()
    assert {k: rec[k] for k in ("sweep.kernels", "sweep.sizes", "sweep.rotating", "sweep.flush", "sweep.timers")} == {
        "sweep.kernels": "triad,copy",
        "sweep.sizes": "16384,8192",
        "sweep.rotating": "2,auto",
        "sweep.flush": "none,l2-read",
        "sweep.timers": "events",
    }
    assert len(spec.configurations()) == 2 * 2 * (2 * 2 + 0) * 1
    assert len(SweepSpec(reference=True, timers=("events",)).configurations()) == 1 * 1 * (1 + 1)


def test_the_measurement_of_a_record_names_each_setting():
    """Why: these strings are compared between a recorded sweep and a new one; the defaults are
    what records written before a field existed mean (one reference part, no throttle, one pass)."""
    assert _every_field_set().measurement() == {
        "sweep.stop_rule": repr(StopRule(iterations=6)),
        "sweep.chunk": "3",
        "sweep.chunk_lead": "2",
        "sweep.chunk_trail": "0",
        "sweep.mem_fraction": "0.25",
        "sweep.reference_samples": "0",
        "sweep.flush_end_event": "True",
        "sweep.reference_parts": "4",
        "sweep.throttle": "0.5 drop=False",
        "sweep.interleave": "seed=9",
        "sweep.units": "3",
        "flush.factor.l2-read": "2.5",
    }
    old = {
        "stop": dataclasses.asdict(StopRule()),
        "chunk": 10,
        "mem_fraction": 0.5,
        "reference": True,
        "reference_samples": 48,
        "flush_end_event": False,
        "flush_factors": {},
    }
    assert SweepSpec.recorded_measurement({"sweep.spec": json.dumps(old)}) == {  # a record from before the later fields
        "sweep.stop_rule": repr(StopRule()),
        "sweep.chunk": "10",
        "sweep.chunk_lead": "0",
        "sweep.chunk_trail": "0",
        "sweep.mem_fraction": "0.5",
        "sweep.reference_samples": "48",
        "sweep.flush_end_event": "False",
        "sweep.reference_parts": "1",
        "sweep.throttle": "0.0 drop=False",
        "sweep.interleave": "no",
        "sweep.units": "1",
    }


def test_an_unreadable_recorded_spec_falls_back_to_the_loose_keys():
    """Why: a damaged ``sweep.spec`` must not stop a resume check, and the loose keys it falls back
    to are only the measurement's (and flush factors), stringified; a file from before chunk leads
    and trails had neither (so it does not resume under a design that pads its chunks)."""
    loose = {"sweep.chunk": 7, "sweep.units": "2", "flush.factor.l2-read": "3.0", "sweep.kernels": "triad", "x": "y"}
    want = {
        "sweep.chunk": "7",
        "sweep.units": "2",
        "flush.factor.l2-read": "3.0",
        "sweep.chunk_lead": "0",
        "sweep.chunk_trail": "0",
    }
    for raw in (
        "{not json",
        json.dumps({"chunk": 1}),
        json.dumps([1]),
        json.dumps({**SweepSpec().as_record(), "stop": {"bogus": 1}}),
    ):
        assert SweepSpec.recorded_measurement({**loose, "sweep.spec": raw}) == want
    assert SweepSpec.recorded_measurement(loose) == want


@pytest.mark.parametrize(
    "kw",
    [
        {"mem_fraction": 1},
        {"mem_fraction": 1e-9},
        {"warmup_s": 0},
        {"chunk": 1},
        {"reference_samples": 1},
        {"interleave_seed": 0},
        {"units": MAX_PASSES},
        {"units": "auto"},
        {"reference_parts": 1},
        {"throttle_threshold": 0},
        {"throttle_threshold": 0.99},
        {"clock_warmup_s": 0},
        {"clock_warmup_s": 60},
        {"clock_warmup_s": None},
        {"flush_factors": {"l2-read": 1e-3}},
        {"flush_factors": (("l2-read", 2),)},
        {"sizes": 1},
        {"chunk": np.int64(2)},
    ],
)
def test_a_spec_at_each_fields_edge_is_accepted(kw):
    """Why: each check's boundary (inclusive or not) is part of what the CLI accepts."""
    SweepSpec(**kw)


@pytest.mark.parametrize(
    "kw,needle",
    [
        ({"mem_fraction": 0}, "mem_fraction"),
        ({"mem_fraction": True}, "mem_fraction"),
        ({"mem_fraction": "0.5"}, "mem_fraction"),
        ({"warmup_s": -1e-9}, "warmup_s"),
        ({"warmup_s": True}, "warmup_s"),
        ({"warmup_s": float("inf")}, "warmup_s"),
        ({"warmup_s": "1"}, "warmup_s"),
        ({"interleave_seed": -1}, "interleave_seed"),
        ({"units": 0}, "units"),
        ({"units": MAX_PASSES + 1}, "units"),
        ({"units": True}, "units"),
        ({"reference_parts": 0}, "reference_parts"),
        ({"throttle_threshold": 1}, "throttle_threshold"),
        ({"throttle_threshold": -0.1}, "throttle_threshold"),
        ({"throttle_threshold": True}, "throttle_threshold"),
        ({"throttle_threshold": "0.5"}, "throttle_threshold"),
        ({"clock_warmup_s": 60.5}, "clock_warmup_s"),
        ({"clock_warmup_s": -1}, "clock_warmup_s"),
        ({"clock_warmup_s": float("nan")}, "clock_warmup_s"),
        ({"clock_warmup_s": True}, "clock_warmup_s"),
        ({"clock_warmup_s": "1"}, "clock_warmup_s"),
        ({"flush_factors": {"l2-read": 0}}, "l2-read"),
        ({"flush_factors": {"l2-read": True}}, "l2-read"),
        ({"flush_factors": {"l2-read": float("inf")}}, "l2-read"),
        ({"flush_factors": {"l2-read": "2"}}, "l2-read"),
        ({"reference": 1}, "reference"),
        ({"flush_end_event": 1}, "flush_end_event"),
        ({"drop_throttled": 0}, "drop_throttled"),
        ({"interleave": "no"}, "interleave"),
        ({"timers": ()}, "timers"),
        ({"timers": "clock"}, "'clock'"),
        ({"timers": "in-kernel", "kernels": ("triad", "spin")}, "'spin'"),
        ({"kernels": ()}, "at least one"),
        ({"sizes": ()}, "at least one"),
        ({"rotating": ()}, "at least one"),
        ({"chunk": True}, "chunk"),
        ({"reference_samples": 0}, "reference_samples"),
    ],
)
def test_a_spec_past_each_fields_edge_is_refused_naming_the_field(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(**kw)


def test_spec_fields_are_normalised_to_tuples_in_order_without_repeats():
    """Why: the spec is compared (resume) and hashed (frozen): lists, scalars and repeats in the
    timers must all end as the same tuples."""
    s = SweepSpec(
        kernels=["copy", "triad"],
        sizes=["1KiB", 2048],
        rotating=[1, "auto"],
        flush=["none"],
        timers=["events", "events"],
        flush_factors={"l2-read": 2},
    )
    assert (s.kernels, s.sizes, s.rotating, s.flush, s.timers, s.flush_factors) == (
        ("copy", "triad"),
        (1024, 2048),
        (1, "auto"),
        ("none",),
        ("events",),
        (("l2-read", 2),),
    )
    assert s == SweepSpec(
        kernels=("copy", "triad"),
        sizes=(1024, 2048),
        rotating=(1, "auto"),
        flush="none",
        timers="events",
        flush_factors=(("l2-read", 2),),
    )
    from hipexplore.kernels import catalog

    assert SweepSpec(kernels=catalog.get("triad")).kernels == ("triad",)  # a registered spec by its name
    assert [k.name for k in s.specs()] == ["copy", "triad"]


def test_more_units_than_iterations_is_one_line_not_extra_samples():
    """20 units of 10 iterations took 20 samples without a word (each unit takes one at least)."""
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.bench.stats import StopRule
    from hipexplore.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"^units 20 is more than the 10 iterations it would split: each unit takes at least one"
    ):
        SweepSpec(kernels=("triad",), sizes=(4096,), stop=StopRule(iterations=10), units=20)
    assert SweepSpec(kernels=("triad",), sizes=(4096,), stop=StopRule(iterations=10), units=10).units == 10
    assert (
        SweepSpec(kernels=("triad",), sizes=(4096,), stop=StopRule(), units=20).units == 20
    )  # adaptive: no count to split
