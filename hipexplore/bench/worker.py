"""Sweeps in a worker process: a faulting kernel kills the worker, never the notebook.

Why: on the H200 a kernel writing out of bounds surfaced as ``cuMemFree failed:
CUDA_ERROR_ILLEGAL_ADDRESS`` *later*, named neither kernel nor configuration, and left the
process's CUDA context dead (the notebook had to be restarted, in-memory results were at risk).
``unit_in_worker(run, device, channel)`` measures one unit (``bench.sweeprun.SweepRun``) in a
fresh interpreter started by the launcher compile workers use (``compile.launcher.start_worker``:
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

The worker runs the user's code (a host kernel, a user library, a Python reference function), so
nothing it sends is trusted (docs/guide/harness.md, "What the worker's channel guarantees"):

* its frames are ``bench.wire``'s (bounded, schema-checked data; no pickle from the worker), read
  without blocking while the worker's life is watched beside the pipe (a pidfd), so a child that
  keeps the pipe open after the worker is gone holds nobody;
* ``bench.guard.UnitGuard`` believes only what the unit's plan allows (a planned configuration,
  once; ``done`` with all of them delivered); anything else ends the run with one ``KernelFault``
  line naming the kernel and configuration, the finished ones kept;
* its warnings are shown as its own (``sweep worker (kernel K): ...``), control characters escaped;
* every process its kernel started is ended with it (``bench.reaper``).

What crosses to the worker (the parent is trusted, so this direction is a pickle): the
``SweepSpec`` and the ``KernelSpec`` of every kernel the worker's fresh catalog does not have (user
kernels: their expressions and geometry pickle; a lambda does not, and is named in the error).
Callables (``callable_kernel``) cannot cross: they run in-process (in the caller's own process, a
callable has no pipe to forge). The worker compiles through the process-default cache (the disk
tier is shared; a custom in-memory ``CompileCache`` of the caller is not).
"""

from __future__ import annotations

import copy
import os
import pickle
import secrets
import signal
import subprocess
import time
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

from .. import settings
from ..compile.launcher import log_tail, signal_description, start_worker
from ..errors import ConfigError
from ..kernels import catalog
from ..untrusted import escaped
from . import reaper
from .guard import UnitGuard
from .measured import MeasuredInfo
from .spec import SweepSpec
from .wire import FrameReader, limits
from .wire_messages import Add, Ask, Counted, Done, Failed, Message, Meta, Start, Update, Warn
from .wire_values import WireError

if TYPE_CHECKING:
    from .units import UnitRun

STDERR_TAIL = 4000
#: after a worker's ``done``, how long it may take to exit before it is killed: a GPU context's
#: teardown (or a profiler writing its report) may take long; a host worker has nothing to release
REAP_S, HOST_REAP_S = 30.0, 5.0
#: bytes taken from the pipe in one go before the worker's life is looked at again
READ_CHUNK = 1 << 20


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
            raise ConfigError(
                f"kernel {k.name!r} is a Python callable, which cannot run in a sweep worker; use worker=False"
            )
        try:
            out.append((k.name, pickle.dumps(k)))
        except Exception as exc:
            try:
                registered = catalog.get(k.name) is k
            except ConfigError:
                registered = False
            if not registered:  # the worker's kernel of that name would not be this one
                raise ConfigError(
                    f"kernel {k.name!r} cannot be sent to a sweep worker ({type(exc).__name__}: {exc}); "
                    f"give its reference/traffic as importable functions or expressions, or use worker=False"
                ) from None
            out.append((k.name, None))
    named = copy.copy(spec)
    object.__setattr__(named, "kernels", tuple(name for name, _ in out))
    return named, out


def _device_text(device: Any) -> str:
    return device if isinstance(device, str) else f"{device.kind}:{device.index}"


