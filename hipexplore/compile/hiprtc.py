"""HIP runtime compilation (hiprtc) through hip-python, for AMD GPU targets (``gfx90a`` ...).

Finding the library: hip-python 6.x/7.x opens ``libhiprtc.so`` (ROCm >= 6) on first use; ROCm 5
ships the hiprtc symbols inside ``libamdhip64.so.5``. We probe candidates with ctypes first (so an
absent ROCm gives ``CompilerUnavailable`` naming what was looked for, never a dlopen error at
compile time) and point hip-python at the one found before it loads anything (``hip.chiprtc.DLL`` for 6.x-7.x,
its library resolver for 10.x: compile/hip_bindings.py).
``HIPEXPLORE_HIPRTC_LIBRARY`` overrides the search with one name or path.

Known crash (ROCm 5.2, comgr 2.4): a target missing from comgr's ISA list (gfx940, gfx941, gfx942,
gfx1100, ...) makes hiprtcCompileProgram *abort the process* (``munmap_chunk(): invalid pointer``,
SIGABRT; in a process that compiled before, the same heap corruption may surface as SIGSEGV).
We do not hide this: in-process compiles of such targets are refused with a
CompileError that says why, and the isolated compiler (the registry default for hiprtc) lets the
real compile run in a worker process whose death becomes ``CompilerCrashed("... SIGABRT ...")``.

The files a compile reads outside the request are listed by comgr's clang in a helper process of
its own (``hiprtc_deps``), for the same reason.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import shutil
import subprocess
import threading
from typing import Any, ContextManager

from .. import settings
from ..errors import CompilerUnavailable, ConfigError
from ._common import Trace, directory_stamp, dump_text, file_stamp, join_log, loaded_libraries, user_diagnostics
from . import compiler_cache, memo
from .hiprtc_deps import deps_from_reply, helper
from .implicit import Deps, Implicit, runtime_inputs
from .inputs import env_identity
from .base import RawCompile, RuntimeCompiler
from .request import CompileRequest, CompilerIdentity

ENV_LIBRARY = settings.HIPRTC_LIBRARY.name

#: Searched in order: hip-python's own default (ROCm >= 6), versioned ROCm 6/7 names, ROCm 5.
DEFAULT_LIBRARIES = ("libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5")

#: Targets seen to abort ROCm 5.2's comgr (they are absent from its ISA list). Documented, not hidden.
CRASHING_ON_ROCM52 = ("gfx940", "gfx941", "gfx942", "gfx1100", "gfx1101", "gfx1102")

#: Where ROCm keeps the device-library bitcode (comgr embeds a copy; the on-disk one is recorded too).
DEVICE_LIB_DIRS = (
    "{rocm}/amdgcn/bitcode",
    "{rocm}/lib/llvm/lib/clang/*/lib/amdgcn/bitcode",
    "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
    "/usr/lib/amdgcn/bitcode",
)

_TARGET_RX = re.compile(r"^gfx[0-9a-f]+(:[A-Za-z0-9+\-:]+)?$")
_SUCCESS = 0
_compile_lock = threading.Lock()  # hiprtc/comgr thread safety is not documented for ROCm 5: serialize


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _library_file(lib: ctypes.CDLL, symbol: str) -> str:
    """The file a ctypes-loaded library came from (dladdr of one of its symbols), symlinks resolved."""
    libc = ctypes.CDLL(None)
    info = _DlInfo()
    addr = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
    if libc.dladdr(addr, ctypes.byref(info)) and info.dli_fname:
        return os.path.realpath(info.dli_fname.decode())
    return ""


def _rocm_root() -> str:
    return os.environ.get("ROCM_PATH") or os.environ.get("HIP_PATH") or "/opt/rocm"


def probe_library(candidates: tuple[str, ...]) -> tuple[str, str, list[str]]:
    """First candidate that loads and exports hiprtcCreateProgram: (name, real file, failures).
    Public: the README's search order is checked against it with the real dlopen."""
    failures = []
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            failures.append(f"{name}: {exc}")
            continue
        if not hasattr(lib, "hiprtcCreateProgram"):
            failures.append(f"{name}: loads but has no hiprtcCreateProgram symbol")
            continue
        return name, _library_file(lib, "hiprtcCreateProgram"), failures
    return "", "", failures


