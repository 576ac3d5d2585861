"""Tests written from mutation testing's survivors (issue 17 item 6; BENCHMARKS.md "Mutation testing").

Each test here kills mutants that the module's own test file let live: a default, a forwarded
argument, a field of a written record. They run on the host device and the real compilers, like the
rest of the suite; each was checked to fail with its mutant active (mutmut's rerun of the survivors,
or ``MUTANT_UNDER_TEST=<name> pytest`` inside mutmut's ``mutants/`` copy).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from hipexplore.bench import io
from hipexplore.schema import SAMPLE_COLUMNS, SUMMARY_COLUMNS


# --- bench/io.py -------------------------------------------------------------------------------


def test_an_empty_frame_has_the_schemas_columns_and_their_dtypes():
    """Why: an empty sweep's files are read back and concatenated with later ones (resume); an
    int column that came back as object would turn every later int into object."""
    for frame, columns in ((io.samples_frame([]), SAMPLE_COLUMNS), (io.summary_frame([]), SUMMARY_COLUMNS)):
        assert list(frame.columns) == list(columns) and len(frame) == 0
        assert str(frame["size_bytes"].dtype) == "int64"
    frame = io.empty_frame(SAMPLE_COLUMNS)
    assert {c: str(frame[c].dtype) for c in ("size_bytes", "iteration", "time_s", "throttled", "kernel")} == {
        "size_bytes": "int64", "iteration": "int64", "time_s": "float64", "throttled": "bool", "kernel": "object"}


def test_summary_rows_are_put_in_the_schemas_column_order():
    """Why: the summary file's column order is the schema's whatever order a row's keys came in,
    and a key a row lacks is still a column."""
    row = {c: 1 for c in reversed(SUMMARY_COLUMNS) if c != "warning"}
    frame = io.summary_frame([row])
    assert list(frame.columns) == list(SUMMARY_COLUMNS)
    assert frame["warning"].isna().all() and frame["n"].tolist() == [1]


def _write(tmp_path, meta: dict[str, str]):
    paths = io.output_paths(tmp_path / "sub" / "r.parquet")
    part = io.empty_frame(SAMPLE_COLUMNS)
    io.write_results(paths, [part], [], meta)
    return paths


def test_read_results_needs_both_parquet_files_and_tolerates_the_metadata_file(tmp_path):
    """Why: resume starts over (None) unless the samples AND the summary exist; the metadata file
    is optional (None when absent, {} when unreadable), which tells resume what to check."""
    paths = _write(tmp_path, {"k": "v"})
    samples, summary, meta = io.read_results(paths)
    assert meta == {"k": "v"} and list(samples.columns) == list(SAMPLE_COLUMNS)
    paths[2].write_text("{not json")
    assert io.read_results(paths)[2] == {}
    paths[2].unlink()
    assert io.read_results(paths)[2] is None
    paths[1].unlink()
    _write(tmp_path, {"k": "v"})
    paths[1].unlink()          # samples and metadata there, summary missing
    assert io.read_results(paths) is None


# --- bench/spec.py -----------------------------------------------------------------------------

from hipexplore.bench.spec import MAX_PASSES, SweepSpec, parse_size  # noqa: E402
from hipexplore.bench.stats import StopRule  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402


def _every_field_set() -> SweepSpec:
    return SweepSpec(kernels=("triad", "copy"), sizes=("16KiB", 8192), rotating=(2, "auto"), flush=("none", "l2-read"),
                     stop=StopRule(iterations=6), reference=False, reference_samples=5, mem_fraction=0.25, chunk=3,
                     warmup_s=0.5, verify=False, flush_factors={"l2-read": 2.5}, flush_end_event=True,
                     timers=("events", "events"), reference_parts=4, throttle_threshold=0.5, drop_throttled=False,
                     clock_warmup_s=1.5, interleave=True, interleave_seed=9, units=3, floor=True, chunk_lead=2,
                     chunk_trail=0, counters="ncu", resolution=0.01, resolution_budget=3.0)


def test_the_record_holds_every_field_under_its_own_name():
    """Why: ``sweep.spec`` is what resume (and another process) rebuilds the spec from: a field
    stored under another key, or another field's value, is a spec that reads back different."""
    spec = _every_field_set()
    assert spec.as_record() == {
        "kernels": ["triad", "copy"], "sizes": [16384, 8192], "rotating": [2, "auto"], "flush": ["none", "l2-read"],
        "stop": dataclasses.asdict(StopRule(iterations=6)), "reference": False, "reference_samples": 5,
        "mem_fraction": 0.25, "chunk": 3, "chunk_lead": 2, "chunk_trail": 0, "warmup_s": 0.5, "verify": False, "flush_factors": {"l2-read": 2.5},
        "flush_end_event": True, "timers": ["events"], "reference_parts": 4, "throttle_threshold": 0.5,
        "drop_throttled": False, "clock_warmup_s": 1.5, "interleave": True, "interleave_seed": 9, "units": 3,
        "floor": True, "counters": "ncu", "resolution": 0.01, "resolution_budget": 3.0}
    assert SweepSpec(**{**spec.as_record(), "stop": StopRule(**spec.as_record()["stop"])}) == spec
    rec = spec.record()
    assert {k: rec[k] for k in ("sweep.kernels", "sweep.sizes", "sweep.rotating", "sweep.flush", "sweep.timers")} == {
        "sweep.kernels": "triad,copy", "sweep.sizes": "16384,8192", "sweep.rotating": "2,auto",
        "sweep.flush": "none,l2-read", "sweep.timers": "events"}
    assert len(spec.configurations()) == 2 * 2 * (2 * 2 + 0) * 1
    assert len(SweepSpec(reference=True, timers=("events",)).configurations()) == 1 * 1 * (1 + 1)