class StartedWorker:
    """A sweep worker started ahead of its unit: its interpreter imports what a unit needs while
    the previous unit measures, and waits for its job (``unit_in_worker(..., started=)``). Why: a
    unit's process start-up (interpreter, NumPy, pandas, the device runtime's bindings) is most of
    what a unit costs beyond its samples; started ahead it costs no wall time. The device itself is
    opened only when the job arrives (an idle second GPU context beside a measuring unit slowed
    L2-resident kernels on the H200).

    It carries what finds every process of the worker (``bench.reaper``): a mark in its
    environment, its pipes, its pid (process group and session), and a pidfd the parent watches
    beside the pipe."""

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        """``prefix``: a program the worker's interpreter is started under (the counter pass's profiler)."""
        self.mark = f"{settings.SWEEP_WORKER_MARK.name}={secrets.token_hex(16)}"
        name, token = self.mark.split("=", 1)
        self.proc, self.rx, self.tx, self.log_fd, self.path = start_worker(
            "hipexplore.bench.worker_main", log_prefix="hipexplore-sweep-worker-", prefix=prefix, env={name: token}
        )
        self.pipes = reaper.pipe_names([self.rx.fileno(), self.tx.fileno()])
        try:
            self.pidfd: int | None = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):  # an old kernel: the pipe is polled, the process asked in between
            self.pidfd = None
        self.used = False
        self.ended = False

    def exited(self) -> bool:
        """Whether the worker has ended (it is not reaped here: its pid stays its own until ``end``)."""
        if self.proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker to end (not reaped); whether it did."""
        deadline = time.monotonic() + timeout
        while not self.exited():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.pidfd is not None:
                wait([self.pidfd], left)
            else:
                time.sleep(min(0.05, left))
        return True

    def end(self) -> None:
        """End the worker and every process its kernel started (``bench.reaper``), reap it, release
        its pipes and log. While it lives its descendants are its own (it is their subreaper): it
        is stopped, they are ended, then it; what escaped it is found by its mark and pipes."""
        if self.ended:
            return
        self.ended = True
        pid = self.proc.pid
        if not self.exited():
            _signal(pid, signal.SIGSTOP)
            reaper.end_tree(pid, mark=self.mark, pipes=self.pipes, group=pid)
            _signal(pid, signal.SIGKILL)
            self.wait_exit(30.0)
        reaper.end_tree(None, mark=self.mark, pipes=self.pipes, group=pid)  # before the reap: the pid is still its
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered: left to init
            pass
        for c in (self.rx, self.tx):
            c.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        os.close(self.log_fd)

    def discard(self) -> None:
        """End a worker that was never given a job."""
        if not self.used:
            self.used = True
            self.end()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def start_unit_worker(prefix: tuple[str, ...] = ()) -> StartedWorker:
    """A sweep worker started now for a later unit (``StartedWorker``), under ``prefix`` if one is given."""
    return StartedWorker(prefix)


class _Link:
    """The worker's frames, read without blocking while its life is watched beside the pipe: the
    next message, or None once the worker is gone (or closed the pipe) and nothing whole is left."""

    def __init__(self, w: StartedWorker, bounds: dict[str, int]) -> None:
        self.w, self.fd = w, w.rx.fileno()
        os.set_blocking(self.fd, False)
        self.reader = FrameReader(**bounds)
        self.closed = False

    def next(self) -> Message | None:
        while (msg := self.reader.next()) is None:
            if self.closed:
                return None
            watched = [self.fd] + ([self.w.pidfd] if self.w.pidfd is not None else [])
            ready = wait(watched, None if self.w.pidfd is not None else 0.2)
            if self.fd in ready:
                self._take()
            elif self.w.exited():  # what it wrote before it ended is in the pipe; a child of it may hold the pipe open
                self._take()
                self.closed = True
        return msg

    def _take(self) -> None:
        """What the pipe holds now, up to ``READ_CHUNK`` bytes (the worker's life is looked at between reads)."""
        got = 0
        while got < READ_CHUNK:
            try:
                data = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            self.reader.feed(data)
            got += len(data)


def unit_in_worker(
    run: UnitRun, device: Any, channel: Any, *, started: StartedWorker | None = None, llc_bytes: int | None = None
) -> bool:
    """One unit (``run``: its job, run id, references, pad, input folder, counting) in a worker process
    (see the module docstring), reported to ``channel``; True when the caller's ``stop_now`` stopped it.
    ``device``: the parent's device, or its name (``host``, ``cuda:0``, ``auto``) with ``llc_bytes``
    where the parent holds none (a cluster worker: an idle context of its own beside the unit's would
    slow it); ``run.pad_bytes``: held allocated there before the unit allocates anything
    (``bench.units``); ``run.unit``: the unit's index (seeds its draws); ``started``: a worker started
    ahead (``start_unit_worker``), else one is started now; ``run.inputs_dir``: the sweep's folder of
    host inputs shared between its units (``bench.inputs``); ``run.counting``: a counting unit
    (``bench.counters.phase.Counting``: no timed sample, each configuration replayed inside the
    profiler's range, reported as ``channel.counted(entry, summary)``), its worker started under
    ``run.prefix`` (the profiler's command) when none was started ahead."""
    spec, done, counting, prefix = run.spec, set(run.job.done), run.counting, run.prefix
    guard = UnitGuard(spec, done, run_id=run.run_id, counting=counting is not None)
    named, kernels = _shippable(spec)
    w = started or StartedWorker(prefix)
    w.used = True
    host = (device if isinstance(device, str) else device.kind).startswith("host") and not prefix
    try:
        job = {
            "device": _device_text(device),
            "spec": named,
            "llc_bytes": llc_bytes if isinstance(device, str) else device.llc_override,
            "kernels": [(name, k if blob is not None else None) for (name, blob), k in zip(kernels, spec.specs())],
            "run_id": run.run_id,
            "done": done,
            "refs": run.refs,
            "pad_bytes": int(run.pad_bytes),
            "unit": int(run.unit),
            "inputs_dir": run.inputs_dir,
            "counting": counting,
        }
        try:
            w.tx.send(job)
        except OSError:  # the worker (or a prefix it starts under) is gone already: its status and log say why, below
            pass
        link = _Link(w, limits(spec))
        while True:
            try:
                msg = link.next()
                if msg is not None:
                    guard.check(msg)
            except WireError as exc:
                raise guard.fault(f"the sweep worker (pid {w.proc.pid}) broke its channel: {exc}") from None
            if msg is None:
                raise guard.fault(_gone(w, HOST_REAP_S if host else REAP_S))
            if isinstance(msg, Done):
                w.wait_exit(HOST_REAP_S if host else REAP_S)
                return msg.stopped
            if isinstance(msg, Failed):
                raise guard.error(msg)
            _deliver(msg, channel, guard, w)
    finally:
        w.end()


def _gone(w: StartedWorker, grace: float) -> str:
    """Why a worker's frames ended: its exit status and the tail of its stderr (escaped: the
    kernel writes there too), or that it closed its channel and was stopped."""
    closed = not w.wait_exit(grace)  # a worker that closed the pipe but lives on is given a moment, then stopped
    tail = escaped(log_tail(w.log_fd, STDERR_TAIL).strip(), keep="\n")
    w.end()
    _, how = signal_description(w.proc.returncode)
    what = "closed its channel and was stopped" if closed else f"died with {how}"
    return f"the sweep worker (pid {w.proc.pid}) {what}" + (f"; its stderr: {tail}" if tail else "")


def _deliver(msg: Message, channel: Any, guard: UnitGuard, w: StartedWorker) -> None:
    """A checked message replayed on the caller's channel (an ``ask`` answered with one byte)."""
    if isinstance(msg, Ask):  # the worker's stop_now(), answered by the caller's
        stop = bool(channel.stop_now())
        guard.told(stop)
        try:
            w.tx.send_bytes(b"\x01" if stop else b"\x00")
        except OSError:  # gone: the next read says how
            pass
    elif isinstance(msg, Start):
        channel.started([msg.kernel, msg.configuration])
    elif isinstance(msg, Meta):  # the unit's report, read back typed (the guard checked that it reads)
        channel.meta(MeasuredInfo.of_entries(msg.entries))
    elif isinstance(msg, Add):
        channel.add(msg.result)
    elif isinstance(msg, Update):
        channel.update(msg.rebiased)
    elif isinstance(msg, Counted):  # a counting unit's manifest entry, and its summary where the worker counted it
        channel.counted(msg.entry, msg.summary)
    elif isinstance(msg, Warn):  # a warning in the worker (worker_main._PipeChannel.warning): shown here, as its
        rewarn(msg, guard.kernels)


#: warnings forwarded from workers, shown once per (text, category, line) in this process: every unit
#: has a worker of its own, and a cache tier that is down would otherwise be reported once per unit
_FORWARDED: dict = {}


def _category(name: str) -> type[Warning]:
    """A forwarded warning's category: a built-in one or the project's own by name, else ``UserWarning``."""
    import builtins

    from ..errors import CacheWarning

    known = {CacheWarning.__name__: CacheWarning}
    if name in known:
        return known[name]
    found = getattr(builtins, name, None) if name.isidentifier() else None
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


def rewarn(msg: Warn, kernels: tuple[str, ...]) -> None:
    """Show a worker's warning as the worker's: ``sweep worker (kernel K): ...``, every control
    character escaped (no second line, no terminal escape: it cannot pass for a line of ours)."""
    import warnings

    who = f"kernel {kernels[0]}" if len(kernels) == 1 else f"kernels {', '.join(kernels)}"
    text = f"sweep worker ({escaped(who, 200)}): {escaped(msg.message, 4000)}"
    warnings.warn_explicit(text, _category(msg.category), "<sweep worker>", msg.lineno, registry=_FORWARDED)


__all__ = ["StartedWorker", "rewarn", "start_unit_worker", "unit_in_worker", "use_worker"]
