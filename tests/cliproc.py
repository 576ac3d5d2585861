"""``python -m hipexplore ARGV`` in a real child process, without a fresh interpreter's imports each time.

Why (issue 50: the README's test command in <= 12 min on a 2-core host): a fresh ``python -m hipexplore
bench ...`` spends about 0.5 s of CPU importing numpy, pandas and pyarrow before the CLI reads its first
argument. ``run`` forks each CLI process from a *zygote* instead: one interpreter per pytest process
(xdist worker), started at the first call and ended with that process (``shutdown``), that has imported
those libraries (``PRELOAD``) and nothing of hipexplore (whose settings read the environment).

The forked child becomes what ``subprocess.run([python, "-m", "hipexplore", *argv], cwd=..., env=...,
input=..., capture_output=True)`` would have started (or ``[script, *argv]``, ``[python, "-c", code,
*argv]``): its own pid and rusage; the working directory, umask, ignored and blocked signals; exactly
``env`` as its environment (``os.environ`` and the C environment its own children inherit); ``sys.path``
as Python builds it (the working directory for ``-m``, then ``PYTHONPATH``'s entries made absolute and
the interpreter's own, without duplicates); ``sys.argv`` and ``sys.orig_argv``; standard streams on
pipes (stdin: ``input``, else this process's); no other file descriptor; fresh random seeds; the
temporary folder and the user's site folder found again from ``env``. It runs ``__main__`` with
``runpy`` and ends as Python ends: non-daemon threads joined, atexit handlers run, streams flushed (a
failed flush is status 120), ``SystemExit``'s code, an uncaught exception's traceback on stderr and
status 1, an uncaught KeyboardInterrupt by SIGINT, a signal as a negative return code. A ``timeout``
kills it and raises ``subprocess.TimeoutExpired``, as ``subprocess.run`` does.
tests/suite/test_cliproc.py compares a zygote child with a fresh interpreter fact by fact.

What must stay on ``subprocess`` (the claim is about the fresh process itself): what a fresh interpreter
imports (``bench --help`` imports no numpy), interpreter options (``-I``, ``-P``), modules planted on a
fresh interpreter's path, signals sent to the process (SIGINT handling), another user, a new session, a
process the test watches while it runs (``Popen``). ``run`` itself starts a fresh interpreter
(``subprocess.run``, the same answer) where the zygote could not give the same start: a variable read
at interpreter start-up or by the preloaded libraries' import (``STARTUP_PREFIXES``) that differs from
the zygote's, a working directory that is not one (``subprocess`` raises), a call from a second thread
while one runs. Every child shares the zygote's string hash seed (as under a fixed ``PYTHONHASHSEED``).
"""

from __future__ import annotations

import atexit
import builtins
import importlib
import json
import os
import runpy
import selectors
import signal
import site
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types

#: What the zygote imports: the third-party libraries the CLI's data commands import first (about
#: 0.5 s of CPU together). Nothing of hipexplore (its settings read the environment at import).
PRELOAD = ("numpy", "numpy.random", "pandas", "pyarrow", "pyarrow.parquet", "pyarrow.compute")
#: Environment read before a child's first line runs: by the interpreter's start-up (``PYTHON*``, the
#: locale), the C library (``TZ``, ``MALLOC_*``, ``LD_*``) or the preloaded libraries' import (BLAS and
#: OpenMP thread counts, numpy's and Arrow's switches). ``PYTHONPATH`` is rebuilt in the child.
STARTUP_PREFIXES = (
    "PYTHON",
    "LC_",
    "LANG",
    "TZ",
    "OMP_",
    "OPENBLAS_",
    "GOTO_",
    "MKL_",
    "BLIS_",
    "NUMEXPR_",
    "NPY_",
    "NUMPY_",
    "ARROW_",
    "PYARROW_",
    "PANDAS_",
    "MALLOC_",
    "LD_",
)
#: How long the zygote may take to start and fork (not part of the caller's ``timeout``).
FORK_BOUND_S = 300.0
#: How many CLI processes each way took, in this process: tests/suite/test_cliproc.py checks that
#: the zygote is used.
STARTS = {"zygote": 0, "fresh": 0}
TESTS = os.path.dirname(os.path.abspath(__file__))


def startup_environment(env: dict[str, str]) -> dict[str, str]:
    """The part of ``env`` a forked child cannot take on after the interpreter has started."""
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) and k != "PYTHONPATH"}


