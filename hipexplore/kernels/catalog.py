"""The kernel catalog: built-in streaming kernels plus anything a user or another module registers.

Registration is open: ``register(spec)`` adds a kernel (``replace=True`` to overwrite), so the GEMM
family in ``tuning/gemm.py`` and user kernels sit next to triad, copy and fill.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import ConfigError
from . import sources
from .geometry import ExprGeometry
from .spec import Arg, KernelSpec, NExpr, fixed_geometry, grid_stride

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

_REGISTRY: dict[str, KernelSpec] = {}
_LOCK = threading.Lock()


def register(spec: KernelSpec, *, replace: bool = False) -> KernelSpec:
    """Add a kernel to the catalog; a second kernel of the same name needs ``replace=True``."""
    if not isinstance(spec, KernelSpec):
        raise ConfigError(f"register() expects a KernelSpec, got {type(spec).__name__}")
    with _LOCK:
        if spec.name in _REGISTRY and not replace and _REGISTRY[spec.name] is not spec:
            raise ConfigError(f"kernel {spec.name!r} is already registered; pass replace=True to overwrite it")
        _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    with _LOCK:
        _REGISTRY.pop(name, None)


def get(name: str | KernelSpec) -> KernelSpec:
    if isinstance(name, KernelSpec):
        return name
    with _LOCK:
        spec = _REGISTRY.get(name)
    if spec is None:
        raise ConfigError(f"unknown kernel {name!r}; expected one of: {', '.join(user_names())}")
    return spec


def names() -> list[str]:
    with _LOCK:
        return sorted(_REGISTRY)


#: the harness's own kernels (the spin that holds the queue, the cache flushers): not for benchmarking
INTERNAL_PREFIXES = ("flush-", "spin", "floor-")


def user_names() -> list[str]:
    """The kernels a user benchmarks: every registered name but the harness's own helpers."""
    return [n for n in names() if not n.startswith(INTERNAL_PREFIXES)]


def _triad_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    import numpy as np

    return {"a": (inputs["b"] + np.float32(scalars["s"]) * inputs["c"]).astype(np.float32)}


def _copy_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {"dst": inputs["src"].copy()}


def _fill_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    import numpy as np

    n = int(scalars["n"])
    return {"dst": np.full(n, np.float32(scalars["value"]), dtype=np.float32)}


TRIAD = KernelSpec(
    name="triad",
    entry="triad",
    args=(
        Arg("a", "buffer", "float32", role="out"),
        Arg("b", "buffer", "float32", role="in"),
        Arg("c", "buffer", "float32", role="in"),
        Arg("s", "scalar", "float32", value=3.0),
        Arg("n", "scalar", "uint64", value="n"),
    ),
    gpu_source=sources.TRIAD_GPU,
    host_source=sources.HOST_KERNELS_C,
    geometry=grid_stride(4, 256),
    bytes_per_launch=NExpr("3*4*n", "bytes_per_launch"),
    flops_per_launch=NExpr("2*n", "flops_per_launch"),
    reference=_triad_ref,
    role_check=False,
    description="STREAM triad a = b + s*c, fp32: reads 2 arrays, writes 1",
    timer=True,
)

COPY = KernelSpec(
    name="copy",
    entry="copy",
    args=(
        Arg("dst", "buffer", "float32", role="out"),
        Arg("src", "buffer", "float32", role="in"),
        Arg("n", "scalar", "uint64", value="n"),
    ),
    gpu_source=sources.COPY_GPU,
    host_source=sources.HOST_KERNELS_C,
    geometry=grid_stride(4, 256),
    bytes_per_launch=NExpr("2*4*n", "bytes_per_launch"),
    reference=_copy_ref,
    role_check=False,
    description="copy dst = src, fp32: reads 1 array, writes 1",
    timer=True,
)

FILL = KernelSpec(
    name="fill",
    entry="fill",
    args=(
        Arg("dst", "buffer", "float32", role="out"),
        Arg("value", "scalar", "float32", value=1.5),
        Arg("n", "scalar", "uint64", value="n"),
    ),
    gpu_source=sources.FILL_GPU,
    host_source=sources.HOST_KERNELS_C,
    geometry=grid_stride(4, 256),
    bytes_per_launch=NExpr("4*n", "bytes_per_launch"),
    reference=_fill_ref,
    role_check=False,
    description="fill dst = value, fp32: writes 1 array",
    timer=True,
)