def test_the_measurement_of_a_record_names_each_setting():
    """Why: these strings are compared between a recorded sweep and a new one; the defaults are
    what records written before a field existed mean (one reference part, no throttle, one pass)."""
    assert _every_field_set().measurement() == {
        "sweep.stop_rule": repr(StopRule(iterations=6)), "sweep.chunk": "3", "sweep.chunk_lead": "2",
        "sweep.chunk_trail": "0", "sweep.mem_fraction": "0.25",
        "sweep.reference_samples": "0", "sweep.flush_end_event": "True", "sweep.reference_parts": "4",
        "sweep.throttle": "0.5 drop=False", "sweep.interleave": "seed=9", "sweep.units": "3",
        "flush.factor.l2-read": "2.5"}
    old = {"stop": dataclasses.asdict(StopRule()), "chunk": 10, "mem_fraction": 0.5, "reference": True,
           "reference_samples": 48, "flush_end_event": False, "flush_factors": {}}
    assert SweepSpec.recorded_measurement({"sweep.spec": json.dumps(old)}) == {  # a record from before the later fields
        "sweep.stop_rule": repr(StopRule()), "sweep.chunk": "10", "sweep.chunk_lead": "0", "sweep.chunk_trail": "0",
        "sweep.mem_fraction": "0.5", "sweep.reference_samples": "48", "sweep.flush_end_event": "False", "sweep.reference_parts": "1",
        "sweep.throttle": "0.0 drop=False", "sweep.interleave": "no", "sweep.units": "1"}


def test_an_unreadable_recorded_spec_falls_back_to_the_loose_keys():
    """Why: a damaged ``sweep.spec`` must not stop a resume check, and the loose keys it falls back
    to are only the measurement's (and flush factors), stringified; a file from before chunk leads
    and trails had neither (so it does not resume under a design that pads its chunks)."""
    loose = {"sweep.chunk": 7, "sweep.units": "2", "flush.factor.l2-read": "3.0", "sweep.kernels": "triad", "x": "y"}
    want = {"sweep.chunk": "7", "sweep.units": "2", "flush.factor.l2-read": "3.0", "sweep.chunk_lead": "0",
            "sweep.chunk_trail": "0"}
    for raw in ("{not json", json.dumps({"chunk": 1}), json.dumps([1]), json.dumps({**SweepSpec().as_record(), "stop": {"bogus": 1}})):
        assert SweepSpec.recorded_measurement({**loose, "sweep.spec": raw}) == want
    assert SweepSpec.recorded_measurement(loose) == want


