"""The compile worker's own side (the child process ``compile.isolation`` starts through
``compile.launcher``): build the backend it was sent, then serve ``compile`` and ``identity``
requests until told to stop.

Apart from ``compile.isolation`` (the parent side: the pool, the timeouts, the crash reports) so that
the child never imports the pool, as ``bench.worker_main`` is apart from ``bench.worker``. What goes
back: the value, or the exception: hipexplore's own errors whole (when they pickle), anything else
wrapped in a ``CompileError`` whose log is the traceback (``portable_error``). A fatal signal dumps
the Python stack into the worker's log (``faulthandler``), which is emptied before each request, so
a crash report (``CompilerCrashed``) shows that compile's output only.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

from ..errors import CompileError, ConfigError, HipexploreError
from .backends import backend_class
from .request import CompileRequest


def portable_error(exc: BaseException, request: CompileRequest | None, backend: str) -> BaseException:
    """The exception to send back: HipexploreErrors as they are (if picklable), anything else wrapped."""
    if isinstance(exc, HipexploreError):
        try:
            pickle.loads(pickle.dumps(exc))
            return exc
        except Exception:
            pass
    log = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    fields: dict[str, Any] = {"compiler": backend, "log": log}
    if request is not None:
        fields.update(target=request.target, options=request.options, kernels=request.kernels)
    return CompileError(f"{backend} worker raised {type(exc).__name__}: {exc}", **fields)


def _worker_main(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker process: build the backend, then serve requests until told to stop."""
    import faulthandler

    faulthandler.enable()  # a fatal signal dumps the Python stack into stderr (the crash log), then kills
    rx = Connection(read_fd, writable=False)
    tx = Connection(write_fd, readable=False)
    backend_name = "?"
    try:
        backend_name, kwargs = rx.recv()
        backend = backend_class(backend_name)(**kwargs)
    except BaseException as exc:
        tx.send(("err", portable_error(exc, None, backend_name)))
        return
    tx.send(("ready", os.getpid()))
    while True:
        try:
            op, payload = rx.recv()
        except (EOFError, OSError):  # parent gone
            return
        if op == "stop":
            return
        _reset_stderr()
        request = payload if isinstance(payload, CompileRequest) else None
        try:
            if op == "compile":
                value: Any = backend.compile(payload)
            elif op == "identity":
                value = backend.identity()
            else:
                raise ConfigError(f"unknown worker operation {op!r}")
            reply: tuple[str, Any] = ("ok", value)
        except BaseException as exc:
            reply = ("err", portable_error(exc, request, backend_name))
        try:
            tx.send(reply)
        except (BrokenPipeError, OSError):
            return


def _reset_stderr() -> None:
    """Empty the worker's stderr file so a crash report shows this compile's output only."""
    try:
        sys.stderr.flush()
        sys.stdout.flush()
        os.ftruncate(2, 0)
    except OSError:
        pass
