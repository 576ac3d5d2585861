"""Sweeps on the host device (the CI sweep): tidy frames that follow docs/ARCHITECTURE.md, files
written as the sweep goes, stop and resume, callbacks, the CLI, and clear errors."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hipexplore as hx
from hipexplore.bench import SAMPLE_COLUMNS, SUMMARY_COLUMNS, sweep
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweep import output_paths, parse_size
from hipexplore.compile.cache import CompileCache
from hipexplore.devices import get_device
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError, DeviceUnavailable, UnsupportedOperation

ARCH = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
KIB = 1 << 10


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=128 * KIB)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("scache"))
    return d


def _doc_columns(label: str) -> list[str]:
    text = ARCH.read_text()
    section = text[text.index("## Benchmark frames") :]
    m = re.search(label + r"[^\n]*:\n`([^`]*)`", section)
    assert m, f"no '{label}' column list in ARCHITECTURE.md"
    return [c.strip() for c in m.group(1).replace("\n", " ").split(",")]


def test_columns_are_the_documented_contract() -> None:
    assert list(SAMPLE_COLUMNS) == _doc_columns("Samples")
    assert list(SUMMARY_COLUMNS) == _doc_columns("Summary")


def test_host_sweep_produces_tidy_frames(dev, tmp_path) -> None:
    seen: list[dict] = []
    res = sweep(
        ["triad", "copy"],
        ["16KiB", 64 * KIB],
        [1, "auto"],
        ["none", "l2-write", "l2-read"],
        device=dev,
        iterations=12,
        reference_samples=3,
        out=tmp_path / "s.parquet",
        progress=False,
        on_result=seen.append,
        warmup_s=0,
    )
    s, x = res.summary, res.samples
    assert list(s.columns) == list(SUMMARY_COLUMNS) and list(x.columns) == list(SAMPLE_COLUMNS)
    assert len(s) == 2 * 2 * (2 * 3 + 1) == len(seen)
    # the cold reference is taken in parts through each (kernel, size) group; its row comes last
    assert [r["flush"] for r in seen[:7]] == ["none", "l2-write", "l2-read"] * 2 + ["cold-reference"]
    ref = s[s.flush == "cold-reference"]
    assert (ref.bias == 0).all() and (ref.n == 3).all() and (ref.rotating == 1).all()
    rest = s[s.flush != "cold-reference"]
    assert (rest.n == 12).all()
    # every summary row is recomputable from its samples
    for r in rest.itertuples():
        t = x[
            (x.kernel == r.kernel)
            & (x.size_bytes == r.size_bytes)
            & (x.rotating_requested == r.rotating_requested)
            & (x.flush == r.flush)
        ]
        assert len(t) == 12 and t.time_s.median() == pytest.approx(r.median_s)
        assert r.bias == pytest.approx(r.median_s / r.reference_median_s - 1)
        assert r.bandwidth_gbs == pytest.approx(r.footprint_bytes / r.median_s / 1e9)
        assert sorted(t.buffer_set.unique()) == list(range(r.rotating))
    auto = s[(s.rotating_requested == "auto") & (s.kernel == "triad") & (s.size_bytes == 16 * KIB)]
    assert (auto.rotating == max(2, 2 * math.ceil(128 * KIB / (3 * 16 * KIB)))).all()
    assert (x[x.flush == "none"].flush_s == 0).all() and (x[x.flush == "l2-read"].flush_s > 0).all()
    assert (s.rotating_cap_bytes > 0).all() and s.peak_bandwidth_gbs.isna().all()
    # on disk: the same frames plus provenance
    samples_path, summary_path, meta_path = output_paths(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(samples_path), x, check_dtype=False)
    assert len(pd.read_parquet(summary_path)) == len(s)
    meta = json.loads(meta_path.read_text())
    assert meta["device.kind"] == "host" and meta["sweep.flush"] == "none,l2-write,l2-read" and "git_revision" in meta
    assert meta["verify.triad.16384"].startswith("rel_l2_error=")
    # the kernels and flushes went through the compile cache
    assert {"triad", "copy", "flush-l2-write", "flush-l2-read"} <= set(dev.cache.events().kernel)


def test_stop_and_resume_keeps_finished_work(dev, tmp_path) -> None:
    out = tmp_path / "r.parquet"
    kw = dict(
        device=dev, iterations=6, reference_samples=2, out=out, progress=False, warmup_s=0, units=1
    )  # one unit's writes
    done: list[dict] = []
    res = sweep(
        "triad",
        ["16KiB", "32KiB"],
        [1, 2],
        ["none", "l2-read"],
        on_result=done.append,
        should_stop=lambda: len(done) >= 3,
        **kw,
    )
    # three configurations, then the reference of their (kernel, size), whose samples were taken: kept
    assert res.stopped and len(res.summary) == 4 and list(res.summary.flush)[-1] == "cold-reference"
    on_disk = pd.read_parquet(output_paths(out)[1])
    assert len(on_disk) == 4
    first_run = on_disk.run_id.iloc[0]
    more: list[dict] = []
    res2 = sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none", "l2-read"], on_result=more.append, **kw)
    assert not res2.stopped and len(more) == 2 * (2 * 2 + 1) - 4
    s = res2.summary
    assert len(s) == 10 and not s.duplicated(["kernel", "size_bytes", "rotating_requested", "flush"]).any()
    assert (s.run_id == first_run).all()
    assert len(res2.samples) == int(s.n.sum())
    # nothing left to do: a third run adds nothing
    assert len(sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none", "l2-read"], **kw).summary) == 10
    # rows measured one way are never mixed with rows measured another way
    with pytest.raises(ConfigError, match=r"other settings .*sweep\.stop_rule"):
        sweep("triad", ["16KiB", "64KiB"], [1], ["none"], **{**kw, "iterations": 12})


def test_adaptive_sweep_and_inputs(dev) -> None:
    from hipexplore.bench import StopRule

    res = sweep(
        "fill",
        "8KiB",
        "auto",
        "none",
        device=dev,
        stop=StopRule(min_samples=8, min_time_s=0, target_cv=5, timeout_s=2),
        reference=False,
        progress=False,
        warmup_s=0,
    )
    r = res.summary.iloc[0]
    assert r.n >= max(8, r.rotating) and math.isnan(r.bias)
    assert parse_size("1MiB") == 1 << 20 and parse_size("256M") == 256 << 20 and parse_size(4096) == 4096
    with pytest.raises(ConfigError, match="'12 apples'"):
        parse_size("12 apples")


def test_sweep_errors_are_clear(dev) -> None:
    with pytest.raises(ConfigError, match="'flushy'"):
        sweep("triad", "16KiB", 1, "flushy", device=dev, iterations=4, progress=False)
    with pytest.raises(UnsupportedOperation, match="icache"):
        sweep("triad", "16KiB", 1, "icache", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match=r"iterations \(4\) must be greater than or equal to .*\(8\)"):
        sweep("triad", "16KiB", 8, "none", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match="no host C source"):
        sweep("spin", "16KiB", 1, "none", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match=r"\.parquet"):
        sweep("triad", "16KiB", 1, "none", device=dev, iterations=4, progress=False, out="x.csv")


def test_cli_bench_json_and_errors(tmp_path, capsys, monkeypatch) -> None:
    from hipexplore.cli import main

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "cli.parquet"
    rc = main(
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "16KiB,32KiB",
            "--rotating",
            "1,auto",
            "--flush",
            "none,l2-read",
            "--iterations",
            "8",
            "--reference-samples",
            "2",
            "--llc-bytes",
            str(64 * KIB),
            "--out",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["out"] == str(out) and len(payload["summary"]) == 2 * (2 * 2 + 1)
    assert out.exists()
    rc = main(
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "16KiB",
            "--rotating",
            "4",
            "--iterations",
            "2",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "iterations (2)" in err and "(4)" in err
    try:
        get_device("cuda").close()
    except DeviceUnavailable:  # the usual case (CI has no GPU): the error names what was looked for
        rc = main(["bench", "triad", "--device", "cuda", "--iterations", "2"])
        assert rc == 2 and "CUDA" in capsys.readouterr().err


def test_cli_user_kernel(tmp_path, capsys, monkeypatch) -> None:
    from hipexplore.cli import main

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "scale.c"
    src.write_text(
        "void scale(float* y, const float* x, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }\n"
    )
    rc = main(
        [
            "bench",
            "myscale",
            "--device",
            "host",
            "--source",
            str(src),
            "--entry",
            "scale",
            "--args",
            "out:y:f32[n],in:x:f32[n],n:u64=n",
            "--size",
            "16KiB",
            "--iterations",
            "4",
            "--no-reference",
            "--json",
        ]
    )
    assert rc == 0
    (row,) = json.loads(capsys.readouterr().out)["summary"]
    assert row["kernel"] == "myscale" and row["footprint_bytes"] == 2 * 16 * KIB and row["bias"] is None


# --- device identity on resume; what the sweep's launches used (issue 17) -------------------------


class _OtherCpu(HostDevice):
    """The real host device under another name: results recorded on it are another device's."""

    @property
    def name(self) -> str:
        return "Other CPU 9000"


