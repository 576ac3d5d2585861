"""The replay's ``scheduled`` granularity: list entries handed to workers so that no worker waits on
a kernel another worker is compiling while other work is queued.

Why: with candidate granularity a worker that reaches a tail another worker is compiling *joins*
it and idles, though GEMMs of later candidates are waiting (on the H200 the NVRTC list's memory
pass ran 1.28x the ideal at 8 jobs for that reason). Here every worker takes the first queued entry
whose request is not in flight on another worker; entries whose request is in flight are passed
over and taken later, when they are memory hits. Only when everything left is in flight does a
worker wait, and then for the first compile to finish (not for a particular one), re-scanning the
queue. List order is kept otherwise, so the pass still walks the list the way a tuner does.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable, Sequence

from .lists import ListEntry, TuningList


def run_scheduled(
    entries: Sequence[Any], fn: Callable[[Any], None], jobs: int, key: Callable[[Any], Hashable] = lambda e: e.request
) -> float:
    """Call ``fn`` on every entry with ``jobs`` threads, never starting one whose ``key`` is being
    worked on by another thread while an entry with a free key is queued; returns the wall time.
    ``fn`` records its own errors (an exception from it is re-raised after all threads stop)."""
    queue = list(entries)
    busy: set[Hashable] = set()
    cond = threading.Condition()
    errors: list[BaseException] = []

    def take() -> Any | None:
        with cond:
            while True:
                if not queue or errors:
                    return None
                for i, e in enumerate(queue):
                    if key(e) not in busy:
                        busy.add(key(e))
                        return queue.pop(i)
                cond.wait()  # everything queued is in flight: wait for any compile to finish

    def worker() -> None:
        while True:
            e = take()
            if e is None:
                return
            try:
                fn(e)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller after the others stop
                with cond:
                    errors.append(exc)
            finally:
                with cond:
                    busy.discard(key(e))
                    cond.notify_all()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, name=f"hx-sched-{i}", daemon=True) for i in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def _run_all(items: Sequence[Any], fn: Callable[[Any], None], jobs: int) -> float:
    """Call ``fn`` on every item (a thread pool of ``jobs`` when > 1, in list order) and return
    the wall time. Errors are the callee's to record; they never stop the others."""
    t0 = time.perf_counter()
    if jobs == 1:
        for it in items:
            fn(it)
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hx-replay") as pool:
            for fut in [pool.submit(fn, it) for it in items]:
                fut.result()
    return time.perf_counter() - t0


def candidate_groups(tuning_list: TuningList) -> list[list[ListEntry]]:
    """The list split into candidates (consecutive entries of one problem and candidate)."""
    groups: list[list[ListEntry]] = []
    for e in tuning_list.entries:
        if groups and (groups[-1][0].problem, groups[-1][0].candidate) == (e.problem, e.candidate):
            groups[-1].append(e)
        else:
            groups.append([e])
    return groups


def run_tasks(
    tuning_list: TuningList, one: Callable[[Sequence[ListEntry]], None], jobs: int, granularity: str
) -> float:
    """Run ``one`` over the list's entries in units of ``granularity`` with ``jobs`` at once."""
    if granularity == "scheduled":
        return run_scheduled(tuning_list.entries, lambda e: one([e]), jobs)
    return _run_all(
        candidate_groups(tuning_list) if granularity == "candidate" else [[e] for e in tuning_list.entries], one, jobs
    )
