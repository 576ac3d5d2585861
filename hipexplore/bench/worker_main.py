"""The sweep worker's own side (the child process ``bench.worker`` starts): build the device,
register the kernels it was sent, measure one unit (``bench.sweeprun.SweepRun``), report back.

Apart from ``bench.worker`` (the parent side) so that the parent never imports what only the child
runs. The child owns no file and no hook: everything it measures goes back through the pipe as the
calls of the unit's channel (``_PipeChannel``), and the parent records it.
"""
from __future__ import annotations

import os
import pickle
import signal
import threading
import warnings
from multiprocessing.connection import Connection
from typing import Any

from ..errors import ConfigError
from ..kernels import catalog


class _PipeChannel:
    """The unit's channel (``bench.sweeprun.Channel``) as messages to the parent."""

    def __init__(self, rx: Connection, tx: Connection) -> None:
        self.rx, self.tx = rx, tx
        self.lock = threading.Lock()  # a warning may come from another thread (a cache tier's) mid-message

    def send(self, kind: str, payload: Any) -> None:
        data = pickle.dumps((kind, payload))
        with self.lock:
            self.tx.send_bytes(data)

    def warning(self, message: Warning | str, category: type[Warning], filename: str, lineno: int,
                file: Any = None, line: str | None = None) -> None:
        """``warnings.showwarning`` in the worker: the warning goes to the parent, which shows it as
        its own (``bench.worker``). Why: the worker's stderr is a log file read only when it dies, so
        a warning there (a team cache tier that is down, a cache folder that cannot be used) reached
        nobody; on a GPU every unit runs in a worker."""
        try:
            pickle.dumps(category)
        except Exception:  # a category defined where the parent cannot import it
            category = UserWarning
        try:
            self.send("warn", (category, str(message), str(filename), int(lineno)))
        except OSError:  # the parent is gone: nobody to tell
            pass

    def started(self, where: list[str]) -> None:
        self.send("start", list(where))

    def stop_now(self) -> bool:
        """A round trip to the parent (asked between configurations only), so a stop takes effect
        exactly where it would in-process."""
        self.send("ask", None)
        return bool(pickle.loads(self.rx.recv_bytes()))

    def meta(self, entries: dict[str, str]) -> None:
        self.send("meta", dict(entries))

    def add(self, rows: Any, row: dict[str, Any]) -> None:
        self.send("add", (rows, row))

    def update(self, rows: list[dict[str, Any]]) -> None:
        self.send("update", [dict(r) for r in rows])

    def counted(self, entry: dict[str, Any]) -> None:
        """A counting unit's entry for one configuration (``bench.counters.phase``)."""
        self.send("counted", dict(entry))


def _register(kernels: list[tuple[str, bytes | None]]) -> None:
    for name, blob in kernels:
        if blob is not None:
            catalog.register(pickle.loads(blob), replace=True)
        elif name not in catalog.names():
            raise ConfigError(f"kernel {name!r} cannot be sent to a sweep worker (its spec does not pickle: a lambda?) "
                              f"and the worker's catalog has no kernel of that name; build it with user_kernel "
                              f"expressions, or use worker=False")


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
                os.write(2, (f"hipexplore: one launch of kernel {dev.launching} ran past {limit:g} s "
                             f"(HIPEXPLORE_LAUNCH_TIMEOUT): the sweep worker was stopped\n").encode())
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="hipexplore-launch-watchdog", daemon=True).start()


def _worker_main(read_fd: int, write_fd: int) -> None:
    """The worker: build the device, register the kernels it was sent, measure, report."""
    rx, tx = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    channel = _PipeChannel(rx, tx)
    warnings.showwarning = channel.warning
    try:
        # imported before the job arrives: a worker started ahead of its unit (bench.worker.StartedWorker)
        # pays its start-up while the previous unit measures; the device is opened only below
        from ..devices import get_device
        from .info import MeasuredInfo, UnitsInfo
        from .inputs import share_in
        from .sweeprun import SweepRun

        try:  # the CUDA driver bindings too, where present (importing them opens no context)
            import cuda.bindings.driver  # noqa: F401
        except Exception:
            pass
        job = pickle.loads(rx.recv_bytes())
        _register(job["kernels"])
        share_in(job.get("inputs_dir"))  # inputs an earlier unit of the sweep drew are mapped, not drawn

        dev = get_device(job["device"], llc_bytes=job["llc_bytes"])
        if dev.kind == "host":
            _watch_launches(dev)
        # a pass's own placement (bench.passes): held until the process ends
        pad = dev.alloc(job["pad_bytes"]) if job.get("pad_bytes") else None
        if pad is not None:
            channel.meta(MeasuredInfo.entry_worker_pad(pad.nbytes))
        stopped = SweepRun(job["spec"], dev, channel, run_id=job["run_id"], done=job["done"], refs=job["refs"],
                           unit=job.get("unit", 0), counting=job.get("counting")).measure()
        if job.get("inputs_dir"):
            from .inputs import COUNTS

            channel.meta(UnitsInfo(inputs={job.get("unit", 0): f"drawn {COUNTS['drawn']}, mapped {COUNTS['mapped']}"}).entries())
        channel.send("done", stopped)
    except BaseException as exc:  # everything goes back to the parent, which raises it
        try:
            pickle.dumps(exc)
            channel.send("error", exc)
        except Exception:
            channel.send("error", RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        tx.close()
        rx.close()


__all__: list[str] = []
