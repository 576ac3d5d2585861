"""The orchestrator (bench.orchestrator): every finished (configuration, unit) is on disk when it
finishes, an interrupt says what was kept, and the same command measures only what is missing.

Real processes are interrupted: the real ``hipexplore bench`` CLI measures a host sweep in 3 units
(2 sizes x (2 rotating counts + the cold reference) = 6 configurations, 18 (configuration, unit)s);
the test waits until the units file holds N of them, sends SIGINT, SIGTERM or SIGKILL, then runs
the same command again. Afterwards every configuration and unit is there exactly once, the
(configuration, unit)s the first process kept are byte for byte what it measured (the rerun timed
only the missing ones), and every summary row is the one-shot merge of its units (no mixed row).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest

import cliproc
import hipexplore as hx
from hipexplore.bench import passes as ps
from hipexplore.bench.io import merge_passes, output_paths, read_results, read_units
from hipexplore.schema import Configuration

ROOT = Path(__file__).resolve().parents[2]
UNITS, ITERATIONS, REFERENCE = 3, 12, 6
PAIRS = 6 * UNITS


def bench_argv(out: Path, *more: str) -> list[str]:
    return [
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "16KiB,32KiB",
        "--rotating",
        "1,2",
        "--flush",
        "none",
        "--iterations",
        str(ITERATIONS),
        "--reference-samples",
        str(REFERENCE),
        "--units",
        str(UNITS),
        "--warmup-s",
        "0",
        "--out",
        str(out),
        *more,
    ]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HIPEXPLORE_SWEEP_WORKER"}
    return {**env, "PYTHONPATH": str(ROOT), "HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache"), **extra}


def committed(out: Path) -> tuple[set[tuple[Configuration, int]], pd.DataFrame]:
    """(configuration, unit)s the files commit, and their samples (what the reader keeps)."""
    paths = output_paths(out)
    got = read_results(paths)
    units = read_units(paths)
    if got is None or units is None:
        return set(), pd.DataFrame()
    return set(zip(Configuration.of_frame(units), units["pass_index"].astype(int))), got[0]


def wait_for_pairs(proc: subprocess.Popen, out: Path, n: int, timeout: float = 240.0) -> None:
    import pyarrow.parquet as pq

    path = output_paths(out)[0].with_name(out.stem + ".units.parquet")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, (
            f"the sweep ended before {n} (configuration, unit)s: {proc.communicate()[1][-2000:]}"
        )
        try:
            if path.exists() and pq.read_metadata(path).num_rows >= n:
                return
        except Exception:  # noqa: BLE001 - replaced while being read: look again
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {n} (configuration, unit)s within {timeout} s")


def one_shot_merge(out: Path) -> pd.DataFrame:
    """Every configuration's row merged at once from its units, as a sweep that never stopped merges them."""
    paths = output_paths(out)
    samples, _summary, _meta = read_results(paths)
    units = read_units(paths)
    local = ps.unstack(samples)
    frames = [local.get(k, samples.iloc[:0]) for k in range(max(local) + 1)]
    rows = [units[units["pass_index"] == k].drop(columns=["pass_index"]) for k in range(max(local) + 1)]
    return merge_passes(frames, rows, peak_bandwidth_gbs=float(units["peak_bandwidth_gbs"].iloc[0]))[1]


