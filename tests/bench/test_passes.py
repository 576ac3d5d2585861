"""Sweeps in several passes (``SweepSpec.passes``, bench.passes): intervals that cover what changes
between runs, a merged result that is exactly the passes' samples, and the refusals.

The statistics are checked on synthetic samples whose run-to-run structure is known (a shift per
pass drawn anew in every simulated run), the sweep on the real host device."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import cliproc
import hipexplore as hx
from hipexplore.bench import passes as ps
from hipexplore.bench.io import merge_passes
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import Measurement, StopRule
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError
from hipexplore.schema import SUMMARY_COLUMNS


def _run_like(rng, passes, per_pass, between, within, chunk=4):
    """One simulated run: ``passes`` placements, each a shift ~N(0, between), samples ~N(0, within)."""
    shifts = rng.normal(0.0, between, size=passes)
    samples = np.concatenate([10.0 + s + rng.normal(0.0, within, size=per_pass) for s in shifts])
    groups = np.repeat(np.arange(passes), per_pass)
    chunks = np.concatenate([np.arange(per_pass) // chunk + p * 1000 for p in range(passes)])
    return samples, groups, chunks


def test_two_stage_bootstrap_covers_a_shift_between_passes_that_one_stage_misses():
    rng = np.random.default_rng(7)
    medians, implied_two, implied_one = [], [], []
    for _ in range(40):
        x, g, c = _run_like(rng, passes=6, per_pass=60, between=0.05, within=0.02)
        two = Measurement(x, chunks=c, groups=g)
        one = Measurement(x, chunks=c)
        lo2, hi2 = two.bootstrap_ci(resamples=400)
        lo1, hi1 = one.bootstrap_ci(resamples=400)
        medians.append(two.median)
        implied_two.append((hi2 - lo2) / 2 / 1.96)
        implied_one.append((hi1 - lo1) / 2 / 1.96)
    sd = float(np.std(medians, ddof=1))
    # the spread of run medians against what each run's interval implies (issue 9's statistic)
    assert 0.7 <= sd / np.mean(implied_two) <= 1.5
    assert sd / np.mean(implied_one) > 2.5  # one stage: blind to the shift between passes


def test_without_a_shift_two_stage_and_one_stage_agree():
    rng = np.random.default_rng(3)
    x, g, c = _run_like(rng, passes=4, per_pass=100, between=0.0, within=0.02)
    lo2, hi2 = Measurement(x, chunks=c, groups=g).bootstrap_ci(resamples=1000)
    lo1, hi1 = Measurement(x, chunks=c).bootstrap_ci(resamples=1000)
    assert (hi2 - lo2) == pytest.approx(hi1 - lo1, rel=0.35)


def test_measurement_refuses_pass_ids_that_do_not_match_the_samples():
    with pytest.raises(ConfigError, match="3 pass ids for 4 samples"):
        Measurement([1.0, 2.0, 3.0, 4.0], groups=[0, 0, 1])
    assert Measurement([1.0, 2.0], groups=[5, 5]).passes == 1
    assert Measurement([1.0, 2.0]).passes == 1


def test_pass_rule_splits_fixed_counts_and_adaptive_budgets():
    assert ps.pass_rule(StopRule(iterations=200), 4).iterations == 50
    assert ps.pass_rule(StopRule(iterations=201), 4).iterations == 51  # rounded up: at least what was asked
    rule = StopRule(min_samples=20, min_time_s=0.05, timeout_s=10.0, max_samples=100_000)
    r = ps.pass_rule(rule, 4)
    assert (r.min_samples, r.min_time_s, r.timeout_s, r.max_samples) == (5, 0.0125, 2.5, 25_000)
    assert r.target_ci == rule.target_ci and r.iterations is None
    assert ps.pass_rule(rule, 1) is rule
    with pytest.raises(ConfigError, match=r"iterations \(3\) must be at least the number of passes \(4\)"):
        ps.pass_rule(StopRule(iterations=3), 4)


def test_each_pass_after_the_first_holds_a_pad_of_another_size():
    pads = [ps.pad_bytes(k) for k in range(6)]
    assert pads[0] == 0
    assert len(set(pads)) == 6 and all(p >= k * ps.PAD_STEP for k, p in enumerate(pads))


@pytest.mark.parametrize("value", [0, -1, 65, True, 2.0, "two"])
def test_spec_refuses_a_bad_number_of_units(value):
    with pytest.raises(ConfigError, match=f"units must be 'auto' or an integer.*got {value!r}"):
        SweepSpec(kernels=("triad",), sizes=(4096,), units=value)


def test_cli_refuses_zero_passes_with_one_line_and_status_2(tmp_path):
    p = cliproc.run(
        [
            "bench",
            "--device",
            "host",
            "--passes",
            "0",
            "--out",
            str(tmp_path / "r.parquet"),
        ],
        timeout=120,
    )
    assert p.returncode == 2
    assert "--passes" in p.stderr and "'0'" in p.stderr
    assert not (tmp_path / "r.parquet").exists()


@pytest.fixture(scope="module")
def three_passes(tmp_path_factory):
    out = tmp_path_factory.mktemp("passes") / "r.parquet"
    res = hx.sweep(
        "triad",
        ["16KiB", "64KiB"],
        [1],
        ["none", "l2-read"],
        device="host",
        iterations=30,
        units=3,
        reference_samples=12,
        progress=False,
        out=out,
    )
    return res, out


def test_merged_samples_are_every_pass_with_distinct_chunks(three_passes):
    res, _ = three_passes
    s = res.samples
    assert set(s["pass_index"]) == {0, 1, 2}
    for key, g in s.groupby(["size_bytes", "flush", "timer"]):
        counts = g.groupby("pass_index").size()
        want = 4 if key[1] == "cold-reference" else 10  # 12 / 3 reference samples, 30 / 3 iterations per pass
        assert counts.tolist() == [want] * 3, key
        assert sorted(g["iteration"]) == list(range(len(g)))
        # a chunk belongs to one pass only: the bootstrap never joins samples of two passes in a block
        assert g.groupby("chunk")["pass_index"].nunique().max() == 1


def test_merged_summary_is_recomputed_from_the_merged_samples(three_passes):
    res, _ = three_passes
    s, summary = res.samples, res.summary
    assert len(summary) == 6 and set(summary["passes"]) == {3}
    for row in summary.itertuples():
        g = s[(s.size_bytes == row.size_bytes) & (s.flush == row.flush) & (s.timer == row.timer) & ~s.dropped]
        m = Measurement(g["time_s"].to_numpy(), chunks=g["chunk"].to_numpy(), groups=g["pass_index"].to_numpy())
        assert row.n == len(g)
        assert row.median_s == m.median
        lo, hi = m.bootstrap_ci()
        assert (row.ci_low_s, row.ci_high_s) == pytest.approx((lo, hi))
        ref = summary[(summary.size_bytes == row.size_bytes) & (summary.flush == "cold-reference")].iloc[0]
        assert row.bias == pytest.approx(row.median_s / ref.median_s - 1.0)
        assert "fixed iteration count" in row.stop_reason and not row.timed_out


def test_a_finished_multi_pass_file_resumes_as_done_and_refuses_another_pass_count(three_passes, tmp_path):
    res, out = three_passes
    again = hx.sweep(
        "triad",
        ["16KiB", "64KiB"],
        [1],
        ["none", "l2-read"],
        device="host",
        iterations=30,
        units=3,
        reference_samples=12,
        progress=False,
        out=out,
    )
    assert len(again.skipped) == 4
    pd.testing.assert_frame_equal(again.summary.reset_index(drop=True), res.summary.reset_index(drop=True))
    with pytest.raises(ConfigError, match="units"):
        hx.sweep(
            "triad",
            ["16KiB"],
            [1],
            ["none"],
            device="host",
            iterations=30,
            units=2,
            reference_samples=12,
            progress=False,
            out=out,
        )


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
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=4,
        units=2,
        reference_samples=2,
        progress=False,
        out=out,
        warmup_s=0.0,
        worker=False,
    )
    assert res.path == out and not res.stopped and out.exists()
    assert len(res.summary) == 2 and set(res.summary["passes"]) == {2} and set(res.samples["pass_index"]) == {0, 1}
    assert res.metadata["sweep.units_done"] == "2"
    res2 = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=4,
        units=2,
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
    )
    assert res2.path is None and len(res2.summary) == 1


def test_a_multi_pass_sweep_stopped_in_its_first_pass_writes_nothing(tmp_path):
    """Why: a stopped multi-pass sweep returns what it has, makes no further pass, and leaves the
    out file alone (its passes are not written part-way)."""
    for out in (None, tmp_path / "stopped.parquet"):
        calls: list[int] = []
        res = hx.sweep(
            "triad",
            ["16KiB", "32KiB"],
            [1],
            ["none"],
            device="host",
            iterations=4,
            units=3,
            reference=False,
            progress=False,
            out=out,
            warmup_s=0.0,
            worker=False,
            should_stop=lambda: bool(calls.append(1)) or len(calls) > 2,
        )
        assert res.stopped and res.metadata["sweep.units_done"] == "0"
        assert len(res.summary) <= 1
        if out is not None:
            assert not out.exists() and res.path == out


def _one_pass(**kw):
    kw = {"reference": False, **kw}
    return hx.sweep(
        "triad",
        ["16KiB", "32KiB"],
        [1],
        ["none"],
        device="host",
        iterations=6,
        chunk=3,
        progress=False,
        warmup_s=0.0,
        worker=False,
        **kw,
    )


def test_merge_offsets_each_passes_chunks_and_bootstraps_over_passes_and_chunks():
    """Why: ``merge`` on two real one-pass sweeps: chunk ids of pass 1 continue where pass 0's end
    (per configuration), and each merged row's interval is the two-stage bootstrap of its samples."""
    a, b = _one_pass(), _one_pass()
    samples, summary = merge_passes([a.samples, b.samples], [a.summary, b.summary], peak_bandwidth_gbs=1.0)
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
    _, kept = merge_passes([a.samples], [pd.concat([ghost, a.summary], ignore_index=True)], peak_bandwidth_gbs=1.0)
    assert kept["size_bytes"].tolist() == [16384, 32768]
    # one pass that measured nothing merges to nothing
    empty_s, empty_m = merge_passes([a.samples.iloc[:0]], [a.summary.iloc[:0]], peak_bandwidth_gbs=1.0)
    assert len(empty_s) == 0 and len(empty_m) == 0 and list(empty_m.columns) == list(SUMMARY_COLUMNS)