#: The blocking kernel is part of the catalog for inspection and compile tests; the harness uses
#: it through ``Device.hold_stream`` and it is not a benchmark target (no host twin: the host
#: device runs launches synchronously and has no queue to hold).
SPIN = KernelSpec(
    name="spin",
    entry="hx_spin",
    args=(
        Arg("flag", "buffer", "int32", role="in", count=1, init="zeros"),
        Arg("status", "buffer", "int32", role="out", count=1, init="zeros"),
        Arg("timeout_ns", "scalar", "uint64", value=1_000_000_000),
    ),
    gpu_source=sources.SPIN_GPU,
    geometry=fixed_geometry(1, 32),
    bytes_per_launch=NExpr("0", "bytes_per_launch"),
    description="blocking kernel: holds the stream until the host writes its flag (or times out)",
)

#: Flush kernels (used by ``hipexplore.bench.flush``; listed so they compile and cache like any kernel).
FLUSH_L2_WRITE = KernelSpec(
    name="flush-l2-write",
    entry="hx_write_flush",
    args=(
        Arg("buf", "buffer", "uint32", role="out", count="n"),
        Arg("value", "scalar", "uint32", value=0),
        Arg("n", "scalar", "uint64", value="n"),
    ),
    gpu_source=sources.WRITE_FLUSH_GPU,
    host_source=sources.HOST_KERNELS_C,
    element_dtype="uint32",
    geometry=grid_stride(4, 256),
    bytes_per_launch=NExpr("4*n", "bytes_per_launch"),
    description="write flush: stores over a buffer of at least the LLC (leaves dirty lines)",
)

FLUSH_L2_READ = KernelSpec(
    name="flush-l2-read",
    entry="hx_read_flush",
    args=(
        Arg("buf", "buffer", "uint32", role="in", count="4*n", init="zeros"),
        Arg("n16", "scalar", "uint64", value="n"),
        Arg("sink", "buffer", "uint32", role="out", count=4, init="zeros"),
    ),
    gpu_source=sources.READ_FLUSH_GPU,
    host_source=sources.HOST_KERNELS_C,
    element_dtype="uint32",
    geometry=grid_stride(4, 256),
    bytes_per_launch=NExpr("16*n", "bytes_per_launch"),
    description="read flush: reads a buffer of at least 2x the LLC (clean eviction); n counts 16-byte words",
)

FLUSH_ICACHE = KernelSpec(
    name="flush-icache",
    entry="hx_icache_flush",
    args=(),
    gpu_source=sources.ICACHE_FLUSH_GPU,
    geometry=ExprGeometry("compute_units*60", 64),
    bytes_per_launch=NExpr("0", "bytes_per_launch"),
    description="AMD instruction-cache flush kernel: s_icache_inv + 16 s_nop on compute_units*60 blocks",
)

#: The launch floor (``bench.floor``): one block that does nothing, timed like the kernel under test.
FLOOR_EMPTY = KernelSpec(
    name="floor-empty",
    entry="hx_empty",
    args=(),
    gpu_source=sources.EMPTY_GPU,
    host_source=sources.HOST_KERNELS_C,
    geometry=fixed_geometry(1, 32),
    bytes_per_launch=NExpr("0", "bytes_per_launch"),
    description="launch floor: an empty kernel on one block (what the event pair reads around nothing)",
)

#: the catalog's own kernels: their specs and sources are written together and tested, so
#: ``kernels.build`` trusts them (no ``--args`` check against the C function); nothing else is
OWN = (TRIAD, COPY, FILL, SPIN, FLUSH_L2_WRITE, FLUSH_L2_READ, FLUSH_ICACHE, FLOOR_EMPTY)
for _spec in OWN:
    register(_spec, replace=True)

BUILTIN = ("triad", "copy", "fill")


def _user_sources(
    source: str | Path | None, host_source: str | Path | None, code_object: str | Path | None
) -> tuple[str | None, str | None, str]:
    """(GPU source text, host source text, the source file's resolved path or "") of ``user_kernel``:
    a ``.c`` file is a host kernel (cc + ctypes), not hiprtc/NVRTC source."""
    source_file = ""
    text: str | None = None
    if source is not None:
        text = _read_source(source)
        if _is_path(source):
            source_file = str(Path(source).resolve())
    elif code_object is None:
        raise ConfigError("user_kernel needs a source (text or file) or a code_object")
    host_text = _read_source(host_source) if host_source is not None else None
    if host_text is None and source is not None and str(source).endswith(".c") and "\n" not in str(source):
        host_text, text = text, None
    return text, host_text, source_file