@pytest.mark.parametrize("kw", [
    {"mem_fraction": 1}, {"mem_fraction": 1e-9}, {"warmup_s": 0}, {"chunk": 1}, {"reference_samples": 1},
    {"interleave_seed": 0}, {"units": MAX_PASSES}, {"units": "auto"}, {"reference_parts": 1}, {"throttle_threshold": 0},
    {"throttle_threshold": 0.99}, {"clock_warmup_s": 0}, {"clock_warmup_s": 60}, {"clock_warmup_s": None},
    {"flush_factors": {"l2-read": 1e-3}}, {"flush_factors": (("l2-read", 2),)}, {"sizes": 1}, {"chunk": np.int64(2)},
])
def test_a_spec_at_each_fields_edge_is_accepted(kw):
    """Why: each check's boundary (inclusive or not) is part of what the CLI accepts."""
    SweepSpec(**kw)


@pytest.mark.parametrize("kw,needle", [
    ({"mem_fraction": 0}, "mem_fraction"), ({"mem_fraction": True}, "mem_fraction"), ({"mem_fraction": "0.5"}, "mem_fraction"),
    ({"warmup_s": -1e-9}, "warmup_s"), ({"warmup_s": True}, "warmup_s"), ({"warmup_s": float("inf")}, "warmup_s"),
    ({"warmup_s": "1"}, "warmup_s"),
    ({"interleave_seed": -1}, "interleave_seed"), ({"units": 0}, "units"), ({"units": MAX_PASSES + 1}, "units"),
    ({"units": True}, "units"), ({"reference_parts": 0}, "reference_parts"),
    ({"throttle_threshold": 1}, "throttle_threshold"), ({"throttle_threshold": -0.1}, "throttle_threshold"),
    ({"throttle_threshold": True}, "throttle_threshold"), ({"throttle_threshold": "0.5"}, "throttle_threshold"),
    ({"clock_warmup_s": 60.5}, "clock_warmup_s"), ({"clock_warmup_s": -1}, "clock_warmup_s"),
    ({"clock_warmup_s": float("nan")}, "clock_warmup_s"), ({"clock_warmup_s": True}, "clock_warmup_s"),
    ({"clock_warmup_s": "1"}, "clock_warmup_s"),
    ({"flush_factors": {"l2-read": 0}}, "l2-read"), ({"flush_factors": {"l2-read": True}}, "l2-read"),
    ({"flush_factors": {"l2-read": float("inf")}}, "l2-read"), ({"flush_factors": {"l2-read": "2"}}, "l2-read"),
    ({"reference": 1}, "reference"), ({"flush_end_event": 1}, "flush_end_event"), ({"drop_throttled": 0}, "drop_throttled"),
    ({"interleave": "no"}, "interleave"), ({"timers": ()}, "timers"), ({"timers": "clock"}, "'clock'"),
    ({"timers": "in-kernel", "kernels": ("triad", "spin")}, "'spin'"), ({"kernels": ()}, "at least one"),
    ({"sizes": ()}, "at least one"), ({"rotating": ()}, "at least one"), ({"chunk": True}, "chunk"),
    ({"reference_samples": 0}, "reference_samples"),
])
def test_a_spec_past_each_fields_edge_is_refused_naming_the_field(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(**kw)


def test_spec_fields_are_normalised_to_tuples_in_order_without_repeats():
    """Why: the spec is compared (resume) and hashed (frozen): lists, scalars and repeats in the
    timers must all end as the same tuples."""
    s = SweepSpec(kernels=["copy", "triad"], sizes=["1KiB", 2048], rotating=[1, "auto"], flush=["none"],
                  timers=["events", "events"], flush_factors={"l2-read": 2})
    assert (s.kernels, s.sizes, s.rotating, s.flush, s.timers, s.flush_factors) == (
        ("copy", "triad"), (1024, 2048), (1, "auto"), ("none",), ("events",), (("l2-read", 2),))
    assert s == SweepSpec(kernels=("copy", "triad"), sizes=(1024, 2048), rotating=(1, "auto"), flush="none",
                          timers="events", flush_factors=(("l2-read", 2),))
    from hipexplore.kernels import catalog

    assert SweepSpec(kernels=catalog.get("triad")).kernels == ("triad",)  # a registered spec by its name
    assert [k.name for k in s.specs()] == ["copy", "triad"]


@pytest.mark.parametrize("text,want", [("4096", 4096), (" 64KiB ", 65536), ("64k", 65536), ("1kb", 1000), ("1MiB", 1 << 20),
                                       ("256M", 256 << 20), ("2mb", 2 * 10**6), ("1GiB", 1 << 30), ("1g", 1 << 30),
                                       ("3gb", 3 * 10**9), ("1TiB", 1 << 40), ("1t", 1 << 40), ("1tb", 10**12),
                                       ("1.5KiB", 1536), ("7b", 7), ("1 MiB", 1 << 20), (np.int64(8), 8)])
def test_sizes_parse_with_every_unit(text, want):
    assert parse_size(text) == want and type(parse_size(text)) is int


@pytest.mark.parametrize("bad", [0, -1, "0", "-4KiB", "inf", "nan", "1 apples", "KiB", "", True])
def test_sizes_that_are_not_positive_byte_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="size"):
        parse_size(bad)