def test_resume_refuses_results_of_another_device(dev, tmp_path) -> None:
    """The resume check compares the device *name* recorded in the summary (and, through the
    metadata, the LLC size); kind, index and target are not compared."""
    out = tmp_path / "d.parquet"
    kw = dict(iterations=4, reference_samples=2, out=out, progress=False, warmup_s=0)
    first = sweep("triad", "16KiB", [1], ["none"], device=dev, **kw)
    assert set(first.summary.device_name) == {dev.name}
    before = pd.read_parquet(output_paths(out)[1])
    other = _OtherCpu(llc_bytes=dev.llc_bytes)
    other.cache = dev.cache
    try:
        with pytest.raises(ConfigError, match=r"cannot resume .*holds results from \[.*\], not 'Other CPU 9000'"):
            sweep("triad", "16KiB", [1, 2], ["none"], device=other, **kw)
    finally:
        other.close()
    pd.testing.assert_frame_equal(pd.read_parquet(output_paths(out)[1]), before)  # nothing was appended
    # same name, another LLC size: rows sized and flushed for another cache are not mixed in either
    small = HostDevice(llc_bytes=dev.llc_bytes // 2)
    small.cache = dev.cache
    try:
        with pytest.raises(ConfigError, match=r"other settings .*device\.llc_bytes"):
            sweep("triad", "16KiB", [1, 2], ["none"], device=small, **kw)
    finally:
        small.close()
    # the same device resumes: only the new configuration is measured
    res = sweep("triad", "16KiB", [1, 2], ["none"], device=dev, **kw)
    assert len(res.summary) == len(before) + 1


class _Recording(HostDevice):
    """The real host device, recording each launch's C symbol and first argument's address."""

    def __init__(self, llc_bytes: int) -> None:
        super().__init__(llc_bytes=llc_bytes)
        self.launches: list[tuple[str, int]] = []

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        self.launches.append((kernel.__name__, int(args.values[0].value or 0)))
        super().launch(kernel, grid, block, args, shared_bytes)


def test_sweep_launches_flush_before_each_sample_and_rotate_buffer_addresses(dev) -> None:
    rec = _Recording(dev.llc_bytes)
    rec.cache = dev.cache
    try:
        res = sweep(
            "triad",
            "16KiB",
            [3],
            ["l2-read"],
            device=rec,
            iterations=6,
            reference_samples=2,
            units=1,
            progress=False,
            warmup_s=0,
            verify_results=False,
            chunk_lead=0,
            chunk_trail=0,
        )
    finally:
        rec.close()
    assert (res.metadata["sweep.chunk_lead"], res.metadata["sweep.chunk_trail"]) == ("0", "0")
    x = res.samples
    ref, rot3 = x[x.flush == "cold-reference"], x[x.flush == "l2-read"]
    assert (ref.flush_s > 0).all() and (rot3.flush_s > 0).all()
    assert list(rot3.buffer_set) == [0, 1, 2, 0, 1, 2]
    launches = list(rec.launches)
    lead = next(i for i, (name, _) in enumerate(launches) if name != "triad")
    assert lead >= 1  # the once-per-sweep warm-up until the clock is stable (unflushed)
    names = [name for name, _ in launches[lead:]]
    # the reference in two parts (warm-up + 1 sample each) around the rotating configuration
    # (warm-up over 3 sets + 6 samples); every launch after an l2-read flush
    assert names == ["hx_read_flush", "triad"] * ((1 + 1) + (3 + 6) + (1 + 1))
    triads = [p for name, p in launches[lead:] if name == "triad"]
    ref_ptrs, rot_ptrs, ref2_ptrs = triads[:2], triads[2:11], triads[11:]
    assert len(set(ref_ptrs)) == 1 and len(set(ref2_ptrs)) == 1
    assert len(set(rot_ptrs[:3])) == 3 and rot_ptrs == rot_ptrs[:3] * 3  # sets 0, 1, 2, then sample j on set j % 3
    assert len({p for name, p in rec.launches if name == "hx_read_flush"}) == 1


def test_a_default_sweep_records_its_chunk_lead_and_trail(dev) -> None:
    res = sweep("triad", "16KiB", [1], ["none"], device=dev, iterations=64, reference=False, progress=False, warmup_s=0)
    assert (res.metadata["sweep.chunk_lead"], res.metadata["sweep.chunk_trail"]) == ("random", "1")
    x = res.samples
    assert set(x["lead"]) == {0, 1}
    assert all(g["lead"].nunique() == 1 for _, g in x.groupby("chunk"))


class _FixedMemory(HostDevice):
    """The real host device reporting a fixed 64 MiB of free memory (of 128 MiB)."""

    def memory_info(self) -> tuple[int, int]:
        return 64 << 20, 128 << 20


def test_rotating_cap_is_the_memory_fraction_and_a_capped_count_warns(dev) -> None:
    d = _FixedMemory(llc_bytes=dev.llc_bytes)
    d.cache = dev.cache
    try:
        # triad at 1 MiB per array: 3 MiB a set; 30% of 64 MiB = 19.2 MiB fits 6 sets of the 10 asked for
        res = sweep(
            "triad",
            "1MiB",
            [2, 10],
            ["none"],
            device=d,
            iterations=10,
            reference_samples=2,
            progress=False,
            warmup_s=0,
            mem_fraction=0.3,
            verify_results=False,
        )
    finally:
        d.close()
    s = res.summary.set_index("rotating_requested")
    cap = int((64 << 20) * 0.3)
    assert (res.summary.rotating_cap_bytes == cap).all()
    assert int(s.loc["2", "rotating"]) == 2 and "capped" not in s.loc["2", "warning"]
    assert int(s.loc["10", "rotating"]) == 6
    assert f"rotating 10 wants 10 sets x {3 << 20} B = {30 << 20} B, over the cap of {cap} B" in s.loc["10", "warning"]
    assert "capped to 6" in s.loc["10", "warning"]


def test_sample_rows_number_iterations_and_resumed_rows_keep_the_reference(dev, tmp_path) -> None:
    out = tmp_path / "i.parquet"
    kw = dict(device=dev, iterations=5, reference_samples=3, out=out, progress=False, warmup_s=0)
    done: list[dict] = []
    # stop right after the first flush mode of the first rotating count: the check sits inside the flush loop
    first = sweep(
        "triad", "16KiB", [1, 2], ["none", "l2-read"], on_result=done.append, should_stop=lambda: len(done) >= 2, **kw
    )
    # (the reference of the group comes last: its parts were taken, so it is kept on stop too)
    assert first.stopped and [r["flush"] for r in done] == ["none", "l2-read", "cold-reference"]
    res = sweep("triad", "16KiB", [1, 2], ["none", "l2-read"], **kw)
    s, x = res.summary, res.samples
    ref_median = float(s[s.flush == "cold-reference"].median_s.iloc[0])
    rest = s[s.flush != "cold-reference"]
    assert len(rest) == 4 and (rest.reference_median_s == ref_median).all()
    assert rest.bias.to_numpy() == pytest.approx((rest.median_s / ref_median - 1).to_numpy())
    for (_flush, _req), rows in x.groupby(["flush", "rotating_requested"]):
        assert list(rows.iteration) == list(range(len(rows)))
    # resume=False starts over: a new run with every configuration measured again
    again = sweep("triad", "16KiB", [1, 2], ["none", "l2-read"], resume=False, **kw)
    assert len(again.summary) == 5 and again.summary.run_id.nunique() == 1
    assert again.summary.run_id.iloc[0] != s.run_id.iloc[0]


def test_flush_factor_sizes_the_flush_and_is_recorded(dev) -> None:
    res = sweep(
        "triad",
        "16KiB",
        [1],
        ["l2-read", "l2-write"],
        device=dev,
        iterations=3,
        reference=False,
        progress=False,
        warmup_s=0,
        flush_factor={"l2-read": 9, "l2-write": 1},
    )
    llc = dev.llc_bytes  # 128 KiB: 9 x -> 1.125 MiB -> 2 MiB; 1 x -> 1 MiB
    assert llc == 128 * KIB
    assert res.metadata["flush.l2-read.bytes"] == str(2 << 20) and res.metadata["flush.l2-write.bytes"] == str(1 << 20)
    assert res.metadata["flush.factor.l2-read"] == "9"
    default = sweep(
        "triad",
        "16KiB",
        [1],
        ["l2-read", "none"],
        device=dev,
        iterations=3,
        reference=False,
        progress=False,
        warmup_s=0,
    )
    assert default.metadata["flush.l2-read.bytes"] == str(1 << 20) and default.metadata["flush.none.bytes"] == "0"


def test_samples_reach_disk_before_their_summary(dev, tmp_path) -> None:
    """A summary row never exists without its samples: with the summary file unwritable (a folder in
    its place) the first configuration's samples are on disk when the summary write fails."""
    out = tmp_path / "o.parquet"
    samples_path, summary_path, _meta = output_paths(out)
    summary_path.mkdir()
    with pytest.raises(ConfigError, match=r"cannot write summary file '.*o\.summary\.parquet': it is a folder"):
        sweep(
            "triad",
            "16KiB",
            [1],
            ["none"],
            device=dev,
            iterations=3,
            reference_samples=2,
            out=out,
            progress=False,
            warmup_s=0,
            units=1,
        )  # one unit: written after each configuration
    written = pd.read_parquet(samples_path)
    assert set(written.flush) == {"none"} and len(written) == 3  # the first configuration's samples


def test_iterations_and_stop_rule_are_exclusive_and_sizes_parse(dev) -> None:
    from hipexplore.bench import StopRule

    with pytest.raises(ConfigError, match="either iterations .* or stop"):
        sweep("triad", "16KiB", 1, "none", device=dev, iterations=4, stop=StopRule(), progress=False)
    assert parse_size("4kB") == 4000 and parse_size("4KiB") == 4096 and parse_size("4k") == 4096
    assert parse_size("2MB") == 2 * 10**6 and parse_size("1GB") == 10**9 and parse_size("1GiB") == 1 << 30
    assert parse_size("1.5MiB") == 3 << 19 and parse_size("512") == 512 and parse_size("512B") == 512
    assert parse_size("1TiB") == 1 << 40  # accepted since issue 15
    for bad in ("0KiB", "-1MiB", "0", 0, -5, "MiB", "1XiB", "nan", "inf"):
        with pytest.raises(ConfigError, match="size"):
            parse_size(bad)


def test_resuming_a_file_written_before_chunk_leads_gives_its_rows_lead_0(dev, tmp_path) -> None:
    import numpy as np

    from hipexplore.schema import SAMPLES, write_parquet

    out = tmp_path / "r.parquet"
    kw = dict(
        device=dev, iterations=8, reference=False, progress=False, warmup_s=0, chunk_lead=0, chunk_trail=0, out=out
    )
    sweep("triad", ["4KiB"], [1], ["none"], **kw)
    meta = json.loads((tmp_path / "r.meta.json").read_text())
    old = pd.read_parquet(out).drop(columns=["lead"])
    write_parquet(old, out, SAMPLES, meta)  # as a file from before the column existed
    res = sweep("triad", ["4KiB", "8KiB"], [1], ["none"], **kw)
    x = res.samples
    assert x["lead"].dtype == np.int64 and (x["lead"] == 0).all() and len(x) == 16
    assert pd.read_parquet(out)["lead"].tolist() == [0] * 16


def test_a_one_pass_summary_row_records_one_pass_its_stop_reason_and_nan_biases(capsys):
    """Why: the row fields a one-pass sweep writes (``passes`` 1, the rule's stop reason, NaN
    bias fields as floats without a reference); the progress bar names the sweep and its unit."""
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=4,
        reference=False,
        progress=True,
        units=1,
        warmup_s=0.0,
        worker=False,
    )
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
    kw2 = {
        **kw,
        "out": out2,
        "reference_samples": 27,
        "chunk": 9,
        "units": 1,
    }  # chunks of 9, not the bootstrap's blocks of 3
    hx.sweep("triad", ["16KiB"], [1], ["none"], progress=False, **kw2)
    res = hx.sweep("triad", ["16KiB"], [1], ["none", "l2-read"], progress=False, **kw2)
    s = res.samples
    ref = s[s["flush"] == "cold-reference"]
    new = s[(s["flush"] == "l2-read") & ~s["dropped"]]
    ratio, lo, hi = ratio_ci(
        Measurement(new["time_s"].to_numpy(), chunks=new["chunk"].to_numpy()),
        Measurement(ref["time_s"].to_numpy(), chunks=ref["chunk"].to_numpy()),
        resamples=1000,
    )
    row = res.summary[res.summary["flush"] == "l2-read"].iloc[0]
    assert (row["bias"], row["bias_ci_low"], row["bias_ci_high"]) == pytest.approx((ratio - 1, lo - 1, hi - 1))


