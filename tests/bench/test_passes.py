"""Sweeps in several passes (``SweepSpec.passes``, bench.passes): intervals that cover what changes
between runs, a merged result that is exactly the passes' samples, and the refusals.

The statistics are checked on synthetic samples whose run-to-run structure is known (a shift per
pass drawn anew in every simulated run), the sweep on the real host device."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import hipexplore as hx
from hipexplore.bench import passes as ps
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import Measurement, StopRule
from hipexplore.errors import ConfigError


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
    p = subprocess.run([sys.executable, "-m", "hipexplore", "bench", "--device", "host", "--passes", "0",
                        "--out", str(tmp_path / "r.parquet")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "--passes" in p.stderr and "'0'" in p.stderr
    assert not (tmp_path / "r.parquet").exists()


@pytest.fixture(scope="module")
def three_passes(tmp_path_factory):
    out = tmp_path_factory.mktemp("passes") / "r.parquet"
    res = hx.sweep("triad", ["16KiB", "64KiB"], [1], ["none", "l2-read"], device="host", iterations=30, units=3,
                   reference_samples=12, progress=False, out=out)
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
    again = hx.sweep("triad", ["16KiB", "64KiB"], [1], ["none", "l2-read"], device="host", iterations=30, units=3,
                     reference_samples=12, progress=False, out=out)
    assert len(again.skipped) == 4
    pd.testing.assert_frame_equal(again.summary.reset_index(drop=True), res.summary.reset_index(drop=True))
    with pytest.raises(ConfigError, match="units"):
        hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=30, units=2, reference_samples=12,
                 progress=False, out=out)


def pass_in_worker(one, dev, *, hooks, run_id, done, metadata, pad=0):
    """One pass as the sweep runs it on a GPU: one unit in a worker process of its own
    (``bench.executors.WorkerExecutor``), recorded into ``metadata`` (the sweep's)."""
    from hipexplore.bench.executors import UnitRun, WorkerExecutor
    from hipexplore.bench.record import Collector
    from hipexplore.bench.units import UnitJob

    unit = Collector(metadata, hooks=hooks)
    stopped = WorkerExecutor(dev).run_unit(UnitRun(UnitJob(one, 0, frozenset(done)), run_id, pad_bytes=pad), unit)
    return unit.result(stopped)


def test_a_pass_in_its_own_worker_leaves_out_what_is_done_and_keeps_its_telemetry_source():
    # on a GPU every pass runs this way (the event floor is per process); the host device runs it too
    from hipexplore.devices import get_device

    dev = get_device("host")
    one = SweepSpec(kernels=("triad",), sizes=(4096, 16384), flush=("none",), stop=StopRule(iterations=8), reference=False)
    meta: dict[str, str] = {"sweep.spec": "outer"}
    res = pass_in_worker(one, dev, hooks=None, run_id="r1", done={("triad", 4096, "1", "none", "events")}, metadata=meta)
    assert res.summary["size_bytes"].tolist() == [16384]
    assert set(res.samples["size_bytes"]) == {16384} and len(res.samples) == 8
    assert set(res.summary["run_id"]) == {"r1"}
    assert meta["sweep.spec"] == "outer" and "telemetry.source" in meta


def test_a_pass_in_its_own_worker_holds_its_pad_there_and_the_sweep_records_every_pad():
    from hipexplore.devices import get_device

    dev = get_device("host")
    one = SweepSpec(kernels=("triad",), sizes=(4096,), flush=("none",), stop=StopRule(iterations=8), reference=False)
    meta: dict[str, str] = {}
    res = pass_in_worker(one, dev, hooks=None, run_id="r2", done=set(), metadata=meta, pad=ps.pad_bytes(2))
    assert res.metadata["worker.pad_bytes"] == str(ps.pad_bytes(2)) == meta["worker.pad_bytes"]
    res0 = pass_in_worker(one, dev, hooks=None, run_id="r3", done=set(), metadata={}, pad=0)
    assert "worker.pad_bytes" not in res0.metadata  # the first pass holds none
    res3 = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=9, units=3, reference=False, progress=False)
    assert res3.metadata["sweep.unit_pad_bytes"] == ",".join(str(ps.pad_bytes(k)) for k in range(3))
