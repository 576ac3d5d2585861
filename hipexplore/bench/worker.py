"""Sweeps in a worker process: a faulting kernel kills the worker, never the notebook.

Why: on the H200 a kernel writing out of bounds surfaced as ``cuMemFree failed:
CUDA_ERROR_ILLEGAL_ADDRESS`` *later*, named neither kernel nor configuration, and left the
process's CUDA context dead (the notebook had to be restarted, in-memory results were at risk).
``unit_in_worker(spec, device, channel)`` measures one unit (``bench.sweeprun.SweepRun``) in a
fresh interpreter started by the launcher compile workers use (``compile.isolation.start_worker``:
never ``fork``, the parent has threads and a GPU context), with its own device of the same kind and
index. This module is the parent's side; ``bench.worker_main`` the child's. The child reports
through the pipe exactly what an in-process unit reports to its channel (``started``, ``meta``,
``add``, ``update``; ``stop_now`` is a round trip), and this side replays it on the caller's
channel (``bench.orchestrator.UnitChannel``: the files, the hooks), so results are recorded as they are
measured and nothing finished is lost. A fault becomes ``KernelFault`` ("kernel K faulted in configuration C:
CUDA_ERROR_ILLEGAL_ADDRESS"), whether the worker caught a device error or died (``SIGSEGV``),
carrying the finished configurations; the parent's device and context were never touched, so the
next sweep works. ``should_stop`` is the caller's, asked over the pipe (a round trip between
configurations), so a stop takes effect where it would in-process.

What crosses: the ``SweepSpec`` and the ``KernelSpec`` of every kernel the worker's fresh catalog
does not have (user kernels: their expressions and geometry pickle; a lambda does not, and is
named in the error). Callables (``callable_kernel``) cannot cross: they run in-process. The
worker compiles through the process-default cache (the disk tier is shared; a custom in-memory
``CompileCache`` of the caller is not).
"""
from __future__ import annotations

import copy
import os
import pickle
import signal
import subprocess
from typing import Any

from .. import settings
from ..compile.isolation import log_tail, signal_description, start_worker
from ..errors import ConfigError, KernelFault
from ..kernels import catalog
from .spec import SweepSpec

STDERR_TAIL = 4000


def use_worker(device: Any, worker: bool | None) -> bool:
    """The default: a worker for GPU devices, in-process for the host (``HIPEXPLORE_SWEEP_WORKER``
    overrides the default; an explicit ``worker=`` overrides both)."""
    if worker is not None:
        return bool(worker)
    env = settings.SWEEP_WORKER.get()
    if env is not None:
        return bool(env)
    return device.kind != "host"


def _shippable(spec: SweepSpec) -> tuple[SweepSpec, list[tuple[str, bytes | None]]]:
    """The spec with kernels by name, and each kernel pickled (``None``: a registered kernel that
    does not pickle; the worker then uses its own catalog's kernel of that name, if it has one)."""
    out: list[tuple[str, bytes | None]] = []
    for k in spec.specs():
        if k.call is not None:
            raise ConfigError(f"kernel {k.name!r} is a Python callable, which cannot run in a sweep worker; use worker=False")
        try:
            out.append((k.name, pickle.dumps(k)))
        except Exception as exc:
            try:
                registered = catalog.get(k.name) is k
            except ConfigError:
                registered = False
            if not registered:  # the worker's kernel of that name would not be this one
                raise ConfigError(f"kernel {k.name!r} cannot be sent to a sweep worker ({type(exc).__name__}: {exc}); "
                                  f"give its reference/traffic as importable functions or expressions, or use worker=False") from None
            out.append((k.name, None))
    named = copy.copy(spec)
    object.__setattr__(named, "kernels", tuple(name for name, _ in out))
    return named, out


def _device_text(device: Any) -> str:
    return f"{device.kind}:{device.index}"


class StartedWorker:
    """A sweep worker started ahead of its unit: its interpreter imports what a unit needs while
    the previous unit measures, and waits for its job (``unit_in_worker(..., started=)``). Why: a
    unit's process start-up (interpreter, NumPy, pandas, the device runtime's bindings) is most of
    what a unit costs beyond its samples; started ahead it costs no wall time. The device itself is
    opened only when the job arrives (an idle second GPU context beside a measuring unit slowed
    L2-resident kernels on the H200)."""

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        """``prefix``: a program the worker's interpreter is started under (the counter pass's profiler)."""
        self.proc, self.rx, self.tx, self.log_fd, self.path = start_worker("hipexplore.bench.worker_main",
                                                                           log_prefix="hipexplore-sweep-worker-", prefix=prefix)
        self.used = False

    def discard(self) -> None:
        """End a worker that was never given a job."""
        if self.used:
            return
        self.used = True
        for c in (self.rx, self.tx):
            c.close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        os.close(self.log_fd)


