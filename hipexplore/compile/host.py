"""Host C compiler backend: ``$CC -O3 -shared -fPIC`` -> the shared library's bytes.

Used by the host device (ctypes) so the whole compile-cache-benchmark path runs without a GPU.
The identity is the compiler's ``--version`` first line, its resolved path and a stamp of the
driver file; for gcc the stamp of ``cc1`` (the real compiler proper) is added, because a gcc
upgrade can replace cc1 without touching the driver. ``identity()`` re-stats both files at most
once a second (``identity_recheck_seconds``), so pointing ``CC`` elsewhere or replacing either
binary changes the identity within a second.

The files a compile reads outside the request (``/usr/local/include``, ``CPATH`` folders, absolute
``#include``, object files, archives and linker scripts among the options, ``-l`` libraries) are
listed by the compiler itself: ``implicit_inputs`` runs ``cc -M -v`` and the driver's ``-###`` plan
on the request laid out as for the compile (compile/implicit.py keys and watches them).

``CC`` may be a wrapper that picks the compiler, or adds flags, from the environment: the
identity holds what actually runs, as the driver reports it through the wrapper in the current
environment (its ``-###`` plan for a probe compile: the programs, their files' SHA-256 and their
arguments; the full ``--version`` text), and it is asked again whenever any environment variable
changes (a wrapper may read any) or one of those files changes. Not covered: a wrapper choosing
by something other than its environment and files it runs (a config file it reads, the time).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .. import settings
from ..errors import CompilerUnavailable, CompileTimeout, ConfigError
from ._common import dump_text, file_stamp, join_log
from . import implicit, memo
from .inputs import env_identity
from .leftovers import (  # noqa: F401 - the leftover clean-up lived here; its names still do
    BUILD_PREFIX,
    LOG_MIN_AGE_S,
    UNNUMBERED_MIN_AGE_S,
    WORKER_LOG_GLOB,
    clean_dead_build_dirs,
    creator_alive,
    held_names,
    remove_tree,
    start_time,
    clean_leftovers,
)
from .link_inputs import commands, driver_inputs, stable_line
from .base import CompilerBase, ObjectCode
from .request import CompileRequest, CompilerIdentity

BASE_FLAGS = ("-O3", "-shared", "-fPIC")
#: Build folders in the temp dir: ``hipexplore-host-<pid>-<random>``.
#: The programs the driver runs whose files are part of the identity.
TOOLS = ("cc1", "as", "ld")
#: How long a verified identity is trusted before the compiler file is stat'ed again.
IDENTITY_RECHECK_SECONDS = 1.0


def _probe(cmd: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """A question to the compiler driver (``--version``, ``-print-prog-name``, its ``-###`` plan),
    in a session of its own: a driver (or a wrapper ``CC``) that does not answer within
    ``HIPEXPLORE_COMPILE_TIMEOUT`` is killed with everything it started, and is a one-line
    ``CompilerUnavailable`` rather than a traceback and an orphan left running."""
    timeout = settings.COMPILE_TIMEOUT.get()
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env=env,
            errors="replace",
        )
    except OSError as exc:
        raise CompilerUnavailable(f"{cmd[0]} cannot be run: {exc}") from None
    try:
        out, err = _communicate(proc, timeout, True)
    except subprocess.TimeoutExpired:
        raise CompilerUnavailable(
            f"{shlex.join(cmd)} did not answer within {timeout:g} s and was killed "
            f"(HIPEXPLORE_COMPILE_TIMEOUT; is CC a compiler?)"
        ) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _version_probe(argv: list[str]) -> subprocess.CompletedProcess:
    proc = _probe([*argv, "--version"])
    if proc.returncode != 0:
        raise CompilerUnavailable(f"{argv[0]} --version failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    return proc


def _first_line(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout.strip().splitlines() or ["unknown"])[0]


class HostCompiler(CompilerBase):
    """``cc`` (or ``$CC``, which may carry flags, e.g. ``"ccache gcc"``) building shared libraries."""

    name = "host"

    def __init__(self, cc: str | None = None, timeout: float | None = None) -> None:
        self.cc_spec = cc or os.environ.get("CC") or "cc"
        self.timeout = timeout
        self._lock = threading.Lock()
        self._identity: CompilerIdentity | None = None
        self._identity_key: tuple = ()
        self._identity_checked = float("-inf")
        self.identity_recheck_seconds = IDENTITY_RECHECK_SECONDS

    def _command(self) -> list[str]:
        argv = shlex.split(self.cc_spec)
        if not argv:
            raise CompilerUnavailable(f"host compiler command is empty (CC={self.cc_spec!r})")
        exe = shutil.which(argv[0])
        if exe is None:
            raise CompilerUnavailable(f"host compiler {argv[0]!r} not found on PATH (from CC={self.cc_spec!r})")
        return [exe, *argv[1:]]

    def available(self) -> bool:
        try:
            self._command()
            return True
        except CompilerUnavailable:
            return False

    def unavailable_reason(self) -> str:
        try:
            self._command()
            return ""
        except CompilerUnavailable as exc:
            return str(exc)

    def targets(self) -> tuple[str, ...]:
        return ("host",)

    def version(self) -> str:
        """The first line of ``CC --version`` (the identity's version, without its tool probes and hashes)."""
        return _first_line(_version_probe(self._command()))

    def identity(self) -> CompilerIdentity:
        """Recomputed when the driver's, cc1's, as's, ld's or a planned program's (path, size,
        mtime, inode) or any environment variable changes (a ``CC`` wrapper may read any);
        otherwise cached. The variables the driver reads (``inputs.HOST_ENV``) are added on every call.

        The file check itself (which + stat, ~0.1 ms) is repeated at most every
        ``IDENTITY_RECHECK_SECONDS`` so that a memory hit stays in the microseconds.
        """
        now = time.monotonic()
        with self._lock:
            if (
                self._identity is not None
                and now - self._identity_checked < self.identity_recheck_seconds
                and self._identity_key[0] == getattr(os.environ, "_data", os.environ)
            ):
                return env_identity(self._identity)
        argv = self._command()
        exe = os.path.realpath(argv[0])
        known = [
            p for k, p in (self._identity.extra if self._identity is not None else ()) if k in TOOLS or k == "runs"
        ]
        key = self._check_key(argv, exe, known)
        with self._lock:
            if self._identity is not None and self._identity_key == key:
                self._identity_checked = now
                return env_identity(self._identity)
        # remembered across processes for this command line and this whole environment (memo.identity:
        # every program it names re-stat'ed), so a hit in a new process runs no probe
        ident = memo.identity(self.name, [argv, sorted(self._trigger_env().items())], lambda: self._probed(argv, exe))
        found = [p for k, p in ident.extra if k in TOOLS or k == "runs"]
        key = self._check_key(argv, exe, found)  # the key the next recheck compares against includes the tools
        with self._lock:
            self._identity, self._identity_key, self._identity_checked = ident, key, now
        return env_identity(ident)

    def _probed(self, argv: list[str], exe: str) -> CompilerIdentity:
        """The identity from the driver itself: its version, the programs it runs and their stamps."""
        proc = _version_probe(argv)
        first = _first_line(proc)
        extra: list[tuple[str, str]] = [("command", shlex.join(argv))]
        found = []
        for tool in TOOLS:  # the compiler proper, the assembler and the linker the driver runs
            out = _probe([*argv, f"-print-prog-name={tool}"])
            path = out.stdout.strip()
            if out.returncode == 0 and path and not os.path.isabs(path):
                path = shutil.which(path) or ""
            if out.returncode == 0 and path and os.path.exists(path):
                real = os.path.realpath(path)
                extra += [(tool, real), (f"{tool}_stamp", file_stamp(real))]
                found.append(real)
        # what actually runs: ``CC`` may be a wrapper that picks the compiler (or adds flags) from the
        # environment. The driver's own plan for a probe compile, asked through the wrapper in this
        # environment, names every program it would run and their arguments; key the plan and the
        # programs' files. It is asked again whenever the environment or one of those files changes.
        extra.append(("version_text", hashlib.sha256((proc.stdout + proc.stderr).encode()).hexdigest()))
        plan = _probe(
            [*argv, "-###", "-x", "c", "-c", "-o", os.devnull, os.devnull],
            env=dict(os.environ, LC_ALL="C", LANGUAGE="C"),
        )
        programs = []
        lines = []
        for cmd in commands(plan.stderr):
            lines.append(shlex.join(cmd))
            prog = shutil.which(cmd[0]) if not os.path.isabs(cmd[0]) else cmd[0]
            if prog and os.path.exists(prog):
                programs.append(os.path.realpath(prog))
        extra.append(("plan", hashlib.sha256("\n".join(stable_line(line) for line in lines).encode()).hexdigest()))
        for prog in dict.fromkeys(programs):
            if prog not in found:
                extra += [("runs", prog), ("runs_stamp", file_stamp(prog))]
                found.append(prog)
        return CompilerIdentity(name=self.name, version=first, library=exe, stamp=file_stamp(exe), extra=tuple(extra))

    @staticmethod
    def _trigger_env() -> dict:
        """The whole environment: a ``CC`` wrapper may choose its compiler from any variable, so
        any change asks the driver again what runs (one dict comparison per lookup)."""
        data = getattr(os.environ, "_data", None)
        return dict(data) if data is not None else dict(os.environ)

    def _check_key(self, argv: list[str], exe: str, tools: list[str]) -> tuple:
        def st(path: str) -> tuple:
            try:
                s = os.stat(path)
                return (path, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)
            except OSError:
                return (path, "gone")

        return (self._trigger_env(), tuple(argv), st(exe), *(st(t) for t in tools))

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> implicit.Implicit:
        """The files ``cc`` reads outside the request, from its own ``-M`` output (memoized)."""
        return implicit.current(request, identity, lambda col: self._dependencies(request, col))

    def _dependencies(self, request: CompileRequest, col: implicit.Collector) -> str:
        """Run ``cc -M -v`` with the compile's flags in a build folder laid out as for the compile;
        key every file it lists outside that folder and watch its search folders. Returns an
        error text ("" on success): a request the preprocessor rejects is compiled uncached."""
        try:
            argv = self._command()
            with tempfile.TemporaryDirectory(prefix=f"{BUILD_PREFIX}{os.getpid()}-") as tmp:
                src = _write_sources(Path(tmp), request)
                cmd = [*argv, *BASE_FLAGS, *request.options, f"-I{tmp}", "-M", "-MT", "deps", "-v", str(src)]
                proc = self._run(cmd, request, tmp, env=dict(os.environ, LC_ALL="C", LANGUAGE="C"))
                if proc.returncode != 0:
                    last = (proc.stderr.strip().splitlines() or [""])[-1]
                    return f"{shlex.join(cmd)} exited {proc.returncode}: {last[:300]}"
                inside = tuple({os.path.join(tmp, ""), os.path.join(os.path.realpath(tmp), "")})
                deps = []
                for dep in implicit.make_dependencies(proc.stdout):
                    path = os.path.normpath(os.path.join(tmp, dep))
                    if not path.startswith(inside):
                        deps.append(path)
                quoted, angled, missing = implicit.search_list(proc.stderr)
                roots = [os.path.normpath(os.path.join(tmp, d)) for d in (*quoted, *angled)]
                roots = [d for d in roots if not os.path.join(d, "").startswith(inside)]
                # the files the driver hands to cc1, as and ld (its own -### plan): object files,
                # archives, shared libraries and linker scripts among the options, -l libraries
                link = [
                    *argv,
                    *BASE_FLAGS,
                    *request.options,
                    f"-I{tmp}",
                    "-o",
                    os.path.join(tmp, "lib.so"),
                    str(src),
                    "-###",
                ]
                plan = self._run(link, request, tmp, env=dict(os.environ, LC_ALL="C", LANGUAGE="C"))
                if plan.returncode != 0:
                    last = (plan.stderr.strip().splitlines() or [""])[-1]
                    return f"{shlex.join(link)} exited {plan.returncode}: {last[:300]}"
                operands, watched, error = driver_inputs(plan.stderr, tmp, inside, argv)
                if error:
                    return error
        except (ConfigError, CompilerUnavailable, CompileTimeout, OSError) as exc:
            return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        for dep in deps:
            col.read(dep, dep)
        for path in operands:
            col.read(path, path)
        for path in watched:  # an earlier library folder where a same-named library would be found first
            col.watch_missing(path)
        for folder in (*roots, *(d for d in missing if os.path.isabs(d))):
            col.watch_dir(folder)  # a header added there (a __has_include, a shadowing header)
        implicit.watch_shadows(col, deps, roots)
        return ""

    def compile(self, request: CompileRequest) -> ObjectCode:
        self._check_open()
        if request.compiler != self.name:
            raise ConfigError(f"request is for compiler {request.compiler!r}, not {self.name!r}")
        if request.target != "host":
            raise ConfigError(f"host compiler target must be 'host'; got {request.target!r}")
        if request.mode != "shared-library":
            raise ConfigError(f"host compiler mode must be 'shared-library'; got {request.mode!r}")
        argv = self._command()
        notes = self._source_notes(request)
        clean_dead_build_dirs()
        with tempfile.TemporaryDirectory(prefix=f"{BUILD_PREFIX}{os.getpid()}-") as tmp:
            src = _write_sources(Path(tmp), request)
            out = Path(tmp) / "lib.so"
            # -I the build folder: headers are laid out there under their #include spelling, so an
            # angled include of a header from an include directory resolves as a quoted one does
            cmd = [*argv, *BASE_FLAGS, *request.options, f"-I{tmp}", "-o", str(out), str(src)]
            start = time.perf_counter()
            proc = self._run(cmd, request, tmp)
            seconds = time.perf_counter() - start
            trace = (
                f"[trace] {shlex.join(cmd)} -> exit {proc.returncode} in {seconds * 1e3:.1f} ms"
                if "trace" in request.diagnostics
                else ""
            )
            log = _in_build_names(join_log(proc.stdout, proc.stderr), tmp)
            if proc.returncode != 0:
                raise self._error(
                    f"host compiler {argv[0]} failed to compile {request.name!r} (exit {proc.returncode})",
                    request,
                    (*BASE_FLAGS, *request.options),
                    f"$ {shlex.join(cmd)}",
                    log,
                    trace,
                    *notes,
                )
            binary = out.read_bytes()
            if "dump-asm" in request.diagnostics:
                asm_cmd = [
                    *argv,
                    *BASE_FLAGS,
                    *request.options,
                    f"-I{tmp}",
                    "-S",
                    "-o",
                    str(Path(tmp) / "lib.s"),
                    str(src),
                ]
                asm = self._run(asm_cmd, request, tmp)
                if asm.returncode == 0:
                    path = dump_text(request, ".s", (Path(tmp) / "lib.s").read_text(errors="replace"))
                    notes.append(f"dump-asm: wrote {path}")
                else:
                    notes.append(f"dump-asm: {shlex.join(asm_cmd)} failed: {asm.stderr.strip()[-500:]}")
        return ObjectCode(
            binary=binary,
            compiler=self.name,
            target=request.target,
            mode=request.mode,
            log=join_log(log, trace, *notes),
            lowered_names={k: k for k in request.kernels},
            compile_seconds=seconds,
        )

    def _run(
        self, cmd: list[str], request: CompileRequest, cwd: str, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        # In-process: its own session, so a timeout kills the driver *and* its cc1/as/ld (killpg).
        # In an isolation worker: stay in the worker's process group, which the parent kills as a whole
        # on timeout or crash (a separate session would survive that as an orphan).
        own_group = not settings.COMPILE_WORKER.get()
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            start_new_session=own_group,
            env=env,
        )
        try:
            out, err = _communicate(proc, self.timeout, own_group)
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired as exc:
            raise CompileTimeout(
                f"host compile of {request.name!r} ran past its timeout of {self.timeout} s and was killed",
                log=join_log(f"$ {shlex.join(cmd)}", _text(exc.stdout), _text(exc.stderr)),
                options=(*BASE_FLAGS, *request.options),
                target=request.target,
                compiler=self.name,
                kernels=request.kernels,
                timeout=float(self.timeout or 0),
            ) from None


def _communicate(proc: subprocess.Popen, timeout: float | None, own_group: bool) -> tuple[str, str]:
    """``proc``'s output; on its timeout (``subprocess.TimeoutExpired``, re-raised) or any other
    exit from the wait (KeyboardInterrupt and friends) it is killed first, with its process group
    when it has its own: no compiler is left running."""
    try:
        return proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc, own_group)
        raise


def _kill_group(proc: subprocess.Popen, own_group: bool) -> None:
    try:
        if own_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()  # reap: no zombie


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _in_build_names(log: str, folder: str) -> str:
    """The compiler's diagnostics with the build folder left out of every path (``broken.c:2:11``,
    not ``/tmp/hipexplore-host-123-ab/broken.c:2:11``): the folder is gone when the message is read,
    and a name the caller knows (``request.source.name``) can be mapped back to the user's file
    (``kernels.build``)."""
    for prefix in dict.fromkeys((os.path.join(folder, ""), os.path.join(os.path.realpath(folder), ""))):
        log = log.replace(prefix, "")
    return log


def _write_sources(folder: Path, request: CompileRequest) -> Path:
    """Source and headers side by side so ``#include "x.h"`` resolves; names may not escape ``folder``."""
    for src in (request.source, *request.headers):
        path = (folder / src.name).resolve()
        if folder.resolve() not in path.parents:
            raise ConfigError(f"source/header name {src.name!r} must be a relative path inside the build folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src.text, encoding="utf-8")
    return folder / request.source.name