def _user_geometry(grid: Any, block: Any, shared_bytes: Any, blocks_per_cu: int, scalar_names: list[str]) -> Any:
    """``user_kernel``'s launch geometry: the given expressions, else a grid-stride launch of
    ``blocks_per_cu`` blocks per compute unit."""
    from .geometry import ExprGeometry

    if grid is not None:
        return ExprGeometry(grid, block, shared_bytes, scalar_names)
    if shared_bytes not in (0, "0") or not isinstance(block, int):
        return ExprGeometry("min(compute_units*%d, ceil(n/block_x))" % blocks_per_cu, block, shared_bytes, scalar_names)
    return grid_stride(blocks_per_cu, block)


def _code_object_path(code_object: str | Path | None) -> str:
    """The precompiled code object's resolved path ("" for none); one that does not exist is an error."""
    if code_object is None:
        return ""
    path = str(Path(code_object).resolve())
    if not Path(path).is_file():
        raise ConfigError(f"code object {str(code_object)!r} does not exist")
    return path


def user_kernel(
    source: str | Path | None,
    entry: str,
    args: Sequence[Arg] | str,
    *,
    name: str | None = None,
    grid: int | str | Sequence[int | str] | None = None,
    block: int | str | Sequence[int | str] = 256,
    shared_bytes: int | str = 0,
    blocks_per_cu: int = 4,
    bytes_per_launch: int | str | None = None,
    flops_per_launch: int | str = 0,
    host_source: str | Path | None = None,
    element_dtype: str = "float32",
    options: Sequence[str] = (),
    include_dirs: Sequence[str | Path] = (),
    headers: Sequence[Any] = (),
    code_object: str | Path | None = None,
    reference: Any = None,
    check_kernel: KernelSpec | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    register_it: bool = True,
) -> KernelSpec:
    """Bring your own kernel: a source (text or file) or a precompiled ``code_object``, entry
    name, arguments and geometry.

    A ``.c`` file is a host kernel; other sources compile with hiprtc/NVRTC (``host_source`` adds a
    host twin). A source file is re-read at every build and its include closure (quoted includes
    beside the including file, then ``include_dirs`` in order) is keyed, so edits are never served
    stale. ``args`` may be ``Arg`` objects or a compact string (see ``parse_args``).
    ``grid``/``block``: 1-3 numbers or expressions in n, the scalar arguments and (grid only)
    ``block_x/y/z`` (see ``kernels.geometry``); ``grid=None`` gives a grid-stride launch of
    ``blocks_per_cu`` blocks per compute unit. ``shared_bytes``: dynamic shared memory, a number or
    an expression (``'block_x*4'``). ``bytes_per_launch`` is an int or an expression in n (default:
    the sum of the buffer sizes). ``reference(inputs, scalars) -> {output: array}`` (NumPy) or
    ``check_kernel`` (a second kernel with the same arguments) is checked on the first launch of
    each configuration, within ``rtol``/``atol``.
    """
    text, host_text, source_file = _user_sources(source, host_source, code_object)
    launch = _user_launch(args, grid, block, shared_bytes, blocks_per_cu, bytes_per_launch, flops_per_launch)
    files = _user_files(code_object, headers, include_dirs, host_source, source)
    spec = KernelSpec(
        name=name or entry,
        entry=entry,
        gpu_source=text,
        host_source=host_text,
        source_file=source_file,
        element_dtype=element_dtype,
        reference=reference,
        options=tuple(options),
        description=f"user kernel {entry}",
        check_kernel=check_kernel,
        check_rtol=rtol,
        check_atol=atol,
        **launch,
        **files,
    )
    _check_include_dirs(spec.include_dirs)
    if register_it:
        register(spec, replace=True)
    return spec


