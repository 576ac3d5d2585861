"""The compiler interface (a ``Protocol``) and what a compile produces.

Contract for every compiler backend (hiprtc, nvrtc, host) and the isolated wrapper:
  * ``identity()`` is cheap after the first call and changes whenever the output could change.
  * ``compile(request)`` returns an ``ObjectCode`` or raises ``CompileError`` carrying the log,
    options and target. It never prints. It must be safe to call from a worker process.
  * ``available()`` never raises; ``unavailable_reason()`` says what was looked for.
  * Lifecycle: ``isolated`` (compiles run in worker processes), ``closed``, ``close()`` (idempotent;
    later compiles raise ``CompilerError``), context manager, ``crashing_targets()`` (targets known
    to kill the process that compiles them; empty for most backends), ``worker_pids()``.

Why a base class as well as the Protocol: callers used to probe with ``getattr`` for ``isolated``,
``close``, ``shutdown``; every backend now has the whole lifecycle from ``CompilerBase``, and the
runtime-compilation backends (hiprtc, nvrtc) share one ``compile()`` (diagnostics, timing, the
``CompileError``) through ``RuntimeCompiler``, each supplying only its API calls.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, ContextManager, Protocol, Sequence, runtime_checkable

from ..errors import CompileError, CompilerError, CompilerUnavailable
from ._common import Trace, dump_sources, join_log
from .request import CompileRequest, CompilerIdentity


class FrozenNames(dict):
    """A read-only dict: a cached ObjectCode is shared by every hit, so no caller may change it."""

    def _read_only(self, *args, **kwargs):
        raise TypeError("ObjectCode.lowered_names and .metadata are read-only (the object is shared by cache hits)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self):
        return (FrozenNames, (dict(self),))


@dataclass(frozen=True)
class ObjectCode:
    """A compiled binary plus what is needed to use and account for it.

    binary: ELF code object (hiprtc), cubin (nvrtc) or shared library (host).
    lowered_names: kernel name expression -> symbol name in the binary.
    compile_seconds: wall time of the compile that produced it (kept with the cache entry so
    "seconds saved" on a later hit is a sum of recorded compile times, not a guess).
    metadata: JSON-able facts a launcher needs that the binary does not say plainly (Triton: kernel
    name, shared memory, num_warps, the ABI's extra scratch parameters, AMD resource usage).
    """

    binary: bytes
    compiler: str
    target: str
    mode: str
    log: str = ""
    lowered_names: dict[str, str] = field(default_factory=dict)
    compile_seconds: float = 0.0
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.lowered_names, FrozenNames):
            object.__setattr__(self, "lowered_names", FrozenNames(self.lowered_names))
        if not isinstance(self.metadata, FrozenNames):
            object.__setattr__(self, "metadata", FrozenNames(self.metadata))

    @property
    def nbytes(self) -> int:
        return len(self.binary)

    def symbol(self, kernel: str) -> str:
        """The symbol for a kernel name or name expression (identity if not lowered)."""
        return self.lowered_names.get(kernel, kernel)


@runtime_checkable
class Compiler(Protocol):
    name: str

    def available(self) -> bool: ...

    def unavailable_reason(self) -> str: ...

    def identity(self) -> CompilerIdentity: ...

    def version(self) -> str:
        """``identity().version`` without the identity's file hashes (provenance records it per run)."""
        ...

    def targets(self) -> tuple[str, ...]:
        """Targets this compiler is known to handle (may be a partial list)."""
        ...

    def compile(self, request: CompileRequest) -> ObjectCode: ...

    isolated: bool

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...

    def crashing_targets(self) -> tuple[str, ...]: ...

    def worker_pids(self) -> list[int]: ...

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> Any:
        """The compiler's own cache for a compile with ``options`` (``compiler_cache.OwnCache``)."""
        ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> None: ...


class CompilerBase:
    """The lifecycle every compiler shares, and the pieces of a compile that do not depend on the
    compiler: the ``dump-source`` notes and the ``CompileError`` built from a request."""

    name: str = ""
    isolated: bool = False
    _closed: bool = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Mark the compiler closed (idempotent): later compiles raise ``CompilerError``."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise CompilerError(f"the {self.name} compiler is closed")

    def crashing_targets(self) -> tuple[str, ...]:
        """Targets known to kill the compiling process (only hiprtc on ROCm 5.2 has any)."""
        return ()

    def version(self) -> str:
        """The version string of ``identity()``. Why apart: every run's provenance records each
        compiler's version, and an identity hashes the compiler's files (Triton's: its whole Python
        source tree, 0.7 s a time); a backend whose version is cheaper to read overrides this."""
        return self.identity().version  # type: ignore[attr-defined]

    def worker_pids(self) -> list[int]:
        """PIDs of the processes that compile for this compiler, other than this one (none in-process)."""
        return []

    @staticmethod
    def identity_files(record: dict) -> list[str]:
        """Files an identity (its ``record()``) was computed from beyond those it names itself: a
        remembered identity (``memo.identity``) is re-``stat``ed against them too (Triton's sources)."""
        return []

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> Any:
        """The compiler's own cache as a compile with ``options`` uses it (``compiler_cache.OwnCache``:
        recorded in every cache event). ``identity``: the compiler's, when the caller has it (hiprtc
        reads its comgr from it); ``environ``: the compiling process's variables (default this one's)."""
        from . import compiler_cache

        return compiler_cache.state(self.name, tuple(options), environ)

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> Any:
        """The files a compile reads outside the request, for the key (compile/implicit.py's
        ``Implicit``); None for a compiler that reads none (Triton: its source is the request)."""
        return None

    def __enter__(self) -> "CompilerBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- shared parts of compile() ---------------------------------------------------------------
    @staticmethod
    def _source_notes(request: CompileRequest) -> list[str]:
        if "dump-source" not in request.diagnostics:
            return []
        return [f"dump-source: wrote {p}" for p in dump_sources(request)]

    def _error(self, message: str, request: CompileRequest, options: Sequence[str], *logs: str) -> CompileError:
        return CompileError(
            message,
            log=join_log(*logs),
            options=tuple(options),
            target=request.target,
            compiler=self.name,
            kernels=request.kernels,
        )


@dataclass(frozen=True)
class RawCompile:
    """What a runtime compiler's API calls produced: ``failure`` is "" on success, else the status
    name; ``asm`` is extra text for ``dump-asm`` (NVRTC's PTX); ``metadata`` goes into the
    ``ObjectCode`` (NVRTC: the options and cache variables of the real call)."""

    binary: bytes
    lowered: dict[str, str]
    log: str
    failure: str = ""
    asm: bytes = b""
    metadata: dict = field(default_factory=dict)


class RuntimeCompiler(CompilerBase):
    """``compile()`` for the runtime-compilation APIs (hiprtc, nvrtc): check and build the options,
    dump sources, time the API calls, raise ``CompileError`` on failure, dump assembly, and return
    the ``ObjectCode``. A backend supplies ``_prepare`` / ``_invoke`` / ``_dump_asm``."""

    #: how the API is named in messages ("hiprtc", "nvrtc")
    api: str = ""
    #: why the bindings could not be loaded ("" until a probe failed)
    _reason: str = ""

    def _bindings(self) -> Any:  # pragma: no cover - abstract
        """The loaded API module; raises CompilerUnavailable (and sets ``_reason``) when absent."""
        raise NotImplementedError

    def available(self) -> bool:
        try:
            self._bindings()
            return True
        except CompilerUnavailable:
            return False

    def unavailable_reason(self) -> str:
        self.available()
        return self._reason

    def _prepare(self, request: CompileRequest) -> tuple[str, ...]:  # pragma: no cover - abstract
        """Validate the request (ConfigError / CompileError) and return the compile options."""
        raise NotImplementedError

    def _invoke(
        self, request: CompileRequest, options: tuple[str, ...], trace: Trace
    ) -> RawCompile:  # pragma: no cover
        raise NotImplementedError

    def _dump_asm(self, request: CompileRequest, raw: RawCompile) -> list[str]:  # pragma: no cover
        raise NotImplementedError

    def _compile_lock(self) -> ContextManager[Any]:
        """Held around the API calls (and their timing); hiprtc serialises, NVRTC does not."""
        return contextlib.nullcontext()

    def compile(self, request: CompileRequest) -> ObjectCode:
        self._check_open()
        options = self._prepare(request)
        trace = Trace("trace" in request.diagnostics)
        notes = self._source_notes(request)
        with self._compile_lock():
            start = time.perf_counter()
            raw = self._invoke(request, options, trace)
            seconds = time.perf_counter() - start
        if raw.failure:
            raise self._error(
                f"{self.api} failed to compile {request.name!r} for {request.target}: {raw.failure}",
                request,
                options,
                raw.log,
                trace.text(),
                *notes,
            )
        if "dump-asm" in request.diagnostics:
            notes += self._dump_asm(request, raw)
        return ObjectCode(
            binary=raw.binary,
            compiler=self.name,
            target=request.target,
            mode=request.mode,
            log=join_log(raw.log, trace.text(), *notes),
            lowered_names=raw.lowered,
            compile_seconds=seconds,
            metadata=raw.metadata,
        )
