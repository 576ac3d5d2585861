"""NVRTC through cuda-bindings (``cuda.bindings.nvrtc``; ``cuda.nvrtc`` for cuda-python < 12.6).

Targets are ``sm_XX`` (optionally ``sm_90a``). Mode ``cubin`` (default) compiles with
``-arch=sm_XX`` and returns the cubin; mode ``ptx`` compiles with ``-arch=compute_XX`` and returns
the PTX text as bytes. The identity stamps the libnvrtc actually loaded (found through
cuda-pathfinder, else /proc/self/maps after the first call) and its builtins library; it is
remembered across processes (``memo.identity``), so a new process that only hits the cache never
loads NVRTC. NVRTC's own cache and automatic PCH are set per compile from
``compiler_cache.state`` (``--no-cache``/``-pch`` added to the call), and every compile records the
options and the cache variables of the real ``nvrtcCompileProgram`` call in its metadata
(``compiler_call``).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
import threading
from typing import Any

from ..errors import CompilerUnavailable, ConfigError
from . import compiler_cache, memo
from ._common import Trace, dump_text, file_stamp, join_log, loaded_libraries, user_diagnostics
from .implicit import Deps, Implicit, parse_nvrtc_deps, runtime_inputs
from .inputs import env_identity
from .base import RawCompile, RuntimeCompiler
from .request import CompileRequest, CompilerIdentity

MODES = ("cubin", "ptx")
_TARGET_RX = re.compile(r"^sm_(\d+)([af]?)$")
_SUCCESS = 0
#: Files NVRTC's front end lists that are built into the library (not read from disk).
_PSEUDO_FILES = frozenset({"__nv_nvrtc_builtin_header.h", "__nv_name_map"})


def _import_nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc  # cuda-bindings >= 12.6

        return nvrtc
    except ImportError as first:
        try:
            from cuda import nvrtc  # older cuda-python

            return nvrtc
        except ImportError:
            from ..extras import message

            raise CompilerUnavailable(
                message(
                    "NVRTC",
                    "cuda",
                    detail=f"NVRTC bindings not importable: looked for cuda.bindings.nvrtc ({first}) and "
                    "cuda.nvrtc; the extra brings cuda-bindings + nvidia-cuda-nvrtc",
                )
            ) from first


def _package_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "unknown"


class NvrtcCompiler(RuntimeCompiler):
    """NVRTC backend; NVRTC is thread-safe, so compiles run concurrently in-process."""

    name = "nvrtc"
    api = "nvrtc"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nvrtc: Any = None
        self._reason = ""
        self._identity: CompilerIdentity | None = None
        self._targets: tuple[str, ...] | None = None

    def _bindings(self) -> Any:
        if self._nvrtc is not None:
            return self._nvrtc
        with self._lock:
            if self._nvrtc is not None:
                return self._nvrtc
            try:
                nvrtc = _import_nvrtc()
                try:
                    status, _major, _minor = nvrtc.nvrtcVersion()
                except Exception as exc:  # libnvrtc missing: cuda-bindings raises on first call
                    raise CompilerUnavailable(
                        f"cuda-bindings could not load libnvrtc ({exc}); install nvidia-cuda-nvrtc "
                        f"or put a CUDA toolkit's libnvrtc.so on the library path"
                    ) from exc
                if int(status) != _SUCCESS:
                    raise CompilerUnavailable(f"nvrtcVersion failed: {status!r}")
            except CompilerUnavailable as exc:
                self._reason = str(exc)
                raise
            self._nvrtc = nvrtc
            return nvrtc

    def library_path(self) -> str:
        """The libnvrtc file in use: cuda-pathfinder's answer (what cuda-bindings loads), else the
        only libnvrtc in /proc/self/maps (with several mapped, e.g. torch's too, none is guessed)."""
        self._bindings()
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            return os.path.realpath(load_nvidia_dynamic_lib("nvrtc").abs_path)
        except Exception:
            pass
        mapped = sorted({os.path.realpath(m) for m in loaded_libraries(r"^libnvrtc\.so")})
        return mapped[0] if len(mapped) == 1 else ""

    def version(self) -> str:
        """``nvrtc MAJOR.MINOR`` from the loaded library (the identity's version, no file hashed)."""
        _status, major, minor = self._bindings().nvrtcVersion()
        return f"nvrtc {major}.{minor}"

    def identity(self) -> CompilerIdentity:
        if self._identity is None:
            self._identity = memo.identity(self.name, [], self._identity_now)
        return env_identity(self._identity)

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> compiler_cache.OwnCache:
        """NVRTC's own cache and PCH for a compile with ``options`` (``compiler_cache.state``)."""
        return compiler_cache.state(self.name, tuple(options), environ)

    def _identity_now(self) -> CompilerIdentity:
        version = self.version()  # loads libnvrtc: its file is known (mapped) after it
        library = self.library_path()
        extra: list[tuple[str, str]] = [("cuda_bindings", _package_version("cuda-bindings"))]
        # libnvrtc-builtins is loaded lazily by the first compile: take it from libnvrtc's directory
        # (not from the process maps) so the identity is the same before and after a compile
        builtins = sorted(glob.glob(os.path.join(os.path.dirname(library), "libnvrtc-builtins.so*"))) if library else []
        if builtins:
            extra += [("builtins", os.path.realpath(builtins[-1])), ("builtins_stamp", file_stamp(builtins[-1]))]
        return CompilerIdentity(
            name=self.name,
            version=version,
            library=library,
            stamp=file_stamp(library) if library and os.path.exists(library) else "",
            extra=tuple(extra),
        )

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> Implicit:
        """Files NVRTC reads outside the request (absolute includes, quoted ones beside the
        including name: the current directory for the main source), as NVRTC's own front end
        lists them (``dependencies``), compile/implicit.py."""
        return runtime_inputs(request, identity, self.dependencies)

    def dependencies(self, request: CompileRequest) -> Deps:
        """NVRTC's own list of the files a compile opens: the same program (source, headers,
        options, target) run through its front end's make-dependency mode (``-Xcudafe -M``,
        written to a file with ``-Xcudafe -o``), so line splices, digraphs, comments, macros
        and conditions are NVRTC's. ~15 ms. An ``error`` when it cannot say (then the compile is
        not cached)."""
        try:
            options = self._prepare(request)
            nvrtc = self._bindings()
        except (CompilerUnavailable, ConfigError) as exc:
            return Deps(error=str(exc).splitlines()[0])
        fd, path = tempfile.mkstemp(prefix="hipexplore-nvrtc-", suffix=".d")
        os.close(fd)
        try:
            opts = [o.encode() for o in (*options, "-Xcudafe", "-M", "-Xcudafe", "-o", "-Xcudafe", path)]
            headers = [h.text.encode() for h in request.headers]
            status, prog = nvrtc.nvrtcCreateProgram(
                request.source.text.encode(),
                request.source.name.encode(),
                len(headers),
                headers,
                [h.name.encode() for h in request.headers],
            )
            if int(status) != _SUCCESS:
                return Deps(error=f"NVRTC's dependency list: nvrtcCreateProgram failed: {_status_name(status)}")
            try:
                (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
                log = _program_log(nvrtc, prog)
            finally:
                nvrtc.nvrtcDestroyProgram(prog)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError as exc:
            return Deps(error=f"NVRTC's dependency list could not be read: {exc}")
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        errors = [line.strip() for line in log.splitlines() if re.search(r"\berror\b", line)]
        if errors or not text.strip():
            why = errors[0] if errors else f"no output ({_status_name(status)}: {log.strip()[:200]})"
            return Deps(error=f"NVRTC could not list the files this compile reads (-Xcudafe -M): {why[:300]}")
        files = [d for d in parse_nvrtc_deps(text, request.source.name) if d not in _PSEUDO_FILES]
        return Deps(files=tuple(files))

    def targets(self) -> tuple[str, ...]:
        if self._targets is None:
            try:
                nvrtc = self._bindings()
            except CompilerUnavailable:
                return ()
            status, archs = nvrtc.nvrtcGetSupportedArchs()
            self._targets = tuple(f"sm_{a}" for a in archs) if int(status) == _SUCCESS else ()
        return self._targets

    def _check(self, request: CompileRequest) -> re.Match:
        if request.compiler != self.name:
            raise ConfigError(f"request is for compiler {request.compiler!r}, not {self.name!r}")
        if request.mode not in MODES:
            raise ConfigError(f"nvrtc mode must be one of {MODES}; got {request.mode!r}")
        m = _TARGET_RX.match(request.target)
        if not m:
            raise ConfigError(f"nvrtc target must look like 'sm_90' or 'sm_90a'; got {request.target!r}")
        for opt in request.options:
            if opt.startswith(("-arch", "--gpu-architecture", "-code")):
                raise ConfigError(
                    f"option {opt!r} sets the GPU target; set request.target instead (got target {request.target!r})"
                )
        return m

    def _prepare(self, request: CompileRequest) -> tuple[str, ...]:
        m = self._check(request)
        self._bindings()
        known = self.targets()
        if known and f"sm_{m.group(1)}" not in known:  # NVRTC's own refusal is two lines (status, then its log)
            raise ConfigError(
                f"nvrtc target {request.target!r} is not one this NVRTC compiles for; expected one of "
                f"{', '.join(known)} (optionally with an 'a' or 'f' suffix)"
            )
        arch = f"sm_{m.group(1)}{m.group(2)}" if request.mode == "cubin" else f"compute_{m.group(1)}{m.group(2)}"
        compiler_cache.check(self.name, request.options)  # a CUDA_CACHE_PATH it cannot use: one line, before compiling
        return (f"-arch={arch}", *request.options, *self.own_cache(request.options).options)

    def _invoke(self, request: CompileRequest, options: tuple[str, ...], trace: Trace) -> RawCompile:
        binary, ptx, lowered, log, status = self._run(self._bindings(), request, options, trace)
        call = {
            "options": list(options),
            "environment": compiler_cache.environment(self.name),
            "pid": os.getpid(),
            "own_cache": self.own_cache(request.options).label(),
        }
        return RawCompile(
            binary,
            lowered,
            user_diagnostics(log, request),
            "" if int(status) == _SUCCESS else _status_name(status),
            asm=ptx,
            metadata={"compiler_call": call},
        )

    def _dump_asm(self, request: CompileRequest, raw: RawCompile) -> list[str]:
        return _dump_asm(request, raw.binary, raw.asm)

    def _run(self, nvrtc: Any, request: CompileRequest, options: tuple[str, ...], trace: Trace):
        headers = [h.text.encode() for h in request.headers]
        names = [h.name.encode() for h in request.headers]
        status, prog = trace.call(
            "nvrtcCreateProgram",
            nvrtc.nvrtcCreateProgram,
            request.source.text.encode(),
            request.source.name.encode(),
            len(headers),
            headers,
            names,
            show=(request.source.name, [h.name for h in request.headers]),
        )
        if int(status) != _SUCCESS:
            return b"", b"", {}, f"nvrtcCreateProgram failed: {_status_name(status)}", status
        try:
            for kernel in request.kernels:
                (st,) = trace.call(
                    "nvrtcAddNameExpression", nvrtc.nvrtcAddNameExpression, prog, kernel.encode(), show=(kernel,)
                )
                if int(st) != _SUCCESS:
                    return b"", b"", {}, f"nvrtcAddNameExpression({kernel!r}) failed: {_status_name(st)}", st
            opts = [o.encode() for o in options]
            (status,) = trace.call(
                "nvrtcCompileProgram", nvrtc.nvrtcCompileProgram, prog, len(opts), opts, show=(list(options),)
            )
            log = _program_log(nvrtc, prog)
            if int(status) != _SUCCESS:
                return b"", b"", {}, log, status
            lowered: dict[str, str] = {}
            for kernel in request.kernels:
                st, name = trace.call(
                    "nvrtcGetLoweredName", nvrtc.nvrtcGetLoweredName, prog, kernel.encode(), show=(kernel,)
                )
                if int(st) != _SUCCESS:
                    return (
                        b"",
                        b"",
                        {},
                        join_log(log, f"nvrtcGetLoweredName({kernel!r}) failed: {_status_name(st)}"),
                        st,
                    )
                lowered[kernel] = name.decode() if isinstance(name, bytes) else str(name)
            ptx = b""
            if request.mode == "ptx" or "dump-asm" in request.diagnostics:
                st, size = trace.call("nvrtcGetPTXSize", nvrtc.nvrtcGetPTXSize, prog)
                if int(st) == _SUCCESS:
                    buf = b" " * size
                    (st,) = trace.call("nvrtcGetPTX", nvrtc.nvrtcGetPTX, prog, buf, show=(size,))
                    ptx = buf.rstrip(b"\0") if int(st) == _SUCCESS else b""
                if request.mode == "ptx" and int(st) != _SUCCESS:
                    return b"", b"", {}, join_log(log, f"nvrtcGetPTX failed: {_status_name(st)}"), st
            if request.mode == "ptx":
                return ptx, ptx, lowered, log, _SUCCESS
            st, size = trace.call("nvrtcGetCUBINSize", nvrtc.nvrtcGetCUBINSize, prog)
            buf = b" " * size
            (st2,) = trace.call("nvrtcGetCUBIN", nvrtc.nvrtcGetCUBIN, prog, buf, show=(size,))
            if int(st) != _SUCCESS or int(st2) != _SUCCESS:
                bad = st if int(st) != _SUCCESS else st2
                return b"", b"", {}, join_log(log, f"nvrtcGetCUBIN failed: {_status_name(bad)}"), bad
            return bytes(buf), ptx, lowered, log, _SUCCESS
        finally:
            trace.call("nvrtcDestroyProgram", nvrtc.nvrtcDestroyProgram, prog)


def _program_log(nvrtc: Any, prog: Any) -> str:
    status, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if int(status) != _SUCCESS or size <= 1:
        return ""
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode("utf-8", "replace")


def _status_name(status: Any) -> str:
    return getattr(status, "name", None) or f"nvrtcResult {int(status)}"


def _dump_asm(request: CompileRequest, binary: bytes, ptx: bytes) -> list[str]:
    """PTX from nvrtcGetPTX; SASS from cuobjdump when it is installed and a cubin was built."""
    notes = []
    if ptx:
        notes.append(f"dump-asm: wrote {dump_text(request, '.ptx', ptx)}")
    else:
        notes.append("dump-asm: NVRTC returned no PTX for this compile")
    if request.mode == "cubin":
        tool = shutil.which("cuobjdump")
        if not tool:
            notes.append("dump-asm: SASS skipped, cuobjdump not on PATH")
        else:
            cubin = dump_text(request, ".cubin", binary)
            proc = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, timeout=120)
            if proc.returncode == 0:
                notes.append(f"dump-asm: wrote {dump_text(request, '.sass', proc.stdout)}")
            else:
                notes.append(f"dump-asm: cuobjdump failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return notes
