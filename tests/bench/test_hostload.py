"""hipexplore.bench.hostload: how busy the host was over a sweep's chunks, and whether the spread tracks it.

The readings are a real host sweep's (``devices.telemetry.HostLoad`` after every chunk); where a test
needs a load it cannot order from a shared machine (every chunk quiet, or busy chunks that are the
noisy ones), it keeps the sweep's chunks and sets their load and times: a fake timer for statistics.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from hipexplore.bench import sweep
from hipexplore.bench.hostload import MIN_CHUNKS, TRACK_P, chunk_frame, cores_of, load_summary, rank_correlation


@pytest.fixture(scope="module")
def run():
    # no flush and no cold reference: an L2-read flush reads past a large LLC (480 MiB here) every launch
    return sweep("triad", ["64KiB"], [1, 2], ["none"], device="host", iterations=48, progress=False, reference=False)


def test_a_host_sweep_records_the_load_and_the_report_reads_it_against_its_cores(run):
    cores = cores_of(run.metadata)
    assert cores == os.cpu_count()
    found = load_summary(run.samples, cores)
    chunks = chunk_frame(run.samples)
    assert found is not None and found.chunks == len(chunks) > MIN_CHUNKS
    # busy is the other runnable tasks at a chunk's reading against the cores, chunk by chunk
    assert found.busy_chunks == int((chunks["load"] >= cores).sum())
    assert found.load_min <= found.load_median <= found.load_max
    text = found.sentence()
    assert f"a chunk is busy when they are at least the host's {cores} cores" in text
    assert f"busy in {found.busy_chunks} of {found.chunks} chunks" in text
    assert ("The spread tracks the load" in text) == found.tracks and "rank correlation of each chunk's spread" in text
    # one kernel and size of it, as the report's table shows: fewer chunks, the same rule
    one = load_summary(run.samples, cores, kernel="triad", size_bytes=64 * 1024)
    assert one is not None and one.chunks == found.chunks
    assert load_summary(run.samples, cores, size_bytes=1 << 20) is None  # no such size: nothing said


def test_files_without_readings_or_cores_say_what_they_can(run):
    assert load_summary(run.samples.drop(columns=["host_load"]), 2) is None
    assert load_summary(run.samples.assign(host_load=np.nan), 2) is None
    found = load_summary(run.samples, None)
    assert found is not None and found.busy_chunks == 0 and not found.notable
    assert "the core count was not recorded" in found.sentence() and "not judged" in found.answer()
    assert cores_of({}) is None and cores_of({"cpu_count": ""}) is None and cores_of({"cpu_count": "16"}) == 16


def relabelled(samples: pd.DataFrame, load_of_chunk, slow_of_chunk=None) -> pd.DataFrame:
    """The sweep's samples with each chunk's load set by ``load_of_chunk(i)`` (i: the chunk's number in
    order) and, where ``slow_of_chunk(i)``, one launch of it 3x its configuration's median (a time slice
    lost to another task)."""
    s = samples[samples["flush"] != "cold-reference"].copy()
    keys = ["rotating_requested", "flush", "pass_index", "chunk"]
    order = s.groupby(keys, sort=True).ngroup()
    s["host_load"] = [float(load_of_chunk(i)) for i in order]
    med = s.groupby(["rotating_requested", "flush"])["time_s"].transform("median")
    s["time_s"] = med  # every launch at its configuration's median: only the slowed launches spread
    if slow_of_chunk is not None:
        first = ~s.duplicated(keys)
        slow = first & np.array([bool(slow_of_chunk(i)) for i in order])
        s.loc[slow, "time_s"] = 3 * med[slow]
    return s


def test_busy_chunks_that_are_the_noisy_ones_track_the_load_and_quiet_hosts_are_said_so(run):
    """Every other chunk busy (4 runnable others on 2 cores) and slowed: the spread tracks the load,
    and the first screen's sentence names it; the same chunks with the slow launches spread over
    quiet and busy alike do not track it; a load below the cores is quiet (one core left free)."""
    tracking = load_summary(relabelled(run.samples, lambda i: 4 * (i % 2), lambda i: i % 2), cores=2)
    assert tracking.busy_chunks == tracking.chunks // 2 or tracking.busy_chunks == (tracking.chunks + 1) // 2
    assert tracking.tracks and tracking.rho > 0.5 and tracking.p_value <= TRACK_P
    assert tracking.noise_busy > tracking.noise_quiet and tracking.notable
    assert tracking.answer().startswith("Host load: the host was busy in ")
    assert tracking.answer().endswith(
        "(other tasks wanted all 2 cores); the spread tracks the load, so a quieter host would give tighter numbers."
    )
    assert "The spread tracks the load (rank correlation" in tracking.sentence()
    assert "in busy chunks against 0.0% in quiet ones" in tracking.sentence()

    spread = load_summary(relabelled(run.samples, lambda i: 4 * (i % 2), lambda i: (i // 2) % 2), cores=2)
    assert not spread.tracks and spread.busy_chunks > 0
    assert spread.answer().endswith("; the spread does not track the load.")

    quiet = load_summary(relabelled(run.samples, lambda i: 1), cores=2)  # one other task on 2 cores: a core is free
    assert quiet.busy_chunks == 0 and not quiet.notable
    assert quiet.answer() == "Host load: the host was quiet: no chunk had other tasks wanting all 2 cores."
    busy = load_summary(relabelled(run.samples, lambda i: 2), cores=2)
    assert busy.busy_chunks == busy.chunks and busy.notable
    assert "busy in every chunk" in busy.answer() and "not tested" in busy.sentence()  # a constant load: no rank test


def test_rank_correlation_is_spearmans_with_ties_and_refuses_too_few_pairs():
    x = np.arange(20.0)
    rho, p, n = rank_correlation(x, x**3)
    assert (rho, n) == (pytest.approx(1.0), 20) and p < 1e-4
    rho, p, _ = rank_correlation(x, -x)
    assert rho == pytest.approx(-1.0)
    rho, _, _ = rank_correlation(np.repeat([0.0, 1.0], 10), np.r_[np.zeros(10), np.ones(10)])
    assert rho == pytest.approx(1.0)
    assert np.isnan(rank_correlation(x[: MIN_CHUNKS - 1], x[: MIN_CHUNKS - 1])[0])
    assert np.isnan(rank_correlation(np.ones(20), x)[0])
