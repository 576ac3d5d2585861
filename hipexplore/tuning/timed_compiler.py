"""The tuning replay's compiler seen through a stopwatch, and the CPU seconds of it and its workers.

Apart from ``tuning.replay`` (which uses both) so that the replay module holds the passes and their
report, not the measuring instruments.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from ..compile.base import Compiler
from ..compile.request import CompileRequest

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class TimedCompiler:
    """The replay's compiler seen through a stopwatch: records the wall time of every
    ``compile`` call by request label, so the cache's own cost can be separated from it."""

    def __init__(self, inner: Compiler) -> None:
        self._inner = inner
        self.name = inner.name
        self.calls: dict[str, float] = {}
        self._lock = threading.Lock()

    def compile(self, request: CompileRequest):  # noqa: ANN201 - the inner compiler's ObjectCode
        t0 = time.perf_counter()
        try:
            return self._inner.compile(request)
        finally:
            elapsed = time.perf_counter() - t0
            with self._lock:
                self.calls[request.label] = self.calls.get(request.label, 0.0) + elapsed

    # the rest of the Compiler interface is the inner compiler's
    @property
    def isolated(self) -> bool:
        return self._inner.isolated

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def available(self) -> bool:
        return self._inner.available()

    def unavailable_reason(self) -> str:
        return self._inner.unavailable_reason()

    def identity(self):  # noqa: ANN201 - CompilerIdentity
        return self._inner.identity()

    def targets(self) -> tuple[str, ...]:
        return self._inner.targets()

    def crashing_targets(self) -> tuple[str, ...]:
        return self._inner.crashing_targets()

    def worker_pids(self) -> list[int]:
        return self._inner.worker_pids()

    def own_cache(self, options: tuple[str, ...] = (), identity: Any = None, environ: Any = None) -> Any:
        return self._inner.own_cache(options, identity, environ)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> "TimedCompiler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def proc_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a live process (its waited-for children included)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / _CLK_TCK


def cpu_snapshot(compiler: Compiler) -> dict[int, float]:
    """CPU seconds used so far by this process (all threads, plus the children it waited for, such
    as ``cc``) and by each live worker process of an isolated compiler. Differences of two
    snapshots measure a pass's compile work in a way that other load on a shared machine barely
    moves (wall time does move)."""
    t = os.times()
    snap = {0: t.user + t.system + t.children_user + t.children_system}
    for pid in compiler.worker_pids():
        snap[int(pid)] = proc_cpu(int(pid))
    return snap


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(v - before.get(k, 0.0) for k, v in after.items())


__all__ = ["TimedCompiler", "cpu_delta", "cpu_snapshot", "proc_cpu"]