def test_sweeps_list_defaults_are_the_specs_and_it_runs_on_the_best_device_with_a_bar():
    """Why: ``sweep()`` with no arguments measures what ``SweepSpec()`` describes, on ``'auto'``
    (a GPU when one is usable), resuming and with a progress bar (tests/compile/test_cache_contract.py checks the
    other keyword defaults against the spec's)."""
    import inspect

    from hipexplore.bench.sweep import sweep

    p = inspect.signature(sweep).parameters
    spec = SweepSpec()
    assert (
        SweepSpec(
            kernels=p["kernels"].default,
            sizes=p["sizes"].default,
            rotating=p["rotating"].default,
            flush=p["flush"].default,
        )
        == spec
    )
    assert (p["device"].default, p["resume"].default, p["progress"].default) == ("auto", True, True)


def test_a_device_object_gets_the_cache_it_is_given_and_keeps_its_own():
    """Why: ``sweep(device=dev, cache=c)`` builds the kernels through ``c`` when ``dev`` has no
    cache of its own, and leaves a device's own cache in place."""
    from hipexplore.compile.cache import CompileCache

    dev, cache = HostDevice(), CompileCache(disk_dir=False)
    hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device=dev,
        cache=cache,
        iterations=2,
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
    )
    assert dev.cache is cache and cache.stats()["compiled"] + cache.stats()["memory_hits"] >= 1
    other = CompileCache(disk_dir=False)
    hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device=dev,
        cache=other,
        iterations=2,
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
    )
    assert dev.cache is cache


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
    res = hx.sweep(
        "triad", ["16KiB"], device="host", stop=rule, reference=False, progress=False, warmup_s=0.0, worker=False
    )
    got = json.loads(res.metadata["sweep.spec"])["stop"]
    assert (got["min_samples"], got["max_samples"], got["timeout_s"]) == (4, 6, 1.0)
