"""The compile worker's own side (``compile.worker_main``): what it sends back for a request, and
how an exception crosses the pipe. Real worker processes (started by ``compile.launcher``) and a
real host compile.

Why: the parent shows the user exactly what crosses here; an exception that does not pickle, or a
plain Python error from a backend, must still arrive as one ``CompileError`` with where it happened.
"""

from __future__ import annotations

import os
import pickle
import signal

import pytest

from hipexplore.compile.launcher import start_worker
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.compile.worker_main import portable_error
from hipexplore.errors import CompileError, ConfigError, HipexploreError

REQUEST = CompileRequest(Source("a.c", "int hx(void) { return 7; }\n"), "host", "host", options=("-O1",))


class Unpicklable(HipexploreError):
    def __init__(self) -> None:
        super().__init__("holds a lock")
        self.held = lambda: None  # a lambda does not pickle


def test_hipexplores_errors_cross_whole_and_others_are_wrapped_with_their_traceback():
    same = ConfigError("bad option")
    assert portable_error(same, REQUEST, "host") is same
    try:
        raise ValueError("inside the backend")
    except ValueError as exc:
        wrapped = portable_error(exc, REQUEST, "host")
    assert isinstance(wrapped, CompileError) and "host worker raised ValueError: inside the backend" in str(wrapped)
    assert "Traceback" in wrapped.log and wrapped.target == "host" and wrapped.options == ("-O1",)
    loose = portable_error(Unpicklable(), None, "nvrtc")
    assert isinstance(loose, CompileError) and loose.compiler == "nvrtc" and loose.target == ""
    assert pickle.loads(pickle.dumps(loose)).log == loose.log


@pytest.fixture
def worker():
    proc, rx, tx, fd, _ = start_worker("hipexplore.compile.worker_main", log_prefix="hipexplore-test-worker-")
    try:
        yield proc, rx, tx
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for end in (rx, tx):
            end.close()
        os.close(fd)


def test_a_worker_compiles_answers_errors_and_stops(worker):
    from conftest import require_compiler

    require_compiler("host")
    proc, rx, tx = worker
    tx.send(("host", {}))
    assert rx.recv() == ("ready", proc.pid)
    tx.send(("compile", REQUEST))
    status, code = rx.recv()
    assert status == "ok" and code.binary and code.compiler == "host"
    tx.send(("mystery", None))
    status, error = rx.recv()
    assert status == "err" and isinstance(error, ConfigError) and "unknown worker operation 'mystery'" in str(error)
    tx.send(("stop", None))
    assert proc.wait(timeout=60) == 0


def test_a_backend_that_cannot_be_built_is_reported_and_the_worker_ends(worker):
    proc, rx, tx = worker
    tx.send(("no-such-compiler", {}))
    status, error = rx.recv()
    assert status == "err" and isinstance(error, ConfigError) and "unknown compiler 'no-such-compiler'" in str(error)
    assert proc.wait(timeout=60) == 0