# --- bench/passes.py and bench/run.py's passes ------------------------------------------------

import hipexplore as hx  # noqa: E402
from hipexplore.bench import passes as ps  # noqa: E402
from hipexplore.devices.host import HostDevice  # noqa: E402


class _CountingHost(HostDevice):
    """The host device, noting each allocation's size (the allocation itself is the real one)."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []
        self.freed = 0

    def alloc(self, nbytes):
        self.sizes.append(int(nbytes))
        return super().alloc(nbytes)

    def free(self, buf):
        self.freed += 1
        super().free(buf)


def test_run_passes_measures_each_pass_by_index_holding_its_pad():
    """Why: pass k's pad (``pad_bytes(k)``) is held while pass k measures and freed after; without
    ``pad`` (each pass in a process of its own) nothing is allocated."""
    dev = _CountingHost()
    seen = ps.run_passes(dev, 3, lambda k: (k, list(dev.sizes), dev.freed))
    assert seen == [(0, [], 0), (1, [ps.pad_bytes(1)], 0), (2, [ps.pad_bytes(1), ps.pad_bytes(2)], 1)]
    assert dev.freed == 2
    dev2 = _CountingHost()
    assert ps.run_passes(dev2, 2, lambda k: k, pad=False) == [0, 1] and dev2.sizes == []


def test_a_multi_pass_sweep_returns_its_summary_and_file_name(tmp_path):
    """Why: the merged result of passes is what the caller sees: every configuration, ``passes``
    recorded, the out file's name (not the summary's), and passes_done in the metadata."""
    out = tmp_path / "p.parquet"
    res = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=4, units=2, reference_samples=2,
                   progress=False, out=out, warmup_s=0.0, worker=False)
    assert res.path == out and not res.stopped and out.exists()
    assert len(res.summary) == 2 and set(res.summary["passes"]) == {2} and set(res.samples["pass_index"]) == {0, 1}
    assert res.metadata["sweep.units_done"] == "2"
    res2 = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=4, units=2, reference=False,
                    progress=False, warmup_s=0.0, worker=False)
    assert res2.path is None and len(res2.summary) == 1


def test_a_multi_pass_sweep_stopped_in_its_first_pass_writes_nothing(tmp_path):
    """Why: a stopped multi-pass sweep returns what it has, makes no further pass, and leaves the
    out file alone (its passes are not written part-way)."""
    for out in (None, tmp_path / "stopped.parquet"):
        calls: list[int] = []
        res = hx.sweep("triad", ["16KiB", "32KiB"], [1], ["none"], device="host", iterations=4, units=3,
                       reference=False, progress=False, out=out, warmup_s=0.0, worker=False,
                       should_stop=lambda: bool(calls.append(1)) or len(calls) > 2)
        assert res.stopped and res.metadata["sweep.units_done"] == "0"
        assert len(res.summary) <= 1
        if out is not None:
            assert not out.exists() and res.path == out


def _one_pass(**kw):
    kw = {"reference": False, **kw}
    return hx.sweep("triad", ["16KiB", "32KiB"], [1], ["none"], device="host", iterations=6, chunk=3,
                    progress=False, warmup_s=0.0, worker=False, **kw)


def test_merge_offsets_each_passes_chunks_and_bootstraps_over_passes_and_chunks():
    """Why: ``merge`` on two real one-pass sweeps: chunk ids of pass 1 continue where pass 0's end
    (per configuration), and each merged row's interval is the two-stage bootstrap of its samples."""
    a, b = _one_pass(), _one_pass()
    samples, summary = ps.merge([a.samples, b.samples], [a.summary, b.summary], peak_bandwidth_gbs=1.0)
    for size, g in samples.groupby("size_bytes"):
        first, second = g[g.pass_index == 0]["chunk"], g[g.pass_index == 1]["chunk"]
        assert first.tolist() == a.samples[a.samples.size_bytes == size]["chunk"].tolist()
        assert second.min() == first.max() + 1
    assert summary["size_bytes"].tolist() == [16384, 32768] and set(summary["passes"]) == {2}
    for row in summary.itertuples():
        g = samples[samples.size_bytes == row.size_bytes]
        m = ps.Measurement(g["time_s"].to_numpy(), chunks=g["chunk"].to_numpy(), groups=g["pass_index"].to_numpy())
        assert row.n == 12 and (row.ci_low_s, row.ci_high_s) == pytest.approx(m.bootstrap_ci())
        assert row.peak_bandwidth_gbs == 1.0
    # a summary row without samples (its configuration measured nothing) is left out, not the end
    ghost = a.summary.iloc[[0]].assign(size_bytes=999)
    _, kept = ps.merge([a.samples], [pd.concat([ghost, a.summary], ignore_index=True)], peak_bandwidth_gbs=1.0)
    assert kept["size_bytes"].tolist() == [16384, 32768]
    # one pass that measured nothing merges to nothing
    empty_s, empty_m = ps.merge([a.samples.iloc[:0]], [a.summary.iloc[:0]], peak_bandwidth_gbs=1.0)
    assert len(empty_s) == 0 and len(empty_m) == 0 and list(empty_m.columns) == list(SUMMARY_COLUMNS)