def start_unit_worker(prefix: tuple[str, ...] = ()) -> StartedWorker:
    """A sweep worker started now for a later unit (``StartedWorker``), under ``prefix`` if one is given."""
    return StartedWorker(prefix)


def unit_in_worker(spec: SweepSpec, device: Any, channel: Any, *, run_id: str, done: set, refs: dict,
                   pad_bytes: int = 0, unit: int = 0, started: StartedWorker | None = None,
                   inputs_dir: str | None = None, counting: Any = None, prefix: tuple[str, ...] = ()) -> bool:
    """One unit of ``spec`` in a worker process (see the module docstring), reported to ``channel``;
    True when the caller's ``stop_now`` stopped it. ``pad_bytes``: held allocated there before the
    unit allocates anything (``bench.units``); ``unit``: the unit's index (seeds its draws);
    ``started``: a worker started ahead (``start_unit_worker``), else one is started now;
    ``inputs_dir``: the sweep's folder of host inputs shared between its units (``bench.inputs``);
    ``counting``: a counting unit (``bench.counters.phase.Counting``: no timed sample, each
    configuration replayed inside the profiler's range, reported as ``channel.counted(entry)``),
    its worker started under ``prefix`` (the profiler's command) when none was started ahead."""
    spec, kernels = _shippable(spec)
    llc = device.llc_override
    w = started or StartedWorker(prefix)
    w.used = True
    proc, rx, tx, log_fd = w.proc, w.rx, w.tx, w.log_fd
    current = ["", ""]
    try:
        job = pickle.dumps({"device": _device_text(device), "llc_bytes": llc, "kernels": kernels, "spec": spec, "run_id": run_id,
                            "done": set(done), "refs": refs, "pad_bytes": int(pad_bytes), "unit": int(unit),
                            "inputs_dir": inputs_dir, "counting": counting})
        try:
            tx.send_bytes(job)
        except OSError:  # the worker (or a prefix it starts under) is gone already: its status and log say why, below
            pass
        while True:
            try:
                kind, payload = pickle.loads(rx.recv_bytes())
            except (EOFError, OSError):
                proc.wait()
                _, how = signal_description(proc.returncode)
                tail = log_tail(log_fd, STDERR_TAIL).strip()
                raise KernelFault(current[0] or "?", current[1] or "(before the first configuration)",
                                  f"the sweep worker (pid {proc.pid}) died with {how}" + (f"; its stderr: {tail}" if tail else "")) from None
            if kind == "ask":  # the worker's stop_now(), answered by the caller's
                tx.send_bytes(pickle.dumps(channel.stop_now()))
            elif kind == "start":
                current[:] = payload
                channel.started(current)
            elif kind in ("meta", "update"):
                getattr(channel, kind)(payload)
            elif kind == "add":
                channel.add(*payload)
            elif kind == "counted":  # a counting unit's manifest entry (bench.counters)
                channel.counted(payload)
            elif kind == "warn":  # a warning in the worker (worker_main._PipeChannel.warning): shown here
                _rewarn(*payload)
            elif kind == "done":
                _reap(proc)
                return bool(payload)
            elif kind == "error":
                _reap(proc)
                raise payload
    finally:
        for c in (rx, tx):
            c.close()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        os.close(log_fd)


#: warnings forwarded from workers, shown once per (text, category, line) in this process: every unit
#: has a worker of its own, and a cache tier that is down would otherwise be reported once per unit
_FORWARDED: dict = {}


def _rewarn(category: type[Warning], message: str, filename: str, lineno: int) -> None:
    import warnings

    if not (isinstance(category, type) and issubclass(category, Warning)):
        category = UserWarning
    warnings.warn_explicit(message, category, filename, lineno, registry=_FORWARDED)


def _reap(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait for a worker that has reported; one stuck in its exit (a dead GPU context) is killed."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


__all__ = ["StartedWorker", "start_unit_worker", "unit_in_worker", "use_worker"]
