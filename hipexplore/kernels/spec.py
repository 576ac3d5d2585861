"""What the harness needs to know about a kernel: its arguments, launch geometry and traffic.

A ``KernelSpec`` is written once and serves every device: ``gpu_source`` compiles with both hiprtc
and NVRTC (the same text; ``HX_AMD`` tells them apart), ``host_source`` is the plain-C twin that the
host device loads through ctypes. ``bytes_per_launch`` and ``flops_per_launch`` let results be shown
as bandwidth against the device's peak, and ``footprint`` (the bytes one launch touches) sizes the
rotating buffer sets.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Protocol, Sequence

from ..devices.base import CTYPES as _CTYPES
from ..errors import ConfigError
from . import geometry as _geometry

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

ArgKind = Literal["buffer", "scalar"]
ArgRole = Literal["in", "out", "inout"]

#: numpy dtype name -> ctypes type (defined with the marshalling, in devices.base)
CTYPES = _CTYPES

#: short names accepted on the command line
DTYPE_ALIASES = {
    "f32": "float32",
    "f64": "float64",
    "float": "float32",
    "double": "float64",
    "i8": "int8",
    "u8": "uint8",
    "i16": "int16",
    "u16": "uint16",
    "i32": "int32",
    "u32": "uint32",
    "i64": "int64",
    "u64": "uint64",
    "int": "int32",
}


def canonical_dtype(dtype: str) -> str:
    name = DTYPE_ALIASES.get(str(dtype), str(dtype))
    if name not in CTYPES:
        raise ConfigError(
            f"dtype {dtype!r} is not supported; expected one of {sorted(CTYPES)} or {sorted(DTYPE_ALIASES)}"
        )
    return name


class DeviceShape(Protocol):
    """The device facts a geometry function may use (a subset of ``Device``)."""

    compute_units: int
    kind: str


@dataclass(frozen=True)
class Arg:
    """One kernel argument.

    buffer: a device pointer to ``count`` elements of ``dtype``; ``count`` is an int or an
    expression in ``n`` (the element count of the configuration), e.g. ``"n"`` or ``"2*n"``.
    scalar: passed by value; ``value`` is a number or an expression in ``n``.
    ``init`` fills an input buffer: "random", "zeros", "ones" or a number.
    """

    name: str
    kind: ArgKind
    dtype: str
    role: ArgRole = "in"
    count: int | str = "n"
    value: float | int | str | None = None
    init: str | float = "random"

    def __post_init__(self) -> None:
        if self.kind not in ("buffer", "scalar"):
            raise ConfigError(f"argument {self.name!r}: kind must be 'buffer' or 'scalar', got {self.kind!r}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.role not in ("in", "out", "inout"):
            raise ConfigError(f"argument {self.name!r}: role must be in/out/inout, got {self.role!r}")
        if self.kind == "scalar" and self.value is None:
            raise ConfigError(f"scalar argument {self.name!r} needs a value (a number or an expression in n)")

    @property
    def itemsize(self) -> int:
        import numpy as np

        return np.dtype(self.dtype).itemsize

    def elements(self, n: int, env: Mapping[str, Any] | None = None) -> int:
        """Element count for ``n``; ``env`` holds the kernel's scalar values (``count="rows*cols"``).
        A fractional count rounds up (a buffer is never one element short); it must come out >= 1."""
        what = f"count of argument {self.name!r}"
        v = evaluate(self.count, n, what=what, env=env)
        count = math.ceil(v) if isinstance(v, float) else int(v)
        if count < 1:
            raise ConfigError(
                f"{what}: {_said(self.count, v)} at n={_geometry._num(n)}; a buffer needs at least 1 element"
            )
        return count

    def nbytes(self, n: int, env: Mapping[str, Any] | None = None) -> int:
        return self.elements(n, env) * self.itemsize

    def scalar(self, n: int, env: Mapping[str, Any] | None = None) -> int | float:
        """The value passed by value, checked against its C type: an integer must fit (a u32 of -1 or
        an i32 of 2**40 would be passed as some other number), a float32 must not overflow to inf."""
        import numpy as np

        what = f"value of argument {self.name!r}"
        v = evaluate(self.value, n, what=what, env=env)
        if self.dtype.startswith("float"):
            fmax = float(np.finfo(self.dtype).max)
            if abs(v) > fmax:
                raise ConfigError(f"{what}: {_said(self.value, v)}, beyond the largest {self.dtype} ({fmax:g})")
            return float(v)
        iv = int(v)
        info = np.iinfo(self.dtype)
        if not info.min <= iv <= info.max:
            raise ConfigError(f"{what}: {_said(self.value, iv)}, outside {self.dtype}'s range [{info.min}, {info.max}]")
        return iv


def _said(expr: Any, value: Any) -> str:
    """``'2*n' is 8`` for an error line; just ``'-1'`` when the text is the value."""
    shown = _geometry._num(value)
    return repr(str(expr).strip()) if str(expr).strip() == shown else f"{_geometry._text_of(expr)} is {shown}"


def evaluate(expr: int | float | str | None, n: int, *, what: str, env: Mapping[str, Any] | None = None) -> int | float:
    """Evaluate a number or an arithmetic expression in ``n`` (and the names in ``env``), through the
    ast-based evaluator of ``kernels.geometry`` (never ``eval``): ``'n'``, ``'2*n'``, ``'isqrt(n)'``.
    Every value is a finite real number within the evaluator's bound (``geometry.MAX_BITS``)."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return _geometry.evaluate(expr, {}, what=what)
    if not isinstance(expr, str):
        raise ConfigError(
            f"{what}: {_geometry._text_of(expr)} is not a number or an arithmetic expression in n (e.g. 'n', '2*n', 'n//4')"
        )
    return _geometry.evaluate(expr, {**(env or {}), "n": n}, what=what)


