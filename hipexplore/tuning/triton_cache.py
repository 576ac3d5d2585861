"""Triton's own on-disk cache (``TRITON_CACHE_DIR``) timed over the same tuning list, beside ours.

Why: a Triton tuner already has a cache — ``triton.compile`` looks its key up in
``TRITON_CACHE_DIR`` before compiling. What our cache adds over it is the question the report must
answer, so the replay runs the list twice through Triton's cache alone (``triton-cold``: an empty
directory, repeats of a kernel hit; ``triton-warm``: the same directory again, every entry should
hit), with the same workers, jobs and granularity as our passes. Rows are shaped like cache events:
``compiled`` when Triton compiled, ``disk-hit`` when its cache answered (its compilation listener
says which), ``failed`` on an error.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import replace
from typing import Sequence

from ..compile.events import CacheEvent, events_frame
from ..compile.isolation import IsolatedCompiler
from ..compile.request import make_key
from ..errors import HipexploreError
from .lists import ListEntry, TuningList
from .replay import _annotate, cpu_delta, cpu_snapshot, own_cache_labels, run_tasks, warm_up
from .results import ReplayReport, ScenarioResult

TRITON_SCENARIOS = ("triton-cold", "triton-warm")


def add_triton_cache_passes(report: ReplayReport) -> ReplayReport:
    """Run Triton's own-cache passes over the report's list (same jobs and granularity) and add them
    to its scenarios; returns the report."""
    report.scenarios.update(triton_cache_passes(report.tuning_list, report.jobs, report.granularity))
    return report


def triton_cache_passes(
    tuning_list: TuningList, jobs: int = 1, granularity: str = "candidate", cache_dir: str | None = None
) -> dict:
    """{"triton-cold": ScenarioResult, "triton-warm": ScenarioResult} over ``tuning_list``."""
    tmp = tempfile.TemporaryDirectory(prefix="hipexplore-triton-own-cache-") if cache_dir is None else None
    directory = cache_dir or tmp.name  # type: ignore[union-attr]
    comp = IsolatedCompiler("triton", {"triton_cache_dir": directory}, workers=jobs, timeout=600.0)
    out = {}
    try:
        warm_up(comp, "triton", tuning_list.target, jobs)  # tiny kernels, keyed apart from the list
        by_label = {e.label: e for e in tuning_list.entries}
        for scenario in TRITON_SCENARIOS:
            rows: list[CacheEvent] = []
            lock = threading.Lock()
            identity = comp.identity()

            def one(group: Sequence[ListEntry]) -> None:
                for entry in group:
                    key = make_key(entry.request, identity)
                    t0 = time.perf_counter()
                    try:
                        code = comp.compile(entry.request)
                    except HipexploreError as exc:
                        ev = CacheEvent(
                            0,
                            time.time(),
                            key.digest,
                            entry.label,
                            "triton",
                            entry.request.target,
                            entry.request.mode,
                            "failed",
                            time.perf_counter() - t0,
                            0.0,
                            0.0,
                            0,
                            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                        )
                    else:
                        elapsed = time.perf_counter() - t0
                        hit = bool(code.metadata.get("triton_cache_hit"))
                        ev = CacheEvent(
                            0,
                            time.time(),
                            key.digest,
                            entry.label,
                            "triton",
                            entry.request.target,
                            entry.request.mode,
                            "disk-hit" if hit else "compiled",
                            elapsed,
                            0.0 if hit else code.compile_seconds,
                            0.0,
                            code.nbytes,
                            "",
                        )
                    with lock:
                        rows.append(ev)

            before = cpu_snapshot(comp)
            seconds = run_tasks(tuning_list, one, jobs, granularity)
            cpu = cpu_delta(before, cpu_snapshot(comp))
            rows.sort(key=lambda r: r.time)
            frame = events_frame([replace(ev, seq=i) for i, ev in enumerate(rows)])
            frame = own_cache_labels(
                _annotate(frame, by_label, scenario, jobs), comp, {e.label: e.request for e in tuning_list.entries}
            )
            out[scenario] = ScenarioResult(scenario, jobs, seconds, frame, cpu)
    finally:
        comp.close()
        if tmp is not None:
            tmp.cleanup()
    return out