def _rocm_version(library_file: str) -> str:
    """ROCm package version: from the library's versioned file name, else ROCm's .info/version."""
    m = re.search(r"\.so\.(\d+\.\d+\.\d+)$", library_file)
    if m:
        return m.group(1)
    for path in (os.path.join(_rocm_root(), ".info", "version"), "/opt/rocm/.info/version"):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            continue
    return "unknown"


def _hip_python_version() -> str:
    from .hip_bindings import layout, version

    return f"{version()} ({layout() or 'not importable'})"


class HiprtcCompiler(RuntimeCompiler):
    """hiprtc backend. ``allow_unknown_targets`` lets a worker process attempt targets that comgr
    does not list (it may abort; only the isolated compiler should set it)."""

    name = "hiprtc"
    api = "hiprtc"

    def __init__(self, library: str | None = None, allow_unknown_targets: bool = False) -> None:
        env = settings.HIPRTC_LIBRARY.get()
        self.requested_library = library or env or None
        self.allow_unknown_targets = allow_unknown_targets
        self._candidates = (self.requested_library,) if self.requested_library else DEFAULT_LIBRARIES
        self._lock = threading.Lock()
        self._probed = False
        self._library_name = ""
        self._library_file = ""
        self._reason = ""
        self._hiprtc: Any = None
        self._identity: CompilerIdentity | None = None
        self._targets: tuple[str, ...] | None = None
        self._comgr_file = ""

    # ------------------------------------------------------------------ availability
    def _probe(self) -> None:
        with self._lock:
            if self._probed:
                return
            name, real, failures = probe_library(self._candidates)
            if name:
                self._library_name, self._library_file = name, real
            else:
                source = f"${ENV_LIBRARY}" if self.requested_library else "the default search"
                self._reason = f"no hiprtc library found; looked for {list(self._candidates)} ({source}): " + "; ".join(
                    failures
                )
            self._probed = True

    def _bindings(self) -> Any:
        """Import hip-python's hiprtc module, pointed at the probed library. Raises CompilerUnavailable."""
        self._probe()
        if self._reason:
            raise CompilerUnavailable(self._reason)
        if self._hiprtc is not None:
            return self._hiprtc
        with self._lock:
            if self._hiprtc is not None:
                return self._hiprtc
            from . import hip_bindings

            if not hip_bindings.layout():
                from ..extras import message

                self._reason = message(
                    "hiprtc",
                    "hip",
                    detail="hip-python is not importable in either layout: hip.chiprtc "
                    "is not importable (hip-python 6.x-7.x) and neither is rocm.bindings (hip-python >= 10)",
                )
                raise CompilerUnavailable(self._reason)
            try:
                hip_bindings.point("hiprtc", self._library_name)
                hiprtc = hip_bindings.module("hiprtc")
            except CompilerUnavailable as exc:
                self._reason = str(exc)
                raise
            except ImportError as exc:
                self._reason = f"hip-python's hiprtc module could not be imported ({hip_bindings.layout()}): {exc}"
                raise CompilerUnavailable(self._reason) from exc
            try:
                status, _major, _minor = hiprtc.hiprtcVersion()
            except Exception as exc:  # dlopen failure inside hip-python
                self._reason = f"hip-python could not load {self._library_name!r}: {exc}"
                raise CompilerUnavailable(self._reason) from exc
            if int(status) != _SUCCESS:
                self._reason = f"hiprtcVersion failed with {status!r} from {self._library_name!r}"
                raise CompilerUnavailable(self._reason)
            self._hiprtc = hiprtc
            return hiprtc

    # ------------------------------------------------------------------ identity and targets
    def _comgr(self) -> tuple[str, ctypes.CDLL | None]:
        """comgr does the compiling: find the copy the HIP library loads (or would load)."""
        mapped = loaded_libraries(r"^libamd_comgr\.so")
        names = (*mapped, "libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so")
        for name in names:
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            if hasattr(lib, "amd_comgr_get_isa_count"):
                return _library_file(lib, "amd_comgr_get_isa_count") or name, lib
        return "", None

    def version(self) -> str:
        """``hiprtc MAJOR.MINOR; rocm X`` (the identity's version, no file hashed)."""
        _status, major, minor = self._bindings().hiprtcVersion()
        return f"hiprtc {major}.{minor}; rocm {_rocm_version(self._library_file or self._library_name)}"

    def identity(self) -> CompilerIdentity:
        """Remembered across processes (``memo.identity``: the library, comgr, the device libraries
        re-``stat``ed), so a new process that only hits the cache loads no hiprtc."""
        if self._identity is None:
            self._identity = memo.identity(
                self.name, [self.requested_library, self.allow_unknown_targets], self._identity_now
            )
        return env_identity(self._identity)

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> compiler_cache.OwnCache:
        """COMGR's own cache: none in ROCm 5.2 (comgr 2.4); newer comgr's as ``compiler_cache`` says.
        The comgr file is the identity's (no library is loaded for it), else the one found now."""
        extra = dict(identity.extra) if identity is not None else {}
        comgr, version = extra.get("comgr", ""), extra.get("comgr_version", "")
        if identity is None:
            comgr, lib = self._comgr()
            if lib is not None:
                ma, mi = ctypes.c_size_t(), ctypes.c_size_t()
                lib.amd_comgr_get_version(ctypes.byref(ma), ctypes.byref(mi))
                version = f"{ma.value}.{mi.value}"
        return compiler_cache.state(self.name, tuple(options), environ, comgr=comgr, comgr_version=version)

    def _identity_now(self) -> CompilerIdentity:
        version = self.version()  # loads the bindings: the library's name and file are known after it
        library = self._library_file or self._library_name
        extra: list[tuple[str, str]] = [("hip_python", _hip_python_version())]
        comgr_file, comgr = self._comgr()
        if comgr is not None:
            ma, mi = ctypes.c_size_t(), ctypes.c_size_t()
            comgr.amd_comgr_get_version(ctypes.byref(ma), ctypes.byref(mi))
            extra += [("comgr", comgr_file), ("comgr_version", f"{ma.value}.{mi.value}")]
            if os.path.exists(comgr_file):
                extra.append(("comgr_stamp", file_stamp(comgr_file)))
        libdir = self.device_libs_dir()
        extra.append(("device_libs", libdir or "not found"))
        if libdir:
            extra.append(("device_libs_stamp", directory_stamp(libdir)))
        stamp = file_stamp(library) if os.path.exists(library) else ""
        return CompilerIdentity(name=self.name, version=version, library=library, stamp=stamp, extra=tuple(extra))

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> Implicit:
        """Files hiprtc reads outside the request (absolute includes, what its system search
        folders supply: ``/usr/local/include``...), as comgr's clang lists them
        (``dependencies``), compile/implicit.py."""
        return runtime_inputs(request, identity, self.dependencies)

    def dependencies(self, request: CompileRequest) -> Deps:
        """comgr's clang's own list of the files a compile opens (``-M -MF FILE -v``: the make
        dependencies and the search folders), from the same program and options in this
        directory. It runs in a helper process kept for the purpose (comgr is not loaded into
        this one: a crash there must not take the caller with it), ~15 ms a call. A target
        missing from comgr's ISA list is not tried (ROCm 5.2 aborts on it): ``error``."""
        try:
            self._check(request)
            known = self.targets()
        except (CompilerUnavailable, ConfigError) as exc:
            return Deps(error=str(exc).splitlines()[0])
        if known and request.target.split(":")[0] not in known:
            return Deps(
                error=f"hiprtc: target {request.target!r} is not in this comgr's ISA list, so the files its "
                f"compile reads cannot be listed (ROCm 5.2 aborts on such targets)"
            )
        job = {
            "cwd": os.getcwd(),
            "source": [request.source.name, request.source.text],
            "headers": [[h.name, h.text] for h in request.headers],
            "options": [f"--offload-arch={request.target}", *request.options],
        }
        try:
            reply = helper(self.requested_library or "").ask(job)
        except (OSError, RuntimeError, ValueError) as exc:
            return Deps(error=f"hiprtc could not list the files this compile reads: {str(exc)[:300]}")
        return deps_from_reply(reply)

    @staticmethod
    def device_libs_dir() -> str:
        """The on-disk ROCm device-libs bitcode directory ("" when none is found)."""
        env = os.environ.get("HIP_DEVICE_LIB_PATH")
        patterns = ([env] if env else []) + [p.format(rocm=_rocm_root()) for p in DEVICE_LIB_DIRS]
        for pattern in patterns:
            for path in sorted(glob.glob(pattern)):
                if os.path.isdir(path) and glob.glob(os.path.join(path, "*.bc")):
                    return os.path.realpath(path)
        return ""

    def targets(self) -> tuple[str, ...]:
        """The gfx targets this comgr lists (``amd_comgr_get_isa_name``); others abort ROCm 5.2."""
        if self._targets is not None:
            return self._targets
        self._probe()
        if self._reason:
            return ()
        _file, comgr = self._comgr()
        names: list[str] = []
        if comgr is not None:
            count = ctypes.c_size_t()
            if comgr.amd_comgr_get_isa_count(ctypes.byref(count)) == 0:
                for i in range(count.value):
                    isa = ctypes.c_char_p()
                    if comgr.amd_comgr_get_isa_name(ctypes.c_size_t(i), ctypes.byref(isa)) == 0 and isa.value:
                        gfx = isa.value.decode().rsplit("--", 1)[-1].split(":")[0]
                        if gfx not in names:
                            names.append(gfx)
        self._targets = tuple(names)
        return self._targets

    def crashing_targets(self) -> tuple[str, ...]:
        """Targets known to abort this ROCm 5.2-era comgr: the documented ones it does not list."""
        known = set(self.targets())
        return tuple(t for t in CRASHING_ON_ROCM52 if known and t not in known)

    # ------------------------------------------------------------------ compile
    def _check(self, request: CompileRequest) -> None:
        if request.compiler != self.name:
            raise ConfigError(f"request is for compiler {request.compiler!r}, not {self.name!r}")
        if request.mode != "code-object":
            raise ConfigError(f"hiprtc mode must be 'code-object'; got {request.mode!r}")
        if not _TARGET_RX.match(request.target):
            raise ConfigError(f"hiprtc target must look like 'gfx90a' or 'gfx90a:xnack-'; got {request.target!r}")
        for opt in request.options:
            if opt.startswith(("--offload-arch", "--amdgpu-target", "-mcpu")):
                raise ConfigError(
                    f"option {opt!r} sets the GPU target; set request.target instead (got target {request.target!r})"
                )

    def _prepare(self, request: CompileRequest) -> tuple[str, ...]:
        self._check(request)
        self._bindings()
        options = (f"--offload-arch={request.target}", *request.options)
        base_target = request.target.split(":")[0]
        known = self.targets()
        if known and base_target not in known and not self.allow_unknown_targets:
            raise self._error(
                f"hiprtc: target {request.target!r} is not in this comgr's ISA list; ROCm 5.2's comgr aborts the "
                f"process on such targets, so it is refused in-process (use get_compiler('hiprtc'), which isolates "
                f"compiles in worker processes, to attempt it). Known targets: {', '.join(known)}",
                request,
                options,
            )
        return options

    def _compile_lock(self) -> ContextManager[Any]:
        return _compile_lock

    def _invoke(self, request: CompileRequest, options: tuple[str, ...], trace: Trace) -> RawCompile:
        code, lowered, log, status = self._run(self._bindings(), request, options, trace)
        return RawCompile(
            code, lowered, user_diagnostics(log, request), "" if int(status) == _SUCCESS else _status_name(status)
        )

    def _dump_asm(self, request: CompileRequest, raw: RawCompile) -> list[str]:
        return [_dump_asm(request, raw.binary)]

    def _run(self, hiprtc: Any, request: CompileRequest, options: tuple[str, ...], trace: Trace):
        headers = [h.text.encode() for h in request.headers]
        names = [h.name.encode() for h in request.headers]
        status, prog = trace.call(
            "hiprtcCreateProgram",
            hiprtc.hiprtcCreateProgram,
            request.source.text.encode(),
            request.source.name.encode(),
            len(headers),
            headers or None,
            names or None,
            show=(request.source.name, [h.name for h in request.headers]),
        )
        if int(status) != _SUCCESS or prog is None:
            return b"", {}, f"hiprtcCreateProgram failed: {_status_name(status)}", status
        try:
            for kernel in request.kernels:
                (st,) = trace.call(
                    "hiprtcAddNameExpression", hiprtc.hiprtcAddNameExpression, prog, kernel.encode(), show=(kernel,)
                )
                if int(st) != _SUCCESS:
                    return b"", {}, f"hiprtcAddNameExpression({kernel!r}) failed: {_status_name(st)}", st
            opts = [o.encode() for o in options]
            (status,) = trace.call(
                "hiprtcCompileProgram", hiprtc.hiprtcCompileProgram, prog, len(opts), opts, show=(list(options),)
            )
            log = program_log(hiprtc, prog)
            if int(status) != _SUCCESS:
                return b"", {}, log, status
            lowered: dict[str, str] = {}
            for kernel in request.kernels:
                st, name = trace.call(
                    "hiprtcGetLoweredName", hiprtc.hiprtcGetLoweredName, prog, kernel.encode(), show=(kernel,)
                )
                if int(st) != _SUCCESS or name is None:
                    return b"", {}, join_log(log, f"hiprtcGetLoweredName({kernel!r}) failed: {_status_name(st)}"), st
                lowered[kernel] = name.decode() if isinstance(name, bytes) else str(name)
            st, size = trace.call("hiprtcGetCodeSize", hiprtc.hiprtcGetCodeSize, prog)
            buf = bytearray(size)
            (st2,) = trace.call("hiprtcGetCode", hiprtc.hiprtcGetCode, prog, buf, show=(size,))
            if int(st) != _SUCCESS or int(st2) != _SUCCESS:
                bad = st if int(st) != _SUCCESS else st2
                return b"", {}, join_log(log, f"hiprtcGetCode failed: {_status_name(bad)}"), bad
            return bytes(buf), lowered, log, status
        finally:
            trace.call("hiprtcDestroyProgram", hiprtc.hiprtcDestroyProgram, prog.createRef())


