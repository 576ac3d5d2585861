"""Run compiles in persistent worker processes, so a compiler crash never takes Python down.

Why: ROCm 5.2's comgr *aborts the process* on targets it does not know (gfx942: SIGABRT,
``munmap_chunk(): invalid pointer``), a compiler can hang, and a segfault in a C library cannot be
caught. ``IsolatedCompiler`` keeps a small pool of worker processes, each holding its own backend
(constructed in the worker from ``(backend name, kwargs)`` so nothing unpicklable crosses):

* a worker death becomes ``CompilerCrashed`` naming the signal (``SIGABRT``, ``SIGSEGV``...), the
  target and the options, with the worker's stderr tail as the log; the worker is discarded and a
  fresh one starts on the next compile;
* a compile running past ``timeout`` seconds becomes ``CompileTimeout``: the worker and everything
  it started (its process group) is killed and reaped;
* a ``CompileError`` raised in the worker arrives intact (log, options, target).

Hand-written rather than ``concurrent.futures.ProcessPoolExecutor``: one dying worker marks that
executor *broken* and fails every pending and future submission (BrokenProcessPool), and it has no
per-task timeout that kills the task's process. Workers are started with ``subprocess`` running a
fresh interpreter — the same as multiprocessing's ``spawn`` (nothing is forked from this
multi-threaded parent) but without multiprocessing's re-import of ``__main__``, which re-runs
unguarded scripts in every worker. Messages use ``multiprocessing.connection.Connection`` over
two pipes. Workers start lazily, ``close()`` stops them, and a ``weakref.finalize`` (which also
runs at interpreter exit) stops them when the compiler is garbage-collected; every process is
waited for, so none is left a zombie.

This module is the parent's side. Workers are started by ``launcher.start_worker`` (the launcher
sweep workers share) and run ``worker_main`` (the child's side, which never imports this pool).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import threading
import time
import weakref
from multiprocessing.connection import wait
from typing import Any

from .. import settings
from ..errors import (
    CompilerCrashed,
    CompilerError,
    CompilerUnavailable,
    CompileTimeout,
    ConfigError,
)
from .backends import backend_class
from .launcher import log_tail, signal_description, start_worker
from .base import CompilerBase, ObjectCode
from .request import CompileRequest, CompilerIdentity
from .implicit import READS_CWD
from .inputs import env_values
from . import compiler_cache, memo

#: Worker start-up (interpreter + imports + backend construction) is not part of a compile's timeout.
DEFAULT_STARTUP_TIMEOUT = 120.0


class _Died(Exception):
    def __init__(self, returncode: int | None, stderr: str) -> None:
        super().__init__(returncode)
        self.returncode = returncode
        self.stderr = stderr


class _TimedOut(Exception):
    pass


class _Worker:
    """One worker process and its two pipes. Used by one thread at a time."""

    def __init__(self, backend: str, kwargs: dict[str, Any], env: dict[str, str] | None = None) -> None:
        # The worker's stderr goes to a file that has no name once the worker has it open
        # (``start_worker``): this process keeps a descriptor to read its tail (the crash report of a
        # CompilerCrashed, whose text the CLI writes to a log file it names).
        #: the variables the backend and its own cache read, as this worker inherited them (part of its
        #: identity, and of the state its compiles record)
        self.env_values = _worker_key(backend, env or {})
        #: its current directory, where NVRTC and hiprtc look for some includes (implicit.READS_CWD)
        self.cwd = os.getcwd()
        merged = {**os.environ, **(env or {})}
        self.proc, self.rx, self.tx, fd, self.stderr_path = start_worker(
            "hipexplore.compile.worker_main",
            log_prefix=f"hipexplore-{backend}-worker-",
            env={
                settings.COMPILE_WORKER.name: "1",
                **(env or {}),
                **compiler_cache.process_environment(backend, merged),
            },
        )
        self._log_fd: int | None = fd
        self.pid = self.proc.pid
        try:
            self.pidfd: int | None = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # old kernel or platform: fall back to polling
            self.pidfd = None
        self.dead = False
        self._init_message = (backend, kwargs)

    # -- waiting -----------------------------------------------------------------------------
    def _receive(self, timeout: float | None) -> tuple[str, Any]:
        """Next message, or _Died / _TimedOut. Watches the pipe and the process itself."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            objects: list[Any] = [self.rx] + ([self.pidfd] if self.pidfd is not None else [])
            slice_ = remaining if self.pidfd is not None else min(0.2, remaining if remaining is not None else 0.2)
            ready = wait(objects, slice_)
            if self.rx in ready or self.rx.poll(0):
                try:
                    return self.rx.recv()
                except (EOFError, OSError):
                    raise self._reap_dead() from None
            if (self.pidfd is not None and self.pidfd in ready) or self.proc.poll() is not None:
                if self.rx.poll(0):  # it answered just before exiting
                    continue
                raise self._reap_dead()
            if deadline is not None and time.monotonic() >= deadline:
                raise _TimedOut()

    def _reap_dead(self) -> _Died:
        try:
            returncode = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pipe broke but the process lingers: end it
            self.signal_kill()
            returncode = self.proc.wait()
        tail = self.stderr_tail()  # before kill() removes the file
        self.kill()  # its children, if any survived it
        return _Died(returncode, tail)

    def call(self, op: str, payload: Any, timeout: float | None) -> tuple[str, Any]:
        try:
            self.tx.send((op, payload))
        except (BrokenPipeError, OSError):
            raise self._reap_dead() from None
        return self._receive(timeout)

    def start(self, timeout: float) -> None:
        """Send the backend spec, wait for "ready" (or the construction error, re-raised here)."""
        try:
            self.tx.send(self._init_message)
        except (BrokenPipeError, OSError):
            raise self._reap_dead() from None
        status, value = self._receive(timeout)
        if status == "err":
            self.kill()
            raise value

    # -- ending ------------------------------------------------------------------------------
    def stderr_tail(self) -> str:
        return log_tail(self._log_fd)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group, reap it, release pipes and files."""
        if self.dead:
            return
        self.dead = True
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered: leave it to init
            pass
        self._release()

    def signal_kill(self) -> None:
        """SIGKILL only; the thread using this worker sees the death and reaps it."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self) -> None:
        """Ask politely, then kill (also reaps)."""
        if self.dead:
            return
        try:
            self.tx.send(("stop", None))
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        self.kill()

    def _release(self) -> None:
        for conn in (self.rx, self.tx):
            try:
                conn.close()
            except OSError:
                pass
        if self.pidfd is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = None
        if self._log_fd is not None:
            try:
                os.close(self._log_fd)
            except OSError:
                pass
            self._log_fd = None