def check_every_pair_once(out: Path) -> pd.DataFrame:
    pairs, samples = committed(out)
    summary = pd.read_parquet(output_paths(out)[1])
    assert len(summary) == 6 and summary[list(Configuration.COLUMNS)].drop_duplicates().shape[0] == 6
    assert set(summary["passes"]) == {UNITS}
    assert len(pairs) == PAIRS and {k for _c, k in pairs} == set(range(UNITS))
    per_pair = samples.groupby([*Configuration.COLUMNS, "pass_index"]).size()
    assert len(per_pair) == PAIRS
    refs = per_pair.index.get_level_values("flush") == "cold-reference"
    assert (per_pair[~refs] == ITERATIONS // UNITS).all() and (per_pair[refs] == REFERENCE // UNITS).all(), per_pair
    merged = one_shot_merge(out).set_index(list(Configuration.COLUMNS)).sort_index()
    on_disk = summary.set_index(list(Configuration.COLUMNS)).sort_index()
    stats = [
        "n",
        "passes",
        "median_s",
        "ci_low_s",
        "ci_high_s",
        "iqr_rel",
        "bias",
        "bias_ci_low",
        "bias_ci_high",
        "stop_reason",
        "n_throttled",
    ]
    pd.testing.assert_frame_equal(on_disk[stats], merged[stats], check_dtype=False)
    return samples


@contextlib.contextmanager
def sigint_not_ignored() -> Iterator[None]:
    """SIGINT caught here while the sweep's process starts, so that it starts with SIGINT's default
    (exec resets a caught signal and keeps an ignored one). Run from a background job (a script's
    ``cmd &``), pytest ignores SIGINT, so would the sweep, and rightly: the test's Ctrl-C would not be one."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupt_then_rerun(
    tmp_path: Path, env: dict[str, str], sig: int, point: int, *more: str, group: bool = False
) -> None:
    """``group``: the signal goes to the whole process group, as a Ctrl-C at a terminal does (every
    process the sweep started gets it too); then no traceback may reach stderr."""
    out = tmp_path / "r.parquet"
    argv = [sys.executable, "-m", "hipexplore", *bench_argv(out, "--json", *more)]
    with sigint_not_ignored():
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=group
        )
    try:
        wait_for_pairs(proc, out, point)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    kept_pairs, kept_samples = committed(out)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig, stderr[-3000:]
        line = stderr.strip().splitlines()[-1]
        assert "interrupted" in line and "only the rest" in line, line
        assert f"keeps {len(kept_pairs)} of {PAIRS} (configuration, unit)s" in line, line  # what the files keep
        if group:
            assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert point <= len(kept_pairs) < PAIRS  # interrupted where it was: part of the sweep is kept
    again = cliproc.run(argv[3:], env=env, timeout=600)  # the same command, in a process forked from a preloaded one
    assert again.returncode == 0, again.stderr[-3000:]
    samples = check_every_pair_once(out)
    for c, k in kept_pairs:  # kept as measured: the rerun did not time these again
        mine = Configuration.select(kept_samples, [c])
        now = Configuration.select(samples, [c])
        assert list(now[now["pass_index"] == k]["time_s"]) == list(mine[mine["pass_index"] == k]["time_s"]), (c, k)


@pytest.mark.parametrize(
    "sig, point", [(signal.SIGINT, 1), (signal.SIGTERM, 8), (signal.SIGINT, 14), (signal.SIGKILL, 5)]
)
def test_an_interrupted_sweep_in_units_keeps_what_finished_and_the_rerun_measures_only_the_rest(tmp_path, sig, point):
    interrupt_then_rerun(tmp_path, environment(tmp_path), sig, point)


@pytest.mark.parametrize("sig, point", [(signal.SIGTERM, 2), (signal.SIGINT, 11)])
def test_units_in_worker_processes_interrupted_keep_what_finished(tmp_path, sig, point):
    interrupt_then_rerun(tmp_path, environment(tmp_path, HIPEXPLORE_SWEEP_WORKER="1"), sig, point)


def test_a_kill_after_a_references_last_unit_reached_only_the_units_file_leaves_no_stale_bias(tmp_path):
    """SIGKILLed after the units file took the 16 KiB reference's last unit and before the summary did
    (the 15th pair: the 16 KiB rotating rows are whole on disk, their biases taken against the
    reference's first two units). The resume merges that reference again from its units and must
    take every bias against it again: it kept the rotating rows' old biases, and the rerun, which
    measures only the 32 KiB rows, never touched them (the summary's bias differed from a one-shot
    merge for the 16 KiB rows)."""
    from .test_resume_kills import KILLER

    out = tmp_path / "r.parquet"
    env = environment(tmp_path)
    argv = bench_argv(out, "--json")
    killed = cliproc.run(["units", "15", *argv], code=KILLER, env=env, timeout=600)  # python -c KILLER ...
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    pairs, _samples = committed(out)
    reference = Configuration("triad", 16384, "1", "cold-reference", "events")
    summary = pd.read_parquet(output_paths(out)[1])
    assert len(pairs) == 15 and (reference, 2) in pairs  # the units file has it ...
    assert int(Configuration.select(summary, [reference])["passes"].iloc[0]) == 2  # ... the summary does not
    again = cliproc.run(argv, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    check_every_pair_once(out)


def test_progress_advances_per_configuration_and_unit_with_the_time_left(tmp_path):
    seen = []
    out = tmp_path / "p.parquet"
    kw = dict(
        device="host",
        iterations=ITERATIONS,
        reference_samples=REFERENCE,
        units=UNITS,
        warmup_s=0.0,
        progress=False,
        out=out,
    )
    hx.sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none"], on_progress=seen.append, **kw)
    assert [p.done for p in seen] == list(range(1, PAIRS + 1)) and {p.total for p in seen} == {PAIRS}
    assert all(p.left_s >= 0 for p in seen) and seen[-1].left_s == 0 and "18/18" in seen[-1].text()
    # a grown sweep starts where the file stands: the kept (configuration, unit)s are done already
    grown: list = []
    hx.sweep("triad", ["16KiB", "32KiB", "48KiB"], [1, 2], ["none"], on_progress=grown.append, **kw)
    assert [p.done for p in grown] == list(range(PAIRS + 1, PAIRS + 9 + 1)) and grown[-1].total == PAIRS + 9


def test_the_cli_bar_counts_configurations_and_units_as_they_finish(tmp_path):
    out = tmp_path / "b.parquet"
    run = cliproc.run(bench_argv(out), env=environment(tmp_path), timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    import re

    counts = [int(m) for m in re.findall(rf"\| *(\d+)/{PAIRS} \[", run.stderr)]
    assert counts and counts == sorted(counts) and counts[0] == 0
    assert len({c for c in counts if 0 < c < PAIRS}) >= 3, counts  # it moved while the sweep ran
    assert re.search(r"<\d\d:\d\d", run.stderr)  # with the time left


def test_one_unit_sweeps_write_no_units_file_and_a_no_resume_run_removes_a_stale_one(tmp_path):
    out = tmp_path / "o.parquet"
    kw = dict(device="host", iterations=6, reference=False, warmup_s=0.0, progress=False, out=out)
    hx.sweep("triad", ["16KiB"], [1], ["none"], units=2, **kw)
    assert read_units(output_paths(out)) is not None
    hx.sweep("triad", ["16KiB"], [1], ["none"], units=1, resume=False, **kw)
    assert read_units(output_paths(out)) is None and len(pd.read_parquet(output_paths(out)[1])) == 1


@pytest.mark.parametrize(
    "sig, point, group", [(signal.SIGINT, 3, False), (signal.SIGTERM, 9, False), (signal.SIGINT, 4, True)]
)
def test_a_cluster_sweep_interrupted_keeps_its_finished_units_and_the_rerun_measures_only_the_rest(
    tmp_path, sig, point, group
):
    """``group``: a Ctrl-C at the terminal, which reaches the Dask workers as well: one line, no
    worker's KeyboardInterrupt traceback."""
    from conftest import need_module

    need_module("distributed")
    interrupt_then_rerun(tmp_path, environment(tmp_path), sig, point, "--cluster", "local:2", group=group)


@pytest.mark.timeout(300)
def test_extra_units_grow_the_progress_total(tmp_path):
    """``--resolution``'s extra units join the total as they are planned: the bar never sits at 100%
    while they run, and it ends at every (configuration, unit) measured. (A resolution no host
    reaches and a budget that affords at least one extra unit: how many run is the host's business.)"""
    seen = []
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=ITERATIONS,
        units=UNITS,
        reference=False,
        warmup_s=0.0,
        progress=False,
        worker=False,
        resolution=0.0001,
        resolution_budget=1.0,
        on_progress=seen.append,
    )
    measured = res.samples["pass_index"].nunique()
    assert measured > UNITS, res.metadata.get("units.resolution_outcome")  # at least one extra unit ran
    assert [p.done for p in seen] == list(range(1, measured + 1))
    # each extra unit's (configuration, unit) joined the total when the unit started, before it was done
    assert [p.total for p in seen] == [UNITS] * UNITS + list(range(UNITS + 1, measured + 1))


def _units_entries(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k.startswith(("sweep.unit", "units."))}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["stopped", "interrupted"])
def test_an_interrupted_sweeps_units_metadata_reads_back(tmp_path, how):
    """A sweep in units stopped (the hooks: the panel's Stop button) or interrupted (Ctrl-C: a
    KeyboardInterrupt) inside its second unit: the files say how far the units got (units done,
    each started unit's pad) and that the resolution was not reached, naming the configuration
    with one unit only; the result says the same, and the reader reads it back."""
    out = tmp_path / "i.parquet"
    seen: list = []

    def on_result(row):
        seen.append(row)
        if how == "interrupted" and len(seen) == 3:
            raise KeyboardInterrupt

    kw = dict(
        device="host",
        iterations=ITERATIONS,
        units=UNITS,
        reference=False,
        warmup_s=0.0,
        progress=False,
        worker=False,
        resolution=0.0001,
        out=out,
        on_result=on_result,
    )
    if how == "stopped":
        res = hx.sweep("triad", ["16KiB", "32KiB"], [1], ["none"], should_stop=lambda: len(seen) >= 3, **kw)
        assert res.stopped
    else:
        with pytest.raises(KeyboardInterrupt) as exc:
            hx.sweep("triad", ["16KiB", "32KiB"], [1], ["none"], **kw)
        res = exc.value.sweep_result
    meta = read_results(output_paths(out))[2]
    units = _units_entries(meta)
    assert units == _units_entries(res.metadata), (units, _units_entries(res.metadata))
    assert units["sweep.units_done"] == "1" and units["sweep.units_planned"] == str(UNITS)
    assert units["sweep.unit_pad_bytes"] == ",".join(str(ps.pad_bytes(k)) for k in range(2))  # units 0 and 1 started
    assert units["sweep.unit_location"] == "in-process" and units["units.resolution"] == "0.01%"
    outcome = units["units.resolution_outcome"]
    assert (
        outcome.startswith("not reached: stopped by the sweep was stopped; ")
        and "with fewer than 2 units (no half-width yet): triad 32768 r=1 none events" in outcome
    ), outcome
    from hipexplore.bench.runinfo import RunInfo

    info = RunInfo.from_metadata(meta).units
    assert (info.done, info.planned, info.pad_bytes) == (1, UNITS, [ps.pad_bytes(0), ps.pad_bytes(1)])
