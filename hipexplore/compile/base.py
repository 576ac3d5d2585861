"""The compiler interface (a ``Protocol``) and what a compile produces.

Contract for every compiler backend (hiprtc, nvrtc, host):
  * ``identity()`` is cheap after the first call and changes whenever the output could change.
  * ``compile(request)`` returns an ``ObjectCode`` or raises ``CompileError`` carrying the log,
    options and target. It never prints. It must be safe to call from a worker process.
  * ``available()`` never raises; ``unavailable_reason()`` says what was looked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .request import CompileRequest, CompilerIdentity


class FrozenNames(dict):
    """A read-only dict: a cached ObjectCode is shared by every hit, so no caller may change it."""

    def _read_only(self, *args, **kwargs):
        raise TypeError("ObjectCode.lowered_names is read-only (the object is shared by cache hits)")

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
    """

    binary: bytes
    compiler: str
    target: str
    mode: str
    log: str = ""
    lowered_names: dict[str, str] = field(default_factory=dict)
    compile_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.lowered_names, FrozenNames):
            object.__setattr__(self, "lowered_names", FrozenNames(self.lowered_names))

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

    def targets(self) -> tuple[str, ...]:
        """Targets this compiler is known to handle (may be a partial list)."""
        ...

    def compile(self, request: CompileRequest) -> ObjectCode: ...