Geometry = Callable[[int, DeviceShape], tuple[tuple[int, int, int], tuple[int, int, int]]]

#: The most bytes (or flops) one launch may declare: 2**60, an exabyte, beyond any launch. The sweep
#: records the footprint in 64-bit integer columns and multiplies it (rotating sets, totals); a
#: declared 2**63 used to pass the checks, be measured, and end the run in an OverflowError.
MAX_COUNT_PER_LAUNCH = 1 << 60


def _count_in_range(what: str, said: str, n: int, value: int) -> int:
    if not 0 <= value <= MAX_COUNT_PER_LAUNCH:
        raise ConfigError(
            f"{what}: {said} at n={_geometry._num(n)}; expected a count in [0, 2**60] per launch "
            f"(the sweep records it as a 64-bit integer)"
        )
    return value


class NExpr:
    """``n -> int`` from a number or an expression in n (a KernelSpec's traffic and flops): unlike
    a lambda it pickles, so a kernel can be sent to a sweep worker."""

    def __init__(self, expr: int | str, what: str = "expression") -> None:
        self.expr, self.what = expr, what

    def __call__(self, n: int) -> int:
        """A count of bytes or flops: rounded up when fractional, never negative."""
        v = evaluate(self.expr, n, what=self.what)
        out = math.ceil(v) if isinstance(v, float) else int(v)
        if out < 0:
            raise ConfigError(f"{self.what}: {_said(self.expr, v)} at n={_geometry._num(n)}; expected a count >= 0")
        return _count_in_range(self.what, _said(self.expr, v), n, out)

    def __repr__(self) -> str:
        return f"NExpr({self.expr!r})"


