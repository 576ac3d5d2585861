"""One exception hierarchy with a single root, so callers can catch ``HipexploreError``.

Every message names the offending value and what was expected. Compiler failures carry the
compiler log, options and target as attributes instead of printing them.
"""

from __future__ import annotations

from typing import Sequence


class HipexploreError(Exception):
    """Root of every error this library raises on purpose."""


class ConfigError(HipexploreError, ValueError):
    """A bad argument or setting: the message names the value and what was expected."""


class CompilerError(HipexploreError):
    """Base for everything that goes wrong while compiling."""


class CompilerUnavailable(CompilerError):
    """The compiler library could not be found or loaded (the message says what was looked for)."""


class CompileError(CompilerError):
    """The compiler ran and rejected the program, or died. Carries the log, options and target."""

    def __init__(
        self,
        message: str,
        *,
        log: str = "",
        options: Sequence[str] = (),
        target: str = "",
        compiler: str = "",
        kernels: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.log = log
        self.options = tuple(options)
        self.target = target
        self.compiler = compiler
        self.kernels = tuple(kernels)

    def headline(self) -> str:
        """The message and where (compiler, target, options), at most ~``MESSAGE_LIMIT`` characters:
        a 30,000-option compile must not print megabytes (``self.options`` keeps them all)."""
        base = _shorten(super().__str__(), MESSAGE_LIMIT)
        shown = [_shorten(o, 200) for o in self.options[:OPTIONS_SHOWN]]
        more = len(self.options) - len(shown)
        opts = repr(shown) if more <= 0 else repr(shown)[:-1] + f", ... {more} more]"
        return base + f" [compiler={self.compiler} target={self.target} options={opts}]"

    def __str__(self) -> str:  # the message plus where, never the whole log
        tail = [_shorten(line, 500) for line in self.log.strip().splitlines()[-12:]] if self.log else []
        return self.headline() + ("\n" + "\n".join(tail) if tail else "")

    def __reduce__(self):  # survive pickling across worker processes
        return (_rebuild_compile_error, (type(self), self.args[0] if self.args else "", self.__dict__.copy()))


#: how much of a compile error's message ``str()`` shows; the exception keeps everything
MESSAGE_LIMIT = 2000
OPTIONS_SHOWN = 8


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... ({len(text) - limit} more characters)"


def _rebuild_compile_error(cls, message, state):
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class CompilerCrashed(CompileError):
    """The compiler process died (abort, segfault). ``signal_name`` says which signal."""

    def __init__(self, message: str, *, signal_name: str = "", exitcode: int | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.signal_name = signal_name
        self.exitcode = exitcode


class CompileTimeout(CompileError):
    """The compile ran past its time limit and its worker was killed."""

    def __init__(self, message: str, *, timeout: float = 0.0, **kw) -> None:
        super().__init__(message, **kw)
        self.timeout = timeout


class CacheError(HipexploreError):
    """The cache itself is misused or broken (not a compile failure)."""


class DeviceError(HipexploreError):
    """A device runtime call failed; the message names the call and its error code."""


class DeviceUnavailable(DeviceError):
    """The requested device is absent; the message says what was looked for."""


class UnsupportedOperation(DeviceError, ConfigError):
    """The device cannot do what was asked (e.g. an AMD-only flush mode on NVIDIA)."""


class BenchmarkError(HipexploreError):
    """A measurement could not be made or its invariants were violated."""


class KernelFault(BenchmarkError):
    """A kernel faulted (or its worker process died) in one configuration of a sweep.

    ``kernel``, ``configuration`` (``"size=1048576 rotating=4 flush=l2-write"``) and ``status``
    (``CUDA_ERROR_ILLEGAL_ADDRESS``, ``SIGSEGV``) say where; ``result`` is the ``SweepResult`` of
    the configurations that finished before it (kept, also in the sweep's ``out`` file).
    """

    def __init__(self, kernel: str, configuration: str, status: str, result: object = None) -> None:
        super().__init__(
            f"kernel {kernel} faulted in configuration {configuration}: {status}{memory_fault_hint(status)}"
        )
        self.kernel, self.configuration, self.status, self.result = kernel, configuration, status, result

    def __reduce__(self):  # survive pickling across worker processes (result stays behind)
        return (KernelFault, (self.kernel, self.configuration, self.status))


#: what a memory fault's status says (a host kernel's worker killed by SIGSEGV/SIGBUS, a GPU's illegal address)
_MEMORY_FAULTS = (
    "SIGSEGV",
    "SIGBUS",
    "ILLEGAL_ADDRESS",
    "IllegalAddress",
    "memory access fault",
    "Memory access fault",
)


def memory_fault_hint(status: str) -> str:
    """The fix a memory fault most often needs, for ``KernelFault``'s line: a buffer's count in
    ``--args`` smaller than what the kernel indexes (``x:f32[16]`` beside ``n:u64=n``), which ended in a
    SIGSEGV in the worker with no word about the counts."""
    if not any(word in str(status) for word in _MEMORY_FAULTS):
        return ""
    return (
        "; a memory fault: the kernel read or wrote outside its buffers. Check that each buffer's count in --args "
        "(x:f32[COUNT]) covers every index the kernel reaches with the scalars it is given (n:u64=n), and the grid"
    )


class CacheWarning(RuntimeWarning):
    """A compile-cache tier is off or skipped something for this run (the compile goes on). Shown
    as one line, ``hipexplore: MESSAGE`` (``warn_line``), never as Python's two lines of this
    library's file, line and source text: those say where the cache noticed, not what to do."""


def warn_line(message: str, category: type[Warning] = CacheWarning) -> None:
    """Warn with ``category``, shown as one line (see ``CacheWarning``). Only how it prints changes:
    filters, ``-W error`` and ``catch_warnings(record=True)`` see an ordinary warning. The printing
    is a wrapper around ``warnings.formatwarning`` set on first use: other warnings print as before."""
    import warnings

    current = warnings.formatwarning
    if not getattr(current, "one_line", False):  # the CLI's own formatter is one line already

        def formatted(
            message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
        ) -> str:
            if not issubclass(category, CacheWarning):
                return current(message, category, filename, lineno, line)
            text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
            return f"{text if text.startswith('hipexplore') else 'hipexplore: ' + text}\n"

        formatted.one_line = True  # type: ignore[attr-defined]
        warnings.formatwarning = formatted
    warnings.warn(message, category, stacklevel=3)