def test_merge_names_the_configuration_of_a_bad_sample():
    a = _one_pass()
    bad = a.samples.copy()
    bad.loc[bad.index[0], "time_s"] = float("nan")
    with pytest.raises(ConfigError, match="triad 16384 1 none events"):
        ps.merge([bad], [a.summary], peak_bandwidth_gbs=1.0)


# --- compile/disk.py ---------------------------------------------------------------------------


def test_room_after_a_full_disk_first_drops_abandoned_temp_files(tmp_path):
    """Why: after ENOSPC the first room to win back is temp files whose writer is gone (here: older
    than ``STALE_TEMP_S``); a live writer's fresh temp file stays."""
    import hashlib
    import os
    import time

    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.disk import STALE_TEMP_S, DiskCache
    from hipexplore.compile.request import CacheKey

    disk = DiskCache(tmp_path / "c")
    canonical = json.dumps({"generated": 1}).encode()
    assert disk.put(CacheKey(canonical, hashlib.sha256(canonical).hexdigest()),
                    ObjectCode(b"x" * 4096, "host", "host", "shared-library", compile_seconds=0.5))
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    old, fresh = shard / ".tmp-otherhost-1-abc.hxc.part", shard / ".tmp-otherhost-2-def.hxc.part"
    old.write_bytes(b"x" * 10)
    fresh.write_bytes(b"y" * 10)
    then = time.time() - STALE_TEMP_S - 60
    os.utime(old, (then, then))
    disk.make_room(100)
    assert not old.exists() and fresh.exists()