def _user_launch(
    args: Sequence[Arg] | str,
    grid: Any,
    block: Any,
    shared_bytes: int | str,
    blocks_per_cu: int,
    bytes_per_launch: int | str | None,
    flops_per_launch: int | str,
) -> dict[str, Any]:
    """``user_kernel``'s launch fields of ``KernelSpec``: the arguments (parsed from the compact string),
    the geometry and the bytes and flops per launch, each checked now so that a bad expression fails
    when the kernel is declared, not at its first launch."""
    from .spec import evaluate

    parsed = parse_args(args) if isinstance(args, str) else tuple(args)
    geometry = _user_geometry(grid, block, shared_bytes, blocks_per_cu, [a.name for a in parsed if a.kind == "scalar"])
    bpl = None
    if bytes_per_launch is not None:
        evaluate(bytes_per_launch, 1, what="bytes_per_launch")
        bpl = _NExpr(bytes_per_launch, "bytes_per_launch")
    evaluate(flops_per_launch, 1, what="flops_per_launch")
    flops = _NExpr(flops_per_launch, "flops_per_launch")
    return {"args": parsed, "geometry": geometry, "bytes_per_launch": bpl, "flops_per_launch": flops}


def _user_files(
    code_object: str | Path | None,
    headers: Sequence[Any],
    include_dirs: Sequence[str | Path],
    host_source: str | Path | None,
    source: str | Path | None,
) -> dict[str, Any]:
    """``user_kernel``'s file fields of ``KernelSpec``, resolved to absolute paths (a later ``chdir``
    cannot change what they name): the code object, the headers, the include directories and the
    file the source was read from (the host twin's first), for the provenance of the code under review."""
    return {
        "code_object": _code_object_path(code_object),
        "headers": _header_sources(headers),
        "include_dirs": tuple(str(Path(d).resolve()) for d in include_dirs),
        "source_path": next(
            (str(Path(x).resolve()) for x in (host_source, source) if x is not None and _is_path(x)), None
        ),
    }


def _header_sources(headers: Sequence[Any]) -> tuple[Any, ...]:
    """``user_kernel``'s extra headers as ``Source`` objects (a path is read now, under its file name),
    so the compile request carries their text and the cache keys it."""
    from ..compile.request import Source

    return tuple(h if isinstance(h, Source) else Source(Path(h).name, _read_source(h)) for h in headers)


def _check_include_dirs(include_dirs: Sequence[str]) -> None:
    """A ``user_kernel`` include directory that does not exist is refused when the kernel is declared,
    rather than showing up later as a puzzling missing header in a compile log."""
    for d in include_dirs:
        if not Path(d).is_dir():
            raise ConfigError(f"include directory {d!r} does not exist")


_NExpr = NExpr


def _is_path(source: Any) -> bool:
    return isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and source.endswith((".cu", ".hip", ".cpp", ".c", ".cc", ".h", ".hpp", ".cuh"))
    )


def _read_source(source: str | Path) -> str:
    if _is_path(source):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"kernel source file {str(path)!r} does not exist")
        return path.read_text()
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"kernel source must be source text or a path to a .cu/.hip/.cpp/.c file, got {source!r}")
    return source


def parse_args(text: str) -> tuple[Arg, ...]:
    """Parse ``"out:a:f32[n], in:b:f32[n], s:f32=2.5, n:u64=n"``.

    Buffers are ``ROLE:NAME:DTYPE[COUNT]`` with ROLE in/out/inout; scalars are ``NAME:DTYPE=VALUE``;
    COUNT and VALUE may be expressions in n.
    """
    from .geometry import split_top_level

    out: list[Arg] = []
    for raw in split_top_level(text):
        parts = raw.split(":")
        try:
            if "=" in raw and "[" not in raw:
                name, rest = parts[0], ":".join(parts[1:])
                dtype, value = rest.split("=", 1)
                val: Any = value.strip()
                try:
                    val = float(val) if any(ch in val for ch in ".e") and val != "n" else int(val)
                except ValueError:
                    pass
                out.append(Arg(name.strip(), "scalar", dtype.strip(), value=val))
            else:
                role, name, typed = parts[0].strip(), parts[1].strip(), parts[2].strip()
                dtype, count = typed.split("[", 1)
                count = count.rstrip("]").strip()
                cnt: int | str = int(count) if count.isdigit() else count
                out.append(Arg(name, "buffer", dtype.strip(), role=role, count=cnt))  # type: ignore[arg-type]
        except ConfigError:
            raise
        except Exception:
            raise ConfigError(
                f"cannot parse kernel argument {raw!r}; expected ROLE:NAME:DTYPE[COUNT] for a buffer "
                f"(e.g. 'out:a:f32[n]') or NAME:DTYPE=VALUE for a scalar (e.g. 'n:u64=n')"
            ) from None
    if not out:
        raise ConfigError(f"no kernel arguments in {text!r}")
    return tuple(out)