def run(
    argv,
    *,
    cwd=None,
    env: dict[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float | None = None,
    text: bool = True,
    encoding: str | None = None,
    errors: str | None = None,
    check: bool = False,
    module: str = "hipexplore",
    script=None,
    code: str | None = None,
) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, ...)``, forked from
    this process's zygote where that gives the same start (module docstring), else exactly that call.
    ``script``: ``subprocess.run([script, *argv], ...)`` instead, for a console script (``.venv/bin/
    hipexplore``) whose ``#!`` line names this interpreter; ``code``: ``[sys.executable, "-c", code,
    *argv]`` (a wrapper that runs the CLI its own way). ``text`` (the default), ``encoding``,
    ``errors``: decoded as ``subprocess`` decodes (universal newlines); ``TimeoutExpired`` carries bytes
    either way."""
    argv = [os.fspath(a) for a in argv]
    if code is not None:
        how, args = ("code", code), [sys.executable, "-c", code, *argv]
    elif script is not None:
        how, args = ("script", os.fspath(script)), [os.fspath(script), *argv]
    else:
        how, args = ("module", module), [sys.executable, "-m", module, *argv]
    env = dict(os.environ if env is None else env)
    cwd = os.getcwd() if cwd is None else os.fspath(cwd)
    decode = text or encoding is not None or errors is not None
    if isinstance(input, str):
        input = input.encode(encoding or _locale_encoding(), errors or "strict")
    zygote = _zygote_for(env, cwd, how)
    if zygote is None or not zygote.lock.acquire(blocking=False):
        STARTS["fresh"] += 1
        done = subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=True, timeout=timeout)
        returncode, out, err = done.returncode, done.stdout, done.stderr
    else:
        try:
            STARTS["zygote"] += 1
            start = {"how": how, "argv": argv, "cwd": cwd, "env": env}
            returncode, out, err = zygote.run(args, start, input, timeout)
        finally:
            zygote.lock.release()
    if decode:
        out, err = _decoded(out, encoding, errors), _decoded(err, encoding, errors)
    done = subprocess.CompletedProcess(args, returncode, out, err)
    if check:
        done.check_returncode()
    return done


def _locale_encoding() -> str:
    import locale

    return locale.getpreferredencoding(False)


def _decoded(data: bytes, encoding: str | None, errors: str | None) -> str:
    """As ``subprocess`` reads a text-mode pipe: decoded, universal newlines."""
    text = data.decode(encoding or _locale_encoding(), errors or "strict")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# -- the caller's side -----------------------------------------------------------------------------------
_ZYGOTE: Zygote | None = None
_STARTING = threading.Lock()  # two threads' first calls start one zygote


def shutdown() -> None:
    """End this process's zygote, if it has one. tests/conftest.py calls it before the session ends
    the process with ``os._exit``, which runs no atexit handler."""
    global _ZYGOTE
    if _ZYGOTE is not None:
        _ZYGOTE.close()
        _ZYGOTE = None


def _zygote_for(env: dict[str, str], cwd: str, how: tuple[str, str]) -> Zygote | None:
    """This process's zygote if it can start this child as a fresh interpreter would, else None."""
    global _ZYGOTE
    if not os.path.isdir(cwd) or (how[0] == "script" and not _runs_here(how[1])):
        return None
    current = startup_environment({k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    with _STARTING:
        if _ZYGOTE is not None and _ZYGOTE.owner == os.getpid() and _ZYGOTE.alive() and _ZYGOTE.startup != current:
            _retire(_ZYGOTE)  # this process's environment moved on since it started (below)
        if _ZYGOTE is None or _ZYGOTE.owner != os.getpid() or not _ZYGOTE.alive():
            if _ZYGOTE is not None and _ZYGOTE.owner == os.getpid():
                _ZYGOTE.close()
            _ZYGOTE = Zygote()
        zygote = _ZYGOTE
    return zygote if startup_environment(env) == zygote.startup else None


def _retire(zygote: Zygote) -> None:
    """Close ``zygote``, started under another environment than this process has now, unless a
    thread is running a child through it (then it stays, and calls that do not match it go fresh).
    Why: a zygote started while a variable of the start-up was set for a moment (``PYTHONSAFEPATH``
    while Dask spawns a worker, a test's ``monkeypatch.setenv``) matched no later call, and every
    call of that xdist worker went to a fresh interpreter (the README's test command beside two
    busy loops at 71a434d: 13 tests of tests/suite/test_cliproc.py failed "the zygote was not
    used"). Its lock stays held: a thread that took it a moment before finds it busy and goes fresh."""
    if zygote.lock.acquire(blocking=False):
        zygote.close()


def _runs_here(script: str) -> bool:
    """``script`` is a Python script the kernel would start with this interpreter, named by a path that
    is its own (absolute, no link: Python puts its folder first on ``sys.path``)."""
    if not os.path.isabs(script) or os.path.realpath(script) != script or not os.access(script, os.X_OK):
        return False
    with open(script, "rb") as f:
        return f.readline().rstrip(b"\n") == b"#!" + os.fsencode(sys.executable)


class Zygote:
    """The zygote process of this pytest process and the socket that asks it for children."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.startup = startup_environment(env)
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.sock, theirs = socket.socketpair()
        boot = f"import sys; sys.path[0] = {TESTS!r}; import cliproc; del sys.path[0]; cliproc.serve(int(sys.argv[1]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", boot, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            cwd="/",
        )
        theirs.close()
        atexit.register(self.close)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.sock.fileno() >= 0

    def close(self) -> None:
        """End the zygote and wait for it (its CPU time, and its children's, counts as this process's
        children's: ``time pytest`` sees it): its socket closes, so it leaves; killed if it does not."""
        self.sock.close()
        if self.owner == os.getpid() and self.proc.poll() is None:
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def run(self, args, start: dict, input, timeout):
        """(returncode, stdout bytes, stderr bytes) of one child; its lifetime as ``subprocess.run``'s.
        Anything that leaves the zygote out of step with its requests closes it (the next call starts
        another)."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if input is not None else (0, None)
        theirs = [out_w, err_w] + ([in_r] if in_w is not None else [])  # the child's ends: closed once sent
        pid = None
        try:
            umask = os.umask(0o22)
            os.umask(umask)
            ignored = [int(n) for n in signal.valid_signals() if signal.getsignal(n) is signal.SIG_IGN]
            blocked = [int(n) for n in signal.pthread_sigmask(signal.SIG_BLOCK, [])]
            request = {**start, "umask": umask, "ignored": ignored, "blocked": blocked}
            _send(self.sock, request, [in_r, out_w, err_w])
            while theirs:
                os.close(theirs.pop())
            pid = self._answer(FORK_BOUND_S)["pid"]
            feed, in_w = in_w, None  # _communicate owns it now
            return self._communicate(args, pid, out_r, err_r, feed, input or b"", timeout)
        except subprocess.TimeoutExpired:
            raise  # the child killed and its status taken: in step
        except BaseException:
            if pid is not None:
                _kill(pid)
            self.close()
            raise
        finally:
            for fd in [out_r, err_r, *theirs, *([in_w] if in_w is not None else [])]:
                os.close(fd)

    def _answer(self, bound: float | None) -> dict:
        self.sock.settimeout(bound)
        try:
            return _receive(self.sock)[0]
        finally:
            self.sock.settimeout(None)

    def _communicate(self, args, pid, out_r, err_r, in_w, input: bytes, timeout):
        """Feed stdin, read both pipes to their end, take the exit status (``Popen.communicate``,
        then ``wait``); past ``timeout``: kill the child, take its status, raise ``TimeoutExpired``.
        Owns ``in_w``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        status = None
        view = memoryview(input)
        with selectors.DefaultSelector() as sel:
            for fd in (out_r, err_r):
                sel.register(fd, selectors.EVENT_READ)
            sel.register(self.sock, selectors.EVENT_READ)
            if in_w is not None:
                sel.register(in_w, selectors.EVENT_WRITE)
            try:
                while sel.get_map():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        if status is None:  # as subprocess.run: the child is killed, then waited for
                            _kill(pid)
                            status = self._answer(None)["status"]
                        out, err = b"".join(chunks[out_r]), b"".join(chunks[err_r])
                        raise subprocess.TimeoutExpired(args, timeout, out, err)
                    for key, _ in sel.select(left):
                        if key.fileobj is self.sock:
                            status = self._answer(None)["status"]
                            sel.unregister(self.sock)
                        elif key.fd == in_w:
                            try:
                                view = view[os.write(in_w, view[:65536]) :]
                            except BrokenPipeError:
                                view = view[:0]
                            if not view:
                                sel.unregister(in_w)
                                os.close(in_w)
                                in_w = None
                        else:
                            data = os.read(key.fd, 65536)
                            if data:
                                chunks[key.fd].append(data)
                            else:
                                sel.unregister(key.fd)
            finally:
                if in_w is not None:
                    os.close(in_w)
        return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _send(sock: socket.socket, message: dict, fds: list[int] = ()) -> None:
    payload = json.dumps(message).encode()
    socket.send_fds(sock, [struct.pack("!I", len(payload))], list(fds))
    sock.sendall(payload)


def _receive(sock: socket.socket) -> tuple[dict, list[int]]:
    head, fds, _, _ = socket.recv_fds(sock, 4, 3)
    while len(head) < 4:
        more = sock.recv(4 - len(head))
        if not more:
            raise EOFError("the zygote went away")
        head += more
    size = struct.unpack("!I", head)[0]
    payload = b""
    while len(payload) < size:
        more = sock.recv(size - len(payload))
        if not more:
            raise EOFError("the zygote went away")
        payload += more
    return json.loads(payload), fds


# -- the zygote's side -----------------------------------------------------------------------------------
def serve(fd: int) -> None:
    """The zygote: import ``PRELOAD``, then for each request fork a child, answer its pid, wait for
    it and answer its wait status. Ends when its caller's end of the socket closes."""
    for name in PRELOAD:
        importlib.import_module(name)
    base_path = list(sys.path)
    sock = socket.socket(fileno=fd)
    while True:
        try:
            request, fds = _receive(sock)
        except (EOFError, ConnectionError):
            os._exit(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.detach()
            _child(request, fds, base_path)  # never returns
        for child_fd in fds:
            os.close(child_fd)
        _send(sock, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(sock, {"status": status})


def _child(request: dict, fds: list[int], base_path: list[str]) -> None:
    """Become ``python -m MODULE ARGV`` (or ``SCRIPT ARGV``, ``python -c CODE ARGV``) started in ``cwd``
    with ``env``, ``umask``, the caller's signal state and these three streams."""
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        _signals_as_inherited(request["ignored"], request["blocked"])
        os.environ.clear()
        os.environ.update(request["env"])
        kind, what = request["how"]
        first = {"module": os.getcwd(), "script": os.path.dirname(what), "code": ""}[kind]
        sys.path[:] = [first, *_site_path(request["env"].get("PYTHONPATH", ""), base_path)]
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        head = {"module": ["-m", what], "script": [what], "code": ["-c", what]}[kind]
        sys.orig_argv = [sys.executable, *head, *request["argv"]]
        sys.argv = [head[0], *request["argv"]]
        sys.modules["numpy.random"].seed()  # the legacy global generator, seeded anew as in a fresh start
        tempfile.tempdir = None  # found again from this environment's TMPDIR at first use
        if site.USER_SITE is not None:  # computed at start-up from HOME (PYTHONUSERBASE: a start-up variable)
            site.USER_BASE = site.USER_SITE = None
            site.getusersitepackages()
    except BaseException:
        os._exit(255)
    _finish(*_main(kind, what))


def _signals_as_inherited(ignored: list[int], blocked: list[int]) -> None:
    """The signal state a fresh interpreter started by the caller now would have: what the caller
    ignores stays ignored across ``exec`` (SIGINT included: Python then leaves it alone), what it
    blocks stays blocked; Python's own start-up sets SIGINT to ``KeyboardInterrupt`` and ignores
    SIGPIPE and SIGXFSZ; every other signal is at its default."""
    fresh = {signal.SIGINT: signal.default_int_handler, signal.SIGPIPE: signal.SIG_IGN, signal.SIGXFSZ: signal.SIG_IGN}
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(number, signal.SIG_IGN if int(number) in ignored else fresh.get(number, signal.SIG_DFL))
        except (OSError, ValueError):  # signals the C library keeps for itself (the real-time ones it uses)
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _site_path(pythonpath: str, base_path: list[str]) -> list[str]:
    """``sys.path`` after ``site`` for this ``PYTHONPATH``: its entries (an empty one too) made absolute
    before the interpreter's own, duplicates dropped (``site.removeduppaths``); ``-m`` then puts the
    working directory first."""
    out: list[str] = []
    for entry in [os.path.abspath(p) for p in pythonpath.split(os.pathsep)] if pythonpath else []:
        if entry not in out:
            out.append(entry)
    return out + [entry for entry in base_path if entry not in out]


def _main(kind: str, what: str) -> tuple[int, bool]:
    """Run the module, script or code ``what`` as ``__main__``; (exit status, ended by
    KeyboardInterrupt) as Python gives them."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main  # a fresh one: the zygote's holds its own start-up code
    try:
        if kind == "module":
            runpy.run_module(what, run_name="__main__", alter_sys=True)
        elif kind == "script":
            runpy.run_path(what, run_name="__main__")
        else:
            exec(compile(what, "<string>", "exec"), main.__dict__)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, False
        if isinstance(code, int):
            return code, False
        print(code, file=sys.stderr)
        return 1, False
    except BaseException as exc:  # noqa: BLE001 - as the interpreter's own top level
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return 1, isinstance(exc, KeyboardInterrupt)
    return 0, False


def _finish(code: int, interrupted: bool) -> None:
    """End as ``Py_FinalizeEx``: join non-daemon threads, run atexit handlers, flush the streams."""
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - Python exits 120 when it cannot flush
            code = code or 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)