def hiprtc_module(library: str | None = None) -> Any:
    """hip-python's hiprtc module, pointed at the library found (``library``, else the default search):
    what the dependency helper's process (``hiprtc_deps``) asks comgr's clang with. Raises
    CompilerUnavailable."""
    return HiprtcCompiler(library=library)._bindings()


def program_log(hiprtc: Any, prog: Any) -> str:
    """The program's compile log (also the dependency helper's: ``hiprtc_deps``)."""
    status, size = hiprtc.hiprtcGetProgramLogSize(prog)
    if int(status) != _SUCCESS or not size:
        return ""
    buf = bytearray(size)
    hiprtc.hiprtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode("utf-8", "replace")


def _status_name(status: Any) -> str:
    return getattr(status, "name", None) or f"hiprtcResult {int(status)}"


def objdump_tool() -> str:
    """llvm-objdump from PATH or ROCm's LLVM ("" when absent)."""
    found = shutil.which("llvm-objdump")
    if found:
        return found
    for cand in (os.path.join(_rocm_root(), "llvm", "bin", "llvm-objdump"), "/opt/rocm/llvm/bin/llvm-objdump"):
        if os.access(cand, os.X_OK):
            return cand
    return ""


def _dump_asm(request: CompileRequest, code: bytes) -> str:
    """Disassemble the code object with ``llvm-objdump -d --mcpu=<target>`` into the dump dir."""
    tool = objdump_tool()
    if not tool:
        return "dump-asm: skipped, llvm-objdump not found on PATH or under ROCm's llvm/bin"
    obj = dump_text(request, ".co", code)
    mcpu = request.target.split(":")[0]
    proc = subprocess.run([tool, "-d", f"--mcpu={mcpu}", str(obj)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return f"dump-asm: {tool} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
    path = dump_text(request, ".s", proc.stdout)
    return f"dump-asm: wrote {path}"
