"""hipexplore.bench.progress: a sweep's progress in (configuration, unit)s with the time left at
this run's pace. ``clock`` is the documented hook for a deterministic clock."""

from __future__ import annotations

import io
import math

import pytest

from hipexplore.bench.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.timeout(30)
def test_time_left_is_this_runs_pace_over_the_steps_left():
    clock, seen = Clock(), []
    p = Progress(10, hook=seen.append, clock=clock)
    st = p.state()
    assert (st.done, st.total) == (0, 10) and math.isnan(st.left_s)  # no pace yet
    clock.t += 4.0
    p.advance(2)
    assert (seen[-1].done, seen[-1].total, seen[-1].elapsed_s) == (2, 10, 4.0)
    assert seen[-1].left_s == pytest.approx(16.0)  # 2 s a step, 8 steps left
    clock.t += 2.0
    p.advance()
    assert seen[-1].left_s == pytest.approx(6.0 / 3 * 7)
    assert len(seen) == 2  # the hook is called once per advance


@pytest.mark.timeout(30)
def test_a_resumed_run_paces_only_the_steps_it_ran():
    clock = Clock()
    p = Progress(10, done=6, clock=clock)  # 6 done before (resume): not this run's pace
    assert math.isnan(p.state().left_s)
    clock.t += 3.0
    p.advance()
    st = p.state()
    assert (st.done, st.left_s) == (7, pytest.approx(9.0))  # 3 s for 1 step, 3 left
    assert Progress(4, done=9).done == 4  # done never exceeds total


@pytest.mark.timeout(30)
def test_grow_adds_planned_steps_and_advance_stops_at_total():
    clock = Clock()
    p = Progress(3, clock=clock)
    p.advance(5)
    assert p.done == 3
    p.grow(2)
    p.grow(0)
    p.grow(-4)  # never shrinks
    assert p.total == 5 and p.state().total == 5
    clock.t += 6.0
    p.advance()
    assert p.done == 4 and p.state().left_s == pytest.approx(6.0 / 4 * 1)


@pytest.mark.timeout(60)
def test_the_bar_counts_units_on_stderr(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)  # where tqdm writes; the bar itself is real
    p = Progress(4, done=1, bar=True, units=True)
    assert p.bar is not None and p.bar.total == 4 and p.bar.n == 1 and p.bar.unit == "config-unit"
    p.advance()
    p.grow(3)
    assert p.bar.n == 2 and p.bar.total == 7
    p.close()
    assert "hipexplore sweep" in err.getvalue()
    assert Progress(2, bar=True).bar.unit == "config"
    assert Progress(2).bar is None