class grid_stride:  # noqa: N801 - a function-like factory, kept lower case (a class so it pickles)
    """A grid-stride launch: ``blocks_per_cu`` blocks of ``block`` threads per compute unit,
    never more blocks than elements need (the H200 numbers in our notes use 132·4 blocks of 256)."""

    def __init__(self, blocks_per_cu: int = 4, block: int = 256) -> None:
        self.blocks_per_cu, self.block = blocks_per_cu, block
        self.__doc__ = f"grid_stride(blocks_per_cu={blocks_per_cu}, block={block})"

    def __call__(self, n: int, device: DeviceShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        cus = _geometry.compute_units_of(device)
        grid = max(1, min(cus * self.blocks_per_cu, math.ceil(max(n, 1) / self.block)))
        return (grid, 1, 1), (self.block, 1, 1)


class fixed_geometry:  # noqa: N801 - see grid_stride
    """The same grid and block whatever the size."""

    def __init__(self, grid: int | Sequence[int], block: int | Sequence[int]) -> None:
        self.grid, self.block = _dim3(grid, "grid"), _dim3(block, "block")
        self.__doc__ = f"fixed_geometry(grid={self.grid}, block={self.block})"

    def __call__(self, n: int, device: DeviceShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.grid, self.block


def _dim3(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    dims = [v] if isinstance(v, int) else list(v)
    if not 1 <= len(dims) <= 3 or any((not isinstance(d, int)) or d < 1 for d in dims):
        raise ConfigError(f"{what} must be a positive int or 1-3 positive ints, got {v!r}")
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


@dataclass(frozen=True)
class KernelSpec:
    """A benchmarkable kernel.

    ``elements(size_bytes)`` maps the configuration's size (bytes per array) to ``n``;
    ``bytes_per_launch(n)`` counts the bytes one launch must move (each input read once, each
    output written once) and also serves as the footprint for rotating buffers.
    """

    name: str
    entry: str
    args: tuple[Arg, ...]
    gpu_source: str | None = None
    host_source: str | None = None
    host_entry: str | None = None
    geometry: Geometry = field(default_factory=grid_stride)
    element_dtype: str = "float32"
    bytes_per_launch: Callable[[int], int] | None = None
    flops_per_launch: Callable[[int], int] = field(default_factory=lambda: NExpr(0, "flops_per_launch"))
    reference: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], Mapping[str, np.ndarray]] | None = None
    options: tuple[str, ...] = ()
    description: str = ""
    #: the source has an in-kernel timer under ``-DHX_TIMED`` (an extra last ``u64*`` argument:
    #: [first block start, last block end] in ns; see kernels/sources.py), for the ``in-kernel`` timer
    timer: bool = False
    #: the file ``gpu_source``/``host_source`` was read from: re-read at every build, so an edit is seen
    source_file: str = ""
    #: ``-I`` directories searched (after the including file's own folder) for the include closure
    include_dirs: tuple[str, ...] = ()
    #: headers given by text (``hipexplore.compile.request.Source``), beside the discovered closure
    headers: tuple[Any, ...] = ()
    #: a precompiled code object (hsaco/co, cubin/fatbin/PTX) to load instead of compiling a source
    code_object: str = ""
    #: a second kernel whose outputs are the expected ones (the output check), beside ``reference``
    check_kernel: "KernelSpec | None" = None
    check_rtol: float = 1e-5
    check_atol: float = 1e-6
    #: test the declared roles before timing (``bench.roles``: an ``in`` is never written, every ``out``
    #: element is, an ``inout`` changes); off for the catalog's own kernels, whose reference checks them
    role_check: bool = True
    #: a Python callable run on the harness's stream instead of a kernel (``bench.callable``)
    call: Any = None
    #: the file the source was read from (user kernels), for the provenance of the code under review
    source_path: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not re.match(r"^[A-Za-z_][A-Za-z0-9_.\-]*$", self.name):
            raise ConfigError(f"kernel name must be an identifier-like string, got {self.name!r}")
        object.__setattr__(self, "args", tuple(self.args))
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise ConfigError(f"kernel {self.name!r}: argument names must be unique, got {names}")
        object.__setattr__(self, "include_dirs", tuple(str(d) for d in self.include_dirs))
        object.__setattr__(self, "headers", tuple(self.headers))
        if self.gpu_source is None and self.host_source is None and not self.code_object and self.call is None:
            raise ConfigError(f"kernel {self.name!r} has neither a GPU nor a host source nor a code object")

    def elements(self, size_bytes: int) -> int:
        import numpy as np

        if not isinstance(size_bytes, (int, np.integer)) or size_bytes <= 0:
            raise ConfigError(f"size must be a positive number of bytes per array, got {size_bytes!r}")
        item = np.dtype(self.element_dtype).itemsize
        n = int(size_bytes) // item
        if n < 1:
            raise ConfigError(
                f"size {size_bytes} B is smaller than one {self.element_dtype} element of kernel {self.name!r}"
            )
        if n * item != size_bytes:  # recorded as given, measured as the whole elements below it: a row that lies
            raise ConfigError(
                f"size {size_bytes} B is not a whole number of {self.element_dtype} elements ({item} B) of "
                f"kernel {self.name!r}; expected a multiple of {item}, e.g. {n * item} or {(n + 1) * item}"
            )
        return n

    def buffers(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "buffer")

    def scalars(self, n: int) -> dict[str, int | float]:
        """The scalar arguments' values for ``n``, in order (each may use ``n`` and the ones before it)."""
        env: dict[str, int | float] = {}
        for a in self.args:
            if a.kind == "scalar":
                env[a.name] = a.scalar(n, env)
        return env

    def launch(self, n: int, device: Any) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) of one launch at ``n`` elements on ``device``."""
        return _geometry.launch_of(self.geometry, n, device, self.scalars(n))

    def footprint(self, n: int) -> int:
        """Bytes one launch touches: the declared traffic, else the sum of its buffers."""
        if self.bytes_per_launch is not None:  # an NExpr checks its own range; a callable's result is checked here
            v = int(self.bytes_per_launch(n))
            return _count_in_range("bytes_per_launch", f"{self.name}'s is {_geometry._num(v)}", n, v)
        return self.set_bytes(n)

    def set_bytes(self, n: int) -> int:
        """Bytes one rotating buffer set allocates (all buffer arguments; a callable's footprint)."""
        if self.call is not None:
            return self.footprint(n)
        env = self.scalars(n)
        return sum(a.nbytes(n, env) for a in self.buffers())

    def source_for(self, compiler: str) -> str:
        src = self.host_source if compiler == "host" else self.gpu_source
        if src is None and (self.code_object or self.call is not None):
            return ""
        if src is None:
            other = "GPU" if compiler == "host" else "host C"
            named = f" ({Path(self.source_file).name} is {other} source)" if self.source_file else ""
            fix = (
                "run it on a GPU (--device cuda or hip), or give a C twin of it as a .c --source for the host"
                if compiler == "host"
                else "run it on the host (--device host), or give a GPU source (.cu/.hip)"
            )
            where = "host C" if compiler == "host" else "GPU (hiprtc/NVRTC)"
            raise ConfigError(
                f"kernel {self.name!r} has no {where} source{named}, so it cannot run with compiler {compiler!r}: {fix}"
            )
        return src

    def entry_for(self, compiler: str) -> str:
        return (self.host_entry or self.entry) if compiler == "host" else self.entry
