"""The one launcher of worker processes (``compile.launcher``), with a real worker (the compile
worker, ``compile.worker_main``): what starts, how it is talked to, how its death reads.

Why: every compile and sweep worker starts here, and every crash report (``CompilerCrashed``,
``KernelFault``) is built from what this module gives back: the exit status in words and the tail
of a log that no file name outlives.
"""

from __future__ import annotations

import os
import signal

import pytest

from hipexplore.compile.launcher import STDERR_TAIL_BYTES, log_tail, signal_description, start_worker


@pytest.fixture
def worker():
    """A started compile worker: (process, receive end, send end, log descriptor, log path)."""
    proc, rx, tx, fd, path = start_worker("hipexplore.compile.worker_main", log_prefix="hipexplore-test-worker-")
    try:
        yield proc, rx, tx, fd, path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for end in (rx, tx):
            end.close()
        os.close(fd)


def test_a_worker_answers_on_its_pipes_and_its_log_has_no_name(worker):
    proc, rx, tx, fd, path = worker
    assert not os.path.exists(path)  # unlinked once both processes hold it: nothing is left behind
    assert os.getpgid(proc.pid) == proc.pid  # a session of its own: its group can be killed whole
    tx.send(("host", {}))
    assert rx.recv() == ("ready", proc.pid)
    tx.send(("stop", None))
    assert proc.wait(timeout=60) == 0
    assert signal_description(proc.returncode) == ("", "exit code 0")


def test_a_worker_killed_by_a_signal_reads_as_that_signal_with_its_stack_in_the_log(worker):
    proc, rx, tx, fd, _ = worker
    tx.send(("host", {}))
    assert rx.recv()[0] == "ready"
    os.kill(proc.pid, signal.SIGSEGV)  # as a segfault in a compiler's C library would
    proc.wait(timeout=60)
    assert signal_description(proc.returncode) == ("SIGSEGV", "SIGSEGV (signal 11)")
    assert "Fatal Python error: Segmentation fault" in log_tail(fd)  # faulthandler's dump, read by descriptor


def test_signal_description_and_log_tail_bounds(tmp_path):
    assert signal_description(None) == ("", "an unknown status")
    assert signal_description(3) == ("", "exit code 3")
    assert signal_description(-9) == ("SIGKILL", "SIGKILL (signal 9)")
    assert signal_description(-200) == ("signal 200", "signal 200 (signal 200)")
    log = tmp_path / "w.log"
    log.write_bytes(b"x" * (STDERR_TAIL_BYTES + 10) + b"end")
    fd = os.open(log, os.O_RDONLY)
    try:
        tail = log_tail(fd)
        assert len(tail) == STDERR_TAIL_BYTES and tail.endswith("end") and log_tail(fd, 3) == "end"
    finally:
        os.close(fd)
    assert log_tail(None) == "" and log_tail(-1) == ""  # no log, or a bad descriptor: nothing, no error
