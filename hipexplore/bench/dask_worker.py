"""What runs on a Dask worker of a cluster sweep (``bench.dask_executor`` is the client's side):
the worker's own device facts, whether it can count, and one unit of one group.

Why apart from the client: these functions are what the client submits (Dask pickles them by
reference: the worker imports this module), and nothing in them orchestrates. A unit never runs in
the Dask worker's own process (whose messages the client unpickles): ``unit_task`` runs it in a
sweep worker *child* (``bench.worker.unit_in_worker``) and returns what it reported as
``bench.wire`` frames (bytes, no pickle of results), with where it ran. A counting unit
(``bench.counters``) runs the same way, under its profiler's command where its backend writes a
report (ncu, rocprofv3): the report folder its command names is moved to a private folder of the
worker's own (``Counting.moved``), and the files the profiler wrote there travel back in the
result as a ``wire.Report`` (regular files only, nothing followed, at most ``wire.MAX_REPORT``
bytes), which the client writes below its own folder for the counting plan's finish step. A
backend that counts in the unit's worker (CUPTI) sends each configuration's ``CounterSummary``
beside its entry (``wire.Counted``), as the worker pipe does.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import time
from dataclasses import replace
from typing import Any

from ..schema import CLUSTER_COLUMNS
from . import wire
from .dask_connect import VISIBLE_DEVICE_VARS, _distributed
from .spec import SweepSpec
from .units import UnitRun
from .wire_messages import REPORT_PATH

EVENT_TOPIC = "hipexplore.sweep"
_DEVICES: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}


def _pinned() -> str:
    for var in VISIBLE_DEVICE_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return ""


def worker_device(device: str, device_options: dict[str, Any]) -> Any:
    """On a worker: its device, for the facts (opened once, and closed before a unit runs in a
    process of its own: ``_release_devices``)."""
    from ..devices import get_device

    key = (device, tuple(sorted(device_options.items())))
    if key not in _DEVICES:
        _DEVICES[key] = get_device(device, **device_options)
    return _DEVICES[key]


def device_name(device: str, device_options: dict[str, Any]) -> str:
    """On a worker: the name of the device it measures on."""
    return str(worker_device(device, device_options).name)


def worker_facts(spec: SweepSpec, device: str, device_options: dict[str, Any]) -> dict[str, Any]:
    """On a worker: what the orchestrator asks of the device (``LocalExecutor.facts``), its flush
    modes and sources checked, its free memory (the unit plan sizes its units against it) and what
    the counter pass plans on (its kind, index and target: ``dask_executor.PlanDevice``)."""
    from .executors import InProcessExecutor

    ex = InProcessExecutor(worker_device(device, device_options))
    ex.check(spec)
    facts = ex.facts(spec)
    free, total = ex.device.memory_info()
    return {
        "name": ex.device.name,
        "kind": str(ex.device.kind),
        "index": int(ex.device.index),
        "target": str(ex.device.target),
        "llc_bytes": int(ex.device.llc_bytes),
        "free": int(free),
        "total": int(total),
        "identities": facts["identities"],
    }


def worker_counters(spec: SweepSpec, device: str, device_options: dict[str, Any], given: Any = None) -> tuple[Any, str]:
    """On a worker: (the backend that counts ``spec`` on its device, "") or (None, one line why not),
    as ``LocalExecutor.counter_backend`` answers on one device: the profiler is looked for where it
    will run. A backend the caller gave is only checked (the client keeps its own)."""
    from .executors import InProcessExecutor

    backend, why = InProcessExecutor(worker_device(device, device_options)).counter_backend(spec, given)
    return (None if given is not None else backend), why


def _release_devices() -> None:
    """Close the devices this worker process opened for ``worker_facts``: a unit measures in a
    process of its own, and an idle second GPU context beside it slowed L2-resident kernels."""
    while _DEVICES:
        _key, dev = _DEVICES.popitem()
        try:
            dev.close()
        except Exception:  # noqa: BLE001 - a device that cannot close is gone with this process
            pass


def unit_task(run: UnitRun, device: str, device_options: dict[str, Any], name: str, attempt: int = 1) -> bytes:
    """On a worker: one unit of one group, measured in a sweep worker *child* of this Dask worker
    (``bench.worker.unit_in_worker``: the kernel never runs in a process that speaks Dask's
    protocol, whose messages the client unpickles), its frames checked against the unit's plan there,
    and returned as ``bench.wire`` frames with worker, host and gpu, which the client decodes and
    checks again (``dask_executor.unit_result``): a timed unit's results, a counting unit's entries
    (and summaries) and its profiler's report (module docstring). The ``started`` event it logs first
    is what lets the coordinator charge a retry only to a unit that actually ran, the ``measured``
    one it logs last what keeps a death after it from being charged (``attempt``: which submission
    of it this is)."""
    from .record import Collector
    from .worker import unit_in_worker

    worker = _distributed().get_worker()
    worker.log_event(
        EVENT_TOPIC,
        {"group": name, "attempt": int(attempt), "worker": worker.address, "state": "started", "pid": os.getpid()},
    )
    _release_devices()
    unit = Collector()
    t0 = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="hipexplore-report-") if run.counting is not None and run.counting.report else None
    try:
        if folder is not None:  # the profiler writes its report into this worker's own folder
            run = replace(run, job=replace(run.job, counting=run.counting.moved(folder)))
        stopped = unit_in_worker(run, device, unit, llc_bytes=device_options.get("llc_bytes"))
        report = [wire.encode(wire.Report(read_report(folder)))] if folder is not None else []
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    ident = {"worker": worker.address, "host": socket.gethostname(), "gpu": _pinned()}
    frames = [wire.encode(wire.Meta(unit.info.measured.entries()))]
    frames += [wire.encode(wire.Add(placed(r, ident)), cluster=True) for r in unit.results]
    frames += [wire.encode(wire.Counted(e, s)) for e, s in zip(unit.counted_entries, unit.counted_summaries)]
    frames += [wire.encode(wire.Done(bool(stopped))), *report]
    frames.append(wire.encode(wire.UnitEnd(ident["worker"], ident["host"], ident["gpu"], time.perf_counter() - t0)))
    # measured: a death from here on (its result held by a worker that dies) is not charged to it
    worker.log_event(
        EVENT_TOPIC,
        {"group": name, "attempt": int(attempt), "worker": worker.address, "state": "measured", "pid": os.getpid()},
    )
    return b"".join(frames)


def read_report(folder: str) -> dict[str, bytes]:
    """The files a profiler wrote below ``folder``, by their paths there: regular files only (a link
    or anything else the unit's processes left there is skipped, never followed), each path one
    ``wire.REPORT_PATH`` takes, at most ``wire.MAX_REPORT`` bytes in all (more is one ``WireError`` line)."""
    files: dict[str, bytes] = {}
    total = 0
    for here, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(here, d)))
        for name in sorted(names):
            path = os.path.join(here, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            data = _regular_file(path)
            if data is None or not REPORT_PATH.fullmatch(rel):
                continue
            total += len(data)
            if total > wire.MAX_REPORT:
                raise wire.WireError(f"the profiler's report under {folder} is over {wire.MAX_REPORT} bytes")
            files[rel] = data
    return files


def _regular_file(path: str) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (opened without following a link), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(wire.MAX_REPORT + 1)
    finally:
        os.close(fd)


def placed(result: Any, ident: dict[str, str]) -> Any:
    """``result`` with where it ran: its ``placement`` summary and, per sample, the cluster columns."""
    import numpy as np

    from .outcome import Placement, Samples

    s = result.samples
    extra = {c: np.full(s.n, ident[c], dtype=object) for c in CLUSTER_COLUMNS}
    return replace(result.with_summary(Placement(**ident)), samples=Samples({**s.columns, **extra}))


__all__ = [
    "EVENT_TOPIC",
    "device_name",
    "placed",
    "read_report",
    "unit_task",
    "worker_counters",
    "worker_device",
    "worker_facts",
]