def test_a_merged_summary_row_is_recomputed_field_by_field():
    """Why: each merged row's fields come from all passes: notes joined without repeats (the
    statistics' own warnings recomputed, not carried), throttled counts summed, the clock the median
    of every sample's, bandwidth from the merged median, the bias against the merged reference; the
    columns are the schema's (extra columns of a pass's rows are not carried)."""
    import warnings

    a, b = _one_pass(reference=True, reference_samples=4), _one_pass(reference=True, reference_samples=4)
    sa, sb = a.samples.copy(), b.samples.copy()
    sa["clock_mhz"], sb["clock_mhz"] = 1000.0, 2000.0
    ma, mb = a.summary.copy(), b.summary.copy()
    first = (ma["size_bytes"] == 16384) & (ma["flush"] == "none")
    ma.loc[first, "warning"] = "noisy: IQR/median 50% (> 10%); custom note"
    mb.loc[first.to_numpy(), "warning"] = "custom note; other"
    ma.loc[first, "n_throttled"], mb.loc[first.to_numpy(), "n_throttled"] = 2, 3
    mb.loc[~first.to_numpy(), "warning"] = None
    ma["worker"] = "w0"
    samples, summary = ps.merge([sa, sb], [ma, mb], peak_bandwidth_gbs=7.0)
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert set(summary["passes"]) == {2} and set(summary["clock_mhz"]) == {1500.0}
    assert set(summary["peak_bandwidth_gbs"]) == {7.0}
    row = summary[(summary["size_bytes"] == 16384) & (summary["flush"] == "none")].iloc[0]
    assert row["warning"].split("; ")[:2] == ["custom note", "other"] and "50%" not in row["warning"]
    assert row["n_throttled"] == 5
    assert not any("XXXX" in str(w) for w in summary["warning"])
    for r in summary.itertuples():
        assert r.bandwidth_gbs == pytest.approx(r.footprint_bytes / r.median_s / 1e9, rel=1e-12)
        ref = summary[(summary.size_bytes == r.size_bytes) & (summary.flush == "cold-reference")].iloc[0]
        assert r.reference_median_s == ref.median_s and r.bias == pytest.approx(r.median_s / ref.median_s - 1.0)
    # a configuration whose reference is not among the merged rows loses its pass's bias
    no_ref = [s[s["flush"] != "cold-reference"] for s in (a.summary, b.summary)]
    no_ref_s = [s[s["flush"] != "cold-reference"] for s in (a.samples, b.samples)]
    assert no_ref[0]["bias"].notna().all()
    _, alone = ps.merge(no_ref_s, no_ref, peak_bandwidth_gbs=7.0)
    assert alone["bias"].isna().all() and alone["reference_median_s"].isna().all()
    # the host's clocks are NaN: the merged clock is NaN, with no all-NaN warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, host = ps.merge([a.samples, b.samples], [a.summary, b.summary], peak_bandwidth_gbs=7.0)
    assert host["clock_mhz"].isna().all()


