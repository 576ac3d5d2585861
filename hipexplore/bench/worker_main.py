"""The sweep worker's own side (the child process ``bench.worker`` starts): build the device,
register the kernels it was sent, measure one unit (``bench.sweeprun.SweepRun``), report back.

Apart from ``bench.worker`` (the parent side) so that the parent never imports what only the child
runs. The child owns no file and no hook: everything it measures goes back through the pipe as the
calls of the unit's channel (``_PipeChannel``), as ``bench.wire`` frames (data, never a pickle: the
parent does not trust this process, which runs the user's kernel), and the parent records it. The
job comes the other way as a pickle (the parent is trusted). The worker is the subreaper of what its
kernel starts and ends it all before it exits (``bench.reaper``); its watchdog does the same before
it stops the worker.
"""

from __future__ import annotations

import os
import signal
import threading
import warnings
from multiprocessing.connection import Connection
from typing import Any

from ..errors import ConfigError
from ..kernels import catalog
from . import reaper
from .wire import FrameWriter
from .wire_messages import Add, Ask, Counted, Done, Failed, Message, Meta, Start, Update, Warn


class _PipeChannel:
    """The unit's channel (``bench.sweeprun.Channel``) as frames to the parent."""

    def __init__(self, rx: Connection, write_fd: int) -> None:
        self.rx = rx
        self.out = FrameWriter(
            write_fd
        )  # whole frames under a lock: a warning may come from another thread mid-message

    def send(self, msg: Message) -> None:
        self.out.send(msg)

    def warning(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        """``warnings.showwarning`` in the worker: the warning goes to the parent, which shows it as
        the worker's (``bench.worker.rewarn``). Why: the worker's stderr is a log file read only when
        it dies, so a warning there (a team cache tier that is down, a cache folder that cannot be
        used) reached nobody; on a GPU every unit runs in a worker."""
        name = category.__name__ if isinstance(category, type) else "UserWarning"
        try:
            self.send(Warn(name, str(message), int(lineno) if isinstance(lineno, int) else 0))
        except OSError:  # the parent is gone: nobody to tell
            pass

    def started(self, where: list[str]) -> None:
        self.send(Start(str(where[0]), str(where[1])))

    def stop_now(self) -> bool:
        """A round trip to the parent (asked between configurations only), so a stop takes effect
        exactly where it would in-process: one byte back, 1 for stop."""
        self.send(Ask())
        return self.rx.recv_bytes(1) == b"\x01"

    def meta(self, report: Any) -> None:
        """What the unit measured with (``bench.measured.MeasuredInfo``), as the frame's text entries:
        the parent reads them back typed (``MeasuredInfo.of_entries``)."""
        self.send(Meta(report.entries()))

    def add(self, result: Any) -> None:
        """A finished configuration's ``ConfigurationResult``, as data (``bench.wire``)."""
        self.send(Add(result))

    def update(self, rebiased: list[Any]) -> None:
        self.send(Update(list(rebiased)))

    def counted(self, entry: dict[str, Any], summary: Any = None) -> None:
        """A counting unit's entry for one configuration (``bench.counters.phase``), and its
        ``CounterSummary`` where the worker counted it itself (``bench.wire`` sends its fields as data)."""
        self.send(Counted(dict(entry), summary))


def failed(exc: BaseException) -> Failed:
    """An exception as an error frame: its type's name and message, what a ``KernelFault`` names,
    a compile error's log and where it compiled (the parent rebuilds the project's own type)."""
    from ..errors import CompileError, KernelFault

    if isinstance(exc, KernelFault):
        return Failed("KernelFault", str(exc), exc.kernel, exc.configuration, exc.status)
    if isinstance(exc, CompileError):
        where = f" [compiler={exc.compiler} target={exc.target} options={list(exc.options)[:8]}]"
        return Failed(type(exc).__name__, (exc.args[0] if exc.args else "") + where, log=exc.log)
    return Failed(type(exc).__name__, str(exc))


def _register(kernels: list[tuple[str, Any]]) -> None:
    for name, kspec in kernels:
        if kspec is not None:
            catalog.register(kspec, replace=True)
        elif name not in catalog.names():
            raise ConfigError(
                f"kernel {name!r} cannot be sent to a sweep worker (its spec does not pickle: a lambda?) "
                f"and the worker's catalog has no kernel of that name; build it with user_kernel "
                f"expressions, or use worker=False"
            )


def _watch_launches(dev: Any) -> None:
    """A thread that stops this worker when one host launch runs past ``HIPEXPLORE_LAUNCH_TIMEOUT``:
    a host kernel runs on this process's own thread inside a foreign call, which neither a signal
    nor Python can interrupt, so a kernel that never returns hung the sweep for good. The line on
    stderr names the kernel and the limit; the parent reports the worker's death as a
    ``KernelFault`` of the configuration, with that line."""
    import time

    from .. import settings

    limit = float(settings.LAUNCH_TIMEOUT.get())

    def watch() -> None:
        seen, since = -1, time.monotonic()
        while True:
            time.sleep(min(1.0, limit / 4))
            begun, ended = dev.launches_begun, dev.launches_ended
            if begun == ended:
                seen = -1
            elif begun != seen:
                seen, since = begun, time.monotonic()
            elif time.monotonic() - since > limit:
                os.write(
                    2,
                    (
                        f"hipexplore: one launch of kernel {dev.launching} ran past {limit:g} s "
                        f"(HIPEXPLORE_LAUNCH_TIMEOUT): the sweep worker was stopped\n"
                    ).encode(),
                )
                reaper.end_descendants()  # while they are still this process's: what the kernel started ends first
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="hipexplore-launch-watchdog", daemon=True).start()


