"""``hipexplore.bench.result``: what a sweep returns and the callbacks it calls: the typed view of
its metadata, the progress line, and hooks that are all optional."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hipexplore.bench.result import SweepHooks, SweepProgress, SweepResult

pytestmark = pytest.mark.timeout(30)


def test_the_progress_line_counts_units_and_says_the_time_left_once_known():
    assert SweepProgress(12, 42, 31.4, 68.2).text() == "12/42 (configuration, unit)s, 31 s, about 1 min 8 s left"
    assert SweepProgress(0, 42, 0.2, math.nan).text() == "0/42 (configuration, unit)s, 0 s"  # no pace yet
    assert SweepProgress(42, 42, 125.0, 0.0).text() == "42/42 (configuration, unit)s, 2 min 5 s, about 0 s left"
    assert SweepProgress(1, 2, -3.0, 1.0).text().startswith("1/2 (configuration, unit)s, 0 s")  # never negative


def test_hooks_are_optional_and_the_result_reads_its_metadata_typed():
    hooks = SweepHooks()
    hooks.started(["triad", "16 KiB"])  # no on_start: nothing to call
    assert hooks.stop_now() is False and SweepHooks(should_stop=lambda: 1).stop_now() is True
    res = SweepResult(
        pd.DataFrame(),
        pd.DataFrame(),
        {
            "run_id": "r1",
            "sweep.units_planned": "3",
            "sweep.units_done": "2",
            "sweep.unit_pad_bytes": "0,4096",
            "cluster.workers": "a,b",
        },
    )
    info = res.info
    assert info.run_id == "r1" and (info.units.planned, info.units.done, info.units.pad_bytes) == (3, 2, [0, 4096])
    assert info.cluster is not None and info.cluster.workers == ["a", "b"]
    assert res.path is None and res.stopped is False and res.skipped == []