def test_pad_jitter_takes_every_step_from_1_to_31():
    """Why: the pad's jitter is 1..31 steps of PAD_JITTER (never 0: a pass's pad always differs
    from the plain k * PAD_STEP)."""
    jitters = {(ps.pad_bytes(k, seed) - k * ps.PAD_STEP) // ps.PAD_JITTER for k in range(1, 9) for seed in range(60)}
    assert jitters == set(range(1, 32))


def test_an_adaptive_rule_split_over_many_passes_keeps_at_least_one_sample_each():
    r = ps.pass_rule(StopRule(min_samples=1, max_samples=3), 4)
    assert (r.min_samples, r.max_samples) == (1, 1)


# --- bench/run.py and bench/stats.py: small pure parts ------------------------------------------


def test_a_fault_is_named_by_the_runtime_status_in_its_message():
    """Why: ``KernelFault`` names the status (what a user searches for); GPU faults are not
    reachable on the host, so the parsing is checked on the runtimes' own message shapes."""
    from hipexplore.bench.run import fault_status

    assert fault_status("cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)") == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert fault_status("hipModuleLaunchKernel: hipErrorIllegalAddress: an illegal memory access") == "hipErrorIllegalAddress"
    assert fault_status("the device went away") == "the device went away"


def test_a_measurements_repr_shows_its_median_in_microseconds():
    from hipexplore.bench.stats import Measurement

    text = repr(Measurement(np.array([1e-6, 2e-6, 3e-6]), label="k"))
    assert text.startswith("Measurement('k', n=3, median=2.000 us, ")


def test_the_two_stage_bootstrap_draws_whole_chunks():
    """Why: a chunk is drawn whole (its samples are correlated): with chunks of three 1s, two 5s
    and three 1s, every resampled median is 1 or 5, and both occur."""
    from hipexplore.bench import stats as st

    x = np.array([1.0, 1, 1, 5, 5, 1, 1, 1])
    chunks = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    medians = st.grouped_block_medians(x, chunks, np.zeros(8, int), 400, np.random.default_rng(0))
    assert set(np.round(medians, 9)) == {1.0, 5.0}


def test_a_disk_tiers_stats_name_every_field(tmp_path):
    """Why: ``DiskCache.stats()`` is what ``hipexplore cache stats`` and the notebooks print: every
    key, with one entry, one temp file and one foreign file in a shard."""
    import hashlib

    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.disk import DiskCache
    from hipexplore.compile.request import CacheKey

    disk = DiskCache(tmp_path / "c")
    canonical = json.dumps({"generated": 2}).encode()
    assert disk.put(CacheKey(canonical, hashlib.sha256(canonical).hexdigest()),
                    ObjectCode(b"x" * 4096, "host", "host", "shared-library", compile_seconds=0.5))
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    (shard / ".tmp-otherhost-1-abc.hxc.part").write_bytes(b"t" * 10)
    (shard / "notes.txt").write_text("x")
    s = disk.stats()
    entry = sum(i.size for i in disk.listing() if i.kind == "entry")
    assert {k: s[k] for k in ("shared", "authenticated", "writable", "write_error", "entries", "bytes", "entry_bytes",
                              "temp_files", "temp_bytes", "foreign_files")} == {
        "shared": disk.shared, "authenticated": False, "writable": True, "write_error": "", "entries": 1,
        "bytes": entry + 10, "entry_bytes": entry, "temp_files": 1, "temp_bytes": 10, "foreign_files": 1}
    assert s["disk_writes"] == 1


def test_the_stateless_stop_check_uses_the_chunks_it_is_given():
    """Why: ``StopRule.remaining`` is the tracker's check in one call; a timeout's reason reports
    the interval of the median, which with chunks is the block bootstrap's (wider here: each chunk
    sits at its own level)."""
    rule = StopRule(min_samples=10, min_time_s=0.0, timeout_s=1.0, target_ci=1e-9, target_cv=1e-9)
    rng = np.random.default_rng(3)
    chunks = np.repeat(np.arange(6), 10)
    x = 1e-3 * (1 + 0.05 * chunks + 0.001 * rng.standard_normal(60))
    with_chunks = rule.remaining(x, 2.0, chunks)
    assert with_chunks == rule.tracker().check(x, 2.0, chunks) and with_chunks[1].startswith("timeout")
    assert with_chunks != rule.remaining(x, 2.0)


def test_a_ratio_interval_is_reproducible_with_its_default_seed_and_resamples():
    """Why: a bias interval must read the same when the same samples are summarised again."""
    from hipexplore.bench.stats import Measurement, ratio_ci

    rng = np.random.default_rng(5)
    new, base = Measurement(1.1 + 0.05 * rng.random(40)), Measurement(1.0 + 0.05 * rng.random(40))
    assert ratio_ci(new, base) == ratio_ci(new, base) == ratio_ci(new, base, resamples=2000, seed=0)


def test_a_one_pass_summary_row_records_one_pass_its_stop_reason_and_nan_biases(capsys):
    """Why: the row fields a one-pass sweep writes (``passes`` 1, the rule's stop reason, NaN
    bias fields as floats without a reference); the progress bar names the sweep and its unit."""
    res = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=4, reference=False, progress=True, units=1,
                   warmup_s=0.0, worker=False)
    row = res.summary.iloc[0]
    assert row["passes"] == 1 and row["stop_reason"] == "fixed iteration count"
    for col in ("reference_median_s", "bias", "bias_ci_low", "bias_ci_high"):
        assert str(res.summary[col].dtype) == "float64" and np.isnan(row[col]), col
    err = capsys.readouterr().err
    assert "hipexplore sweep" in err and "config" in err


def test_resuming_keeps_pass_ids_and_the_references_chunks(tmp_path, capsys):
    """Why: a resumed sweep reads its finished rows back: a multi-pass file's samples keep their
    pass ids, and a new configuration's bias is against the recorded reference with its chunk ids
    (the block bootstrap's interval, not the i.i.d. one); the telemetry it used is recorded and the
    progress bar is shown for passes too."""
    from hipexplore.bench.stats import Measurement, ratio_ci

    out = tmp_path / "r.parquet"
    kw = dict(device="host", iterations=6, chunk=2, reference_samples=6, warmup_s=0.0, worker=False, out=out)
    first = hx.sweep("triad", ["16KiB"], [1], ["none"], units=2, progress=True, **kw)
    assert "hipexplore sweep" in capsys.readouterr().err
    assert first.metadata["telemetry.source"] and "telemetry.max_clock_mhz" in first.metadata
    grown = hx.sweep("triad", ["16KiB"], [1], ["none", "l2-read"], units=2, progress=False, **kw)
    old = grown.samples[grown.samples["flush"] == "none"]
    assert set(old["pass_index"]) == {0, 1}
    # one pass: the new row's bias is computed in this run against the reference read back
    out2 = tmp_path / "one.parquet"
    kw2 = {**kw, "out": out2, "reference_samples": 27, "chunk": 9, "units": 1}  # chunks of 9, not the bootstrap's blocks of 3
    hx.sweep("triad", ["16KiB"], [1], ["none"], progress=False, **kw2)
    res = hx.sweep("triad", ["16KiB"], [1], ["none", "l2-read"], progress=False, **kw2)
    s = res.samples
    ref = s[s["flush"] == "cold-reference"]
    new = s[(s["flush"] == "l2-read") & ~s["dropped"]]
    ratio, lo, hi = ratio_ci(Measurement(new["time_s"].to_numpy(), chunks=new["chunk"].to_numpy()),
                             Measurement(ref["time_s"].to_numpy(), chunks=ref["chunk"].to_numpy()), resamples=1000)
    row = res.summary[res.summary["flush"] == "l2-read"].iloc[0]
    assert (row["bias"], row["bias_ci_low"], row["bias_ci_high"]) == pytest.approx((ratio - 1, lo - 1, hi - 1))