def test_merge_names_the_configuration_of_a_bad_sample():
    a = _one_pass()
    bad = a.samples.copy()
    bad.loc[bad.index[0], "time_s"] = float("nan")
    with pytest.raises(ConfigError, match="triad 16384 1 none events"):
        merge_passes([bad], [a.summary], peak_bandwidth_gbs=1.0)


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
    samples, summary = merge_passes([sa, sb], [ma, mb], peak_bandwidth_gbs=7.0)
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
    _, alone = merge_passes(no_ref_s, no_ref, peak_bandwidth_gbs=7.0)
    assert alone["bias"].isna().all() and alone["reference_median_s"].isna().all()
    # the host's clocks are NaN: the merged clock is NaN, with no all-NaN warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, host = merge_passes([a.samples, b.samples], [a.summary, b.summary], peak_bandwidth_gbs=7.0)
    assert host["clock_mhz"].isna().all()


def test_pad_jitter_takes_every_step_from_1_to_31():
    """Why: the pad's jitter is 1..31 steps of PAD_JITTER (never 0: a pass's pad always differs
    from the plain k * PAD_STEP)."""
    jitters = {(ps.pad_bytes(k, seed) - k * ps.PAD_STEP) // ps.PAD_JITTER for k in range(1, 9) for seed in range(60)}
    assert jitters == set(range(1, 32))


def test_an_adaptive_rule_split_over_many_passes_keeps_at_least_one_sample_each():
    r = ps.pass_rule(StopRule(min_samples=1, max_samples=3), 4)
    assert (r.min_samples, r.max_samples) == (1, 1)
