"""``hipexplore.tuning.schedule``: the replay's scheduler passes over work whose kernel is already
in flight (the order set by events, not by sleeps: independent of the machine's load)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(120)


def test_scheduler_passes_over_work_in_flight():
    """While A compiles on one worker, the other takes B and C, not the second A (which then hits)."""
    import threading
    import time as _time

    from hipexplore.tuning.schedule import run_scheduled

    log: list[tuple[str, str, float]] = []
    lock = threading.Lock()
    # the order is set by events, not by sleeps (issue 26.6: "A takes 0.3 s, B 0.02 s" relied on the
    # machine keeping that ratio): the first A is under way before B starts, and ends only after C
    a_started, c_ended = threading.Event(), threading.Event()

    def fn(item: tuple[int, str]) -> None:
        if item == (2, "B"):
            assert a_started.wait(30)
        with lock:
            log.append(("start", item[1], _time.perf_counter()))
        if item == (0, "A"):
            a_started.set()
            c_ended.wait(30)  # a scheduler that never runs C while A compiles fails below, after 30 s
        with lock:
            log.append(("end", item[1], _time.perf_counter()))
        if item == (3, "C"):
            c_ended.set()

    items = [(0, "A"), (1, "A"), (2, "B"), (3, "C")]
    run_scheduled(items, fn, 2, key=lambda it: it[1])
    starts = [k for ev, k, _ in log if ev == "start"]
    assert starts == ["A", "B", "C", "A"]  # the second A waited for nothing while B and C were queued
    events = [(ev, k) for ev, k, _ in log]
    assert events.index(("end", "A")) < len(events) - 2 and events[-2:] == [("start", "A"), ("end", "A")]
