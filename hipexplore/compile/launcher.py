"""The one launcher of hipexplore's worker processes: compile workers (``compile.isolation``, which
run ``compile.worker_main``) and sweep workers (``bench.worker``, which run ``bench.worker_main``).

Why a module of its own: both kinds start the same way (a fresh isolated interpreter, never a fork
of a parent that has threads and maybe a GPU context; a session of its own, so its process group
can be killed whole; two pipes; a log that has no name once both processes hold it), and each
parent needs the launcher without the other's machinery. A worker module offers
``_worker_main(read_fd, write_fd)``: the child's whole program, looked up by name in the child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from multiprocessing.connection import Connection

from ..interpreter import isolated_argv

#: How much of a dead worker's stderr goes into the error's log.
STDERR_TAIL_BYTES = 8192

#: The worker's code after ``interpreter.PATH_PRELUDE`` has set its path: ``__import__`` (a built-in)
#: rather than ``importlib``, so nothing but the worker module itself is looked up on that path.
_BOOT = "__import__(sys.argv[1], fromlist=['_worker_main'])._worker_main(int(sys.argv[2]), int(sys.argv[3]))\n"


def start_worker(
    module: str, *, log_prefix: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> tuple[subprocess.Popen, Connection, Connection, int, str]:
    """Start a fresh interpreter running ``MODULE._worker_main(read_fd, write_fd)``: the one
    launcher of compile workers (``compile.isolation``) and sweep workers (``bench.worker``).

    Returns (process, receive end, send end, log descriptor, log path). Started with ``subprocess``
    (spawn-equivalent, never fork: the parent has threads, maybe a GPU context) as an isolated
    interpreter with this process's path (``interpreter.isolated_argv``: a ``json.py`` in the working
    directory is never imported, and ``PYTHON*`` variables do not reach it), in a session of
    its own (its process group can be killed whole), ``env`` added, and ``LIBC_FATAL_STDERR_=1``:
    glibc writes "munmap_chunk(): invalid pointer" and friends to /dev/tty unless told otherwise,
    and we want them in the worker's log, i.e. in the error. The log has no name once the worker
    has it open: the parent reads its tail through the descriptor (``log_tail``) and the file is
    gone with the last descriptor, however either process ends (a SIGKILLed parent left 245 logs
    in TMPDIR). ``prefix``: a program the interpreter is started under (``isolated_argv``'s: a
    profiler for the counter pass's worker); it inherits the pipes and passes them on to the
    interpreter it starts, and what it writes itself goes to the same log."""
    fd, log_path = tempfile.mkstemp(prefix=log_prefix, suffix=".log")
    child_read, parent_write = os.pipe()
    parent_read, child_write = os.pipe()
    try:
        with open(log_path, "ab", buffering=0) as errf:
            proc = subprocess.Popen(
                isolated_argv(_BOOT, module, str(child_read), str(child_write), prefix=prefix),
                stdin=subprocess.DEVNULL,
                stdout=errf,
                stderr=errf,
                pass_fds=(child_read, child_write),
                start_new_session=True,
                env=dict(os.environ, **(env or {}), LIBC_FATAL_STDERR_="1"),
            )
    except BaseException:
        for f in (child_read, child_write, parent_read, parent_write, fd):
            os.close(f)
        os.unlink(log_path)
        raise
    try:
        os.unlink(log_path)  # both processes hold it open: nothing to leave behind
    except OSError:
        pass
    os.close(child_read)
    os.close(child_write)
    return proc, Connection(parent_read, writable=False), Connection(parent_write, readable=False), fd, log_path


def log_tail(fd: int | None, limit: int = STDERR_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a worker's log (``start_worker``'s descriptor) as text."""
    if fd is None:
        return ""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - limit)
        return os.pread(fd, size - start, start).decode("utf-8", "replace")
    except OSError:
        return ""


def signal_description(returncode: int | None) -> tuple[str, str]:
    """(signal name or "", human text) for a child's return code (negative = killed by a signal)."""
    if returncode is None:
        return "", "an unknown status"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return name, f"{name} (signal {-returncode})"
    return "", f"exit code {returncode}"
