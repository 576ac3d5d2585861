"""What the harness needs to know about a kernel: its arguments, launch geometry and traffic.

A ``KernelSpec`` is written once and serves every device: ``gpu_source`` compiles with both hiprtc
and NVRTC (the same text; ``HX_AMD`` tells them apart), ``host_source`` is the plain-C twin that the
host device loads through ctypes. ``bytes_per_launch`` and ``flops_per_launch`` let results be shown
as bandwidth against the device's peak, and ``footprint`` (the bytes one launch touches) sizes the
rotating buffer sets.
"""
from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence

import numpy as np

from ..devices.base import CTYPES as _CTYPES
from ..errors import ConfigError

ArgKind = Literal["buffer", "scalar"]
ArgRole = Literal["in", "out", "inout"]

#: numpy dtype name -> ctypes type (defined with the marshalling, in devices.base)
CTYPES = _CTYPES

#: short names accepted on the command line
DTYPE_ALIASES = {
    "f32": "float32", "f64": "float64", "float": "float32", "double": "float64",
    "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16",
    "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "int": "int32",
}


def canonical_dtype(dtype: str) -> str:
    name = DTYPE_ALIASES.get(str(dtype), str(dtype))
    if name not in CTYPES:
        raise ConfigError(f"dtype {dtype!r} is not supported; expected one of {sorted(CTYPES)} or {sorted(DTYPE_ALIASES)}")
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
        return np.dtype(self.dtype).itemsize

    def elements(self, n: int) -> int:
        return int(evaluate(self.count, n, what=f"count of argument {self.name!r}"))

    def nbytes(self, n: int) -> int:
        return self.elements(n) * self.itemsize

    def scalar(self, n: int) -> int | float:
        v = evaluate(self.value, n, what=f"value of argument {self.name!r}")
        return float(v) if self.dtype.startswith("float") else int(v)


_EXPR_OK = re.compile(r"^[\sn0-9+\-*/().e]*$")


def evaluate(expr: int | float | str | None, n: int, *, what: str) -> int | float:
    """Evaluate a number or a small arithmetic expression in ``n`` (no names other than n)."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return expr
    if not isinstance(expr, str) or not _EXPR_OK.match(expr):
        raise ConfigError(f"{what}: {expr!r} is not a number or an arithmetic expression in n (e.g. 'n', '2*n', 'n//4')")
    try:
        val = eval(expr, {"__builtins__": {}}, {"n": n})  # noqa: S307 - charset checked above
    except Exception as exc:
        raise ConfigError(f"{what}: cannot evaluate {expr!r} with n={n}: {exc}") from None
    if isinstance(val, float) and val.is_integer() and "." not in expr:
        val = int(val)
    return val


Geometry = Callable[[int, DeviceShape], tuple[tuple[int, int, int], tuple[int, int, int]]]


def grid_stride(blocks_per_cu: int = 4, block: int = 256) -> Geometry:
    """A grid-stride launch: ``blocks_per_cu`` blocks of ``block`` threads per compute unit,
    never more blocks than elements need (the H200 numbers in our notes use 132·4 blocks of 256)."""

    def geometry(n: int, device: DeviceShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        cus = max(1, int(getattr(device, "compute_units", 1) or 1))
        grid = max(1, min(cus * blocks_per_cu, math.ceil(max(n, 1) / block)))
        return (grid, 1, 1), (block, 1, 1)

    geometry.__doc__ = f"grid_stride(blocks_per_cu={blocks_per_cu}, block={block})"
    return geometry


def fixed_geometry(grid: int | Sequence[int], block: int | Sequence[int]) -> Geometry:
    g, b = _dim3(grid, "grid"), _dim3(block, "block")

    def geometry(n: int, device: DeviceShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return g, b

    geometry.__doc__ = f"fixed_geometry(grid={g}, block={b})"
    return geometry


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
    flops_per_launch: Callable[[int], int] = lambda n: 0
    reference: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], Mapping[str, np.ndarray]] | None = None
    options: tuple[str, ...] = ()
    description: str = ""
    #: the source has an in-kernel timer under ``-DHX_TIMED`` (an extra last ``u64*`` argument:
    #: [first block start, last block end] in ns; see kernels/sources.py), for the ``in-kernel`` timer
    timer: bool = False
    #: the file the source was read from (user kernels), for the provenance of the code under review
    source_path: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not re.match(r"^[A-Za-z_][A-Za-z0-9_.\-]*$", self.name):
            raise ConfigError(f"kernel name must be an identifier-like string, got {self.name!r}")
        object.__setattr__(self, "args", tuple(self.args))
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise ConfigError(f"kernel {self.name!r}: argument names must be unique, got {names}")
        if self.gpu_source is None and self.host_source is None:
            raise ConfigError(f"kernel {self.name!r} has neither a GPU nor a host source")

    def elements(self, size_bytes: int) -> int:
        if not isinstance(size_bytes, (int, np.integer)) or size_bytes <= 0:
            raise ConfigError(f"size must be a positive number of bytes per array, got {size_bytes!r}")
        item = np.dtype(self.element_dtype).itemsize
        n = int(size_bytes) // item
        if n < 1:
            raise ConfigError(f"size {size_bytes} B is smaller than one {self.element_dtype} element of kernel {self.name!r}")
        return n

    def buffers(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "buffer")

    def footprint(self, n: int) -> int:
        """Bytes one launch touches: the declared traffic, else the sum of its buffers."""
        if self.bytes_per_launch is not None:
            return int(self.bytes_per_launch(n))
        return sum(a.nbytes(n) for a in self.buffers())

    def set_bytes(self, n: int) -> int:
        """Bytes one rotating buffer set allocates (all buffer arguments)."""
        return sum(a.nbytes(n) for a in self.buffers())

    def source_for(self, compiler: str) -> str:
        src = self.host_source if compiler == "host" else self.gpu_source
        if src is None:
            where = "host C" if compiler == "host" else "GPU (hiprtc/NVRTC)"
            raise ConfigError(f"kernel {self.name!r} has no {where} source, so it cannot run with compiler {compiler!r}")
        return src

    def entry_for(self, compiler: str) -> str:
        return (self.host_entry or self.entry) if compiler == "host" else self.entry