# --- bench/sweep.py ----------------------------------------------------------------------------


def test_sweeps_list_defaults_are_the_specs_and_it_runs_on_the_best_device_with_a_bar():
    """Why: ``sweep()`` with no arguments measures what ``SweepSpec()`` describes, on ``'auto'``
    (a GPU when one is usable), resuming and with a progress bar (tests/compile/test_cache_contract.py checks the
    other keyword defaults against the spec's)."""
    import inspect

    from hipexplore.bench.sweep import sweep

    p = inspect.signature(sweep).parameters
    spec = SweepSpec()
    assert SweepSpec(kernels=p["kernels"].default, sizes=p["sizes"].default, rotating=p["rotating"].default,
                     flush=p["flush"].default) == spec
    assert (p["device"].default, p["resume"].default, p["progress"].default) == ("auto", True, True)


def test_a_device_object_gets_the_cache_it_is_given_and_keeps_its_own():
    """Why: ``sweep(device=dev, cache=c)`` builds the kernels through ``c`` when ``dev`` has no
    cache of its own, and leaves a device's own cache in place."""
    from hipexplore.compile.cache import CompileCache

    dev, cache = HostDevice(), CompileCache(disk_dir=False)
    hx.sweep("triad", ["16KiB"], [1], ["none"], device=dev, cache=cache, iterations=2, reference=False,
             progress=False, warmup_s=0.0, worker=False)
    assert dev.cache is cache and cache.stats()["compiled"] + cache.stats()["memory_hits"] >= 1
    other = CompileCache(disk_dir=False)
    hx.sweep("triad", ["16KiB"], [1], ["none"], device=dev, cache=other, iterations=2, reference=False,
             progress=False, warmup_s=0.0, worker=False)
    assert dev.cache is cache


def test_a_ratio_interval_follows_its_seed_argument_not_the_measurements_own_seed():
    from hipexplore.bench.stats import Measurement, ratio_ci

    rng = np.random.default_rng(6)
    x, base = 1.1 + 0.05 * rng.random(40), Measurement(1.0 + 0.05 * rng.random(40))
    assert ratio_ci(Measurement(x, seed=0), base, seed=3) == ratio_ci(Measurement(x, seed=99), base, seed=3)


def test_a_sweep_left_to_its_defaults_measures_what_sweepspec_describes():
    """Why: behaviour, not the signature (mutmut's trampoline keeps the original signature, so a
    changed default is only seen by a call that leaves the argument out): what ``sweep()`` records
    with only sizes, device and a count given is ``SweepSpec()``'s record."""
    res = hx.sweep(sizes=["16KiB"], device="host", iterations=2, reference_samples=2, warmup_s=0.0, worker=False)
    want = SweepSpec(sizes=(16384,), stop=StopRule(iterations=2), reference_samples=2, warmup_s=0.0).as_record()
    assert json.loads(res.metadata["sweep.spec"]) == want
    assert set(res.summary["kernel"]) == {"triad"} and any(k.startswith("verify.") for k in res.metadata)


def test_an_adaptive_sweep_keeps_the_stop_rule_it_is_given():
    rule = StopRule(min_samples=4, max_samples=6, timeout_s=1.0)
    res = hx.sweep("triad", ["16KiB"], device="host", stop=rule, reference=False, progress=False, warmup_s=0.0, worker=False)
    got = json.loads(res.metadata["sweep.spec"])["stop"]
    assert (got["min_samples"], got["max_samples"], got["timeout_s"]) == (4, 6, 1.0)