def _worker_key(backend: str, env: dict[str, str]) -> tuple:
    """What a worker's environment must still be for its compiles to match the key and the state
    recorded: the variables the backend reads, and those its own cache reads (``compiler_cache``)."""
    return env_values(backend), compiler_cache.signature(backend, {**os.environ, **env} if env else None)


def _shutdown(idle: list[_Worker], busy: set[_Worker], lock: threading.Lock) -> None:
    """Stop every worker (idle ones politely, busy ones by SIGKILL). Safe to call twice."""
    with lock:
        idle_now, busy_now = list(idle), list(busy)
        idle.clear()
    for w in idle_now:
        w.stop()
    for w in busy_now:  # their compiling threads reap them
        w.signal_kill()


class IsolatedCompiler(CompilerBase):
    """A ``Compiler`` whose compiles run in up to ``workers`` worker processes at once.

    ``compile`` is thread-safe. ``identity()`` is the backend's identity computed in a worker (the
    process whose libraries compile) and cached. ``available()``, ``unavailable_reason()`` and
    ``targets()`` are answered by a backend instance in this process: they only probe libraries,
    they never compile, so they cannot crash.
    """

    isolated = True

    def __init__(
        self,
        backend: str,
        kwargs: dict[str, Any] | None = None,
        *,
        workers: int = 1,
        timeout: float | None = 120.0,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        env: dict[str, str] | None = None,
    ) -> None:
        """``env``: variables the workers get beside this process's (a replay pass's compiler-cache
        mode and folders, ``compiler_cache.pass_environment``)."""
        backend_class(backend)  # validates the name
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ConfigError(f"workers must be a positive integer; got {workers!r}")
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ConfigError(f"timeout must be a positive number of seconds or None; got {timeout!r}")
        self.name = backend
        self.kwargs = dict(kwargs or {})
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        for k, v in self.kwargs.items():  # fail here, not in a worker, if something cannot cross
            try:
                pickle.dumps(v)
            except Exception as exc:
                raise ConfigError(f"backend argument {k}={v!r} cannot be sent to a worker process: {exc}") from None
        self.workers = workers
        self.timeout = None if timeout is None else float(timeout)
        self.startup_timeout = float(startup_timeout)
        self._slots = threading.BoundedSemaphore(workers)
        self._lock = threading.Lock()
        self._identity_lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False
        self._identity: CompilerIdentity | None = None
        self._identity_env: tuple = ()
        self._local: Any = None
        self._finalizer = weakref.finalize(self, _shutdown, self._idle, self._busy, self._lock)

    def __repr__(self) -> str:
        return f"IsolatedCompiler({self.name!r}, workers={self.workers}, timeout={self.timeout})"

    # ------------------------------------------------------------------ probing (in-process)
    def _probe_backend(self) -> Any:
        if self._local is None:
            self._local = backend_class(self.name)(**self.kwargs)
        return self._local

    def available(self) -> bool:
        return bool(self._probe_backend().available())

    def unavailable_reason(self) -> str:
        return str(self._probe_backend().unavailable_reason())

    def targets(self) -> tuple[str, ...]:
        return tuple(self._probe_backend().targets())

    def crashing_targets(self) -> tuple[str, ...]:
        """The backend's (answered in-process: it only reads the target list)."""
        return tuple(self._probe_backend().crashing_targets())

    # ------------------------------------------------------------------ worker calls
    def worker_pids(self) -> list[int]:
        """PIDs of live workers (idle and busy), for monitoring and tests."""
        with self._lock:
            return [w.pid for w in (*self._idle, *self._busy) if not w.dead]

    def busy_pids(self) -> list[int]:
        """PIDs of workers compiling right now."""
        with self._lock:
            return [w.pid for w in self._busy if not w.dead]

    def identity(self) -> CompilerIdentity:
        """The workers' identity (their inherited environment included): after a change of the
        variables the backend reads (inputs.ENV), idle workers with the old environment are
        retired and the identity is asked again, so key and binary always agree."""
        env = env_values(self.name)
        with self._identity_lock:
            if self._identity is None or self._identity_env != env:
                timeout = None if self.timeout is None else max(self.timeout, 60.0)
                # remembered across processes (memo.identity): a hit in a new process starts no worker
                self._identity = memo.identity(
                    self.name,
                    ["isolated", sorted(self.kwargs.items()), env, sorted(self.env.items())],
                    lambda: self._call("identity", None, timeout, None),
                    backend_class(self.name).identity_files,
                )
                self._identity_env = env
            return self._identity

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> Any:
        """The backend's own cache as the workers use it (their environment: this one's and ``env``)."""
        env = {**os.environ, **self.env} if environ is None else environ
        return self._probe_backend().own_cache(options, identity, env)

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> Any:
        """Answered in this process by the backend's resolver (``cc -M``, include resolution, a
        probe subprocess): none of them loads what could crash. Workers share this directory."""
        return self._probe_backend().implicit_inputs(request, identity)

    def compile(self, request: CompileRequest) -> ObjectCode:
        if not isinstance(request, CompileRequest):
            raise ConfigError(f"compile() takes a CompileRequest; got {type(request).__name__}")
        if request.compiler != self.name:
            raise ConfigError(f"request is for compiler {request.compiler!r}, not {self.name!r}")
        return self._call("compile", request, self.timeout, request)

    def _checkout(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise CompilerError(f"the isolated {self.name} compiler is closed")
            worker = self._idle.pop() if self._idle else None
        if worker is not None and (
            worker.env_values != _worker_key(self.name, self.env)
            or (self.name in READS_CWD and worker.cwd != os.getcwd())
        ):
            worker.stop()  # started with an environment the key no longer describes
            worker = None
        if worker is None:
            worker = _Worker(self.name, self.kwargs, self.env)
            with self._lock:
                self._busy.add(worker)
            try:
                worker.start(self.startup_timeout)
            except _Died as died:
                self._discard(worker)
                name, how = signal_description(died.returncode)
                cls = CompilerCrashed if name else CompilerUnavailable
                msg = f"{self.name} compile worker (pid {worker.pid}) failed to start: it ended with {how}"
                if cls is CompilerCrashed:
                    raise CompilerCrashed(
                        msg, signal_name=name, exitcode=died.returncode, log=died.stderr, compiler=self.name
                    ) from None
                raise CompilerUnavailable(msg + ("\n" + died.stderr[-2000:] if died.stderr else "")) from None
            except _TimedOut:
                self._discard(worker)
                raise CompilerUnavailable(
                    f"{self.name} compile worker (pid {worker.pid}) did not start within {self.startup_timeout} s"
                ) from None
            except BaseException:
                self._discard(worker)
                raise
        else:
            with self._lock:
                self._busy.add(worker)
        return worker

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._busy.discard(worker)

    def _checkin(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
            if self._closed:
                closed = True
            else:
                closed = False
                self._idle.append(worker)
        if closed:
            worker.stop()

    def _call(self, op: str, payload: Any, timeout: float | None, request: CompileRequest | None) -> Any:
        with self._slots:
            worker = self._checkout()
            try:
                status, value = worker.call(op, payload, timeout)
            except _Died as died:
                self._discard(worker)
                if self._closed:
                    raise CompilerError(f"the isolated {self.name} compiler was closed during {op}") from None
                raise self._crash_error(worker.pid, died, op, request) from None
            except _TimedOut:
                self._discard(worker)
                raise self._timeout_error(worker, timeout, op, request) from None
            except BaseException:  # e.g. KeyboardInterrupt while waiting: the worker's state is unknown
                self._discard(worker)
                raise
            self._checkin(worker)
        if status == "err":
            raise value
        return value

    def _where(self, request: CompileRequest | None) -> tuple[str, dict[str, Any]]:
        if request is None:
            return "computing its identity", {"compiler": self.name}
        text = f"compiling {request.name!r} for target {request.target!r} with options {list(request.options)}"
        return text, {
            "compiler": self.name,
            "target": request.target,
            "options": request.options,
            "kernels": request.kernels,
        }

    def _crash_error(self, pid: int, died: _Died, op: str, request: CompileRequest | None) -> CompilerCrashed:
        name, how = signal_description(died.returncode)
        where, fields = self._where(request)
        hint = ""
        if self.name == "hiprtc" and request is not None and name:
            known = self.targets()
            if known and request.target.split(":")[0] not in known:
                hint = f"; {request.target!r} is not in this comgr's ISA list (ROCm 5.2's comgr aborts or segfaults on such targets)"
        msg = f"{self.name} compile worker (pid {pid}) died with {how} while {where}{hint}; the worker was replaced"
        return CompilerCrashed(msg, signal_name=name, exitcode=died.returncode, log=died.stderr, **fields)

    def _timeout_error(
        self, worker: _Worker, timeout: float | None, op: str, request: CompileRequest | None
    ) -> CompileTimeout:
        where, fields = self._where(request)
        msg = (
            f"{self.name} compile worker (pid {worker.pid}) ran past the timeout of {timeout} s while {where}; "
            f"it was killed and will be replaced (set timeout= or HIPEXPLORE_COMPILE_TIMEOUT to allow longer)"
        )
        return CompileTimeout(msg, timeout=float(timeout or 0), log=worker.stderr_tail(), **fields)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop all workers; later compiles raise. Compiles in flight end with CompilerError."""
        with self._lock:
            self._closed = True
        self._finalizer()