def _worker_main(read_fd: int, write_fd: int) -> None:
    """The worker: build the device, register the kernels it was sent, measure, report."""
    reaper.become_subreaper()  # what the kernel forks and orphans stays below this process (bench.reaper)
    rx = Connection(read_fd, writable=False)
    channel = _PipeChannel(rx, write_fd)
    warnings.showwarning = channel.warning
    last: Message
    try:
        # imported before the job arrives: a worker started ahead of its unit (bench.worker.StartedWorker)
        # pays its start-up while the previous unit measures; the device is opened only below
        from ..devices import get_device
        from .measured import MeasuredInfo
        from .inputs import share_in
        from .units import UnitRun
        from .sweeprun import SweepRun
        from .units import UnitJob

        try:  # the CUDA driver bindings too, where present (importing them opens no context)
            import cuda.bindings.driver  # noqa: F401
        except Exception:
            pass
        job = rx.recv()  # the parent's job (a pickle from the trusted side)
        _register(job["kernels"])
        share_in(job.get("inputs_dir"))  # inputs an earlier unit of the sweep drew are mapped, not drawn

        dev = get_device(job["device"], llc_bytes=job["llc_bytes"])
        if dev.kind == "host":
            _watch_launches(dev)
        # a pass's own placement (bench.passes): held until the process ends
        pad = dev.alloc(job["pad_bytes"]) if job.get("pad_bytes") else None
        if pad is not None:
            channel.meta(MeasuredInfo(worker_pad_bytes=int(pad.nbytes)))
        run = UnitRun(
            UnitJob(job["spec"], job.get("unit", 0), frozenset(job["done"]), counting=job.get("counting")),
            job["run_id"],
            refs=job["refs"],
        )
        stopped = SweepRun(run, dev, channel).measure()
        if job.get("inputs_dir"):
            from .inputs import COUNTS

            channel.meta(
                MeasuredInfo(inputs={int(job.get("unit", 0)): f"drawn {COUNTS['drawn']}, mapped {COUNTS['mapped']}"})
            )
        last = Done(bool(stopped))
    except BaseException as exc:  # everything goes back to the parent, which raises the project's own error
        last = failed(exc)
    try:
        reaper.end_descendants()  # what the kernel started ends before the parent hears the unit ended
        channel.send(last)
    except OSError:  # the parent is gone
        pass
    finally:
        os.close(write_fd)
        rx.close()


__all__: list[str] = []
