"""The ``Device`` Protocol every backend (host, CUDA, HIP) implements, and what they share.

The harness in ``hipexplore.bench`` only talks to this interface: allocate, copy, load a compiled
``ObjectCode``, look up a kernel, launch it with marshalled arguments, record events, hold and
release the stream. A backend that cannot do something raises ``UnsupportedOperation``.

Devices sit *below* ``hipexplore.kernels``: they know nothing of the catalog. Building a catalog
kernel (spec -> request -> cache -> loaded function) is ``hipexplore.kernels.build``'s job
(``kernel_for(device, name)``). The one kernel a device needs for itself, the spin kernel that holds
a GPU stream, it gets through an explicit interface: ``hold_stream(timeout_s, kernels=...)`` takes
the ``KernelBuilder`` to build it with (the harness passes ``kernels.build.BUILDER``), so nothing
depends on an import having installed anything.
Argument marshalling needs only an argument's name, kind and dtype (``ArgLike``), so ``Arg`` stays
in ``kernels.spec`` and ``CTYPES`` lives here.

Peak bandwidth is derived, in this order, from the memory clock and bus width the runtime reports
(``2 * clock * bus_bits / 8``: DDR, two transfers per clock), else from ``PEAK_BANDWIDTH_TABLE``
(vendor datasheet numbers, matched on the device name); ``peak_bandwidth_source`` says which.
"""

from __future__ import annotations

import ctypes
import math
import struct
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from ..compile.base import ObjectCode
from ..errors import BenchmarkError, ConfigError, UnsupportedOperation

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

#: numpy dtype name -> ctypes type used to marshal a scalar argument.
CTYPES: dict[str, type] = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int8": ctypes.c_int8,
    "uint8": ctypes.c_uint8,
    "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
}


class ArgLike(Protocol):
    """What marshalling needs of a kernel argument (``hipexplore.kernels.spec.Arg`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def dtype(self) -> str: ...


#: Vendor datasheet peak memory bandwidth in GB/s, matched by substring of the device name.
PEAK_BANDWIDTH_TABLE: dict[str, float] = {
    "H200": 4800.0,
    "H100 SXM": 3350.0,
    "H100 PCIe": 2000.0,
    "A100-SXM4-80GB": 2039.0,
    "A100": 1555.0,
    "MI300X": 5300.0,
    "MI300A": 5300.0,
    "MI250X": 3277.0,
    "MI250": 3277.0,
    "MI210": 1638.0,
    "MI100": 1229.0,
}


def peak_from_table(name: str) -> tuple[float, str]:
    for key, gbs in PEAK_BANDWIDTH_TABLE.items():
        if key.lower() in name.lower():
            return gbs, f"table: datasheet {gbs:g} GB/s for '{key}'"
    return math.nan, f"unknown: no memory clock/bus width reported and no table entry for {name!r}"


def peak_from_clock(mem_clock_khz: int, bus_bits: int) -> float:
    """GB/s from the memory clock (kHz) and bus width (bits), two transfers per clock."""
    return 2.0 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9


def choose_peak(name: str, mem_clock_khz: int, bus_bits: int, *, table_first: bool = False) -> tuple[float, str]:
    """(GB/s, source): from the reported memory clock and bus width when both are > 0, else the table.

    ``table_first`` (HIP on MI300-class parts) prefers a table entry when there is one.
    """
    if table_first:
        table = peak_from_table(name)
        if table[0] > 0:
            return table
    if mem_clock_khz > 0 and bus_bits > 0:
        return peak_from_clock(
            mem_clock_khz, bus_bits
        ), f"memory clock {mem_clock_khz} kHz x {bus_bits}-bit bus x 2 (DDR)"
    return peak_from_table(name)


@dataclass(frozen=True)
class DeviceProperties:
    """Everything recorded about a device next to its results."""

    kind: str
    index: int
    name: str
    target: str
    compiler: str
    llc_bytes: int
    llc_source: str
    free_bytes: int
    total_bytes: int
    peak_bandwidth_gbs: float
    peak_bandwidth_source: str
    compute_units: int
    driver: str = ""
    runtime: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DeviceBuffer:
    """Device memory: its address, size and the object that keeps it alive (host: a numpy array)."""

    ptr: int
    nbytes: int
    device_kind: str
    owner: Any = None
    freed: bool = False


class PackedArgs:
    """Kernel arguments marshalled once, reused for every launch.

    ``values``: one ctypes object per argument (pointers as ``c_void_p``); ``pointers``: the
    ``void*[]`` of their addresses that ``cuLaunchKernel``/``hipModuleLaunchKernel`` take as
    ``kernelParams``; ``packed()``: the naturally aligned byte image that HIP's ``extra``
    (HIP_LAUNCH_PARAM_BUFFER_POINTER) takes.
    """

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = list(values)
        self.pointers = (ctypes.c_void_p * max(1, len(self.values)))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in self.values]
        )
        self.argtypes = [type(v) for v in self.values]

    @property
    def address(self) -> int:
        """Address of the ``void*[]`` (what the driver APIs take as kernelParams)."""
        return ctypes.addressof(self.pointers)

    def packed(self) -> bytes:
        out = bytearray()
        for v in self.values:
            size = ctypes.sizeof(v)
            align = ctypes.alignment(type(v))
            out += b"\0" * ((-len(out)) % align)
            out += ctypes.string_at(ctypes.addressof(v), size)
        return bytes(out)

    def __len__(self) -> int:
        return len(self.values)


def pack_args(args: Sequence[ArgLike], values: dict[str, Any]) -> PackedArgs:
    """Marshal kernel arguments from their spec: buffers by address, scalars by value in their dtype."""
    import numpy as np

    out: list[Any] = []
    for a in args:
        if a.name not in values:
            raise ConfigError(f"no value for kernel argument {a.name!r}; have {sorted(values)}")
        v = values[a.name]
        if a.kind == "buffer":
            ptr = v.ptr if isinstance(v, DeviceBuffer) else v
            if not isinstance(ptr, (int, np.integer)):
                raise ConfigError(
                    f"buffer argument {a.name!r} needs a DeviceBuffer or an address, got {type(v).__name__}"
                )
            out.append(ctypes.c_void_p(int(ptr)))
        else:
            ctype = CTYPES[a.dtype]
            try:
                out.append(ctype(v))
            except TypeError:
                raise ConfigError(f"scalar argument {a.name!r} ({a.dtype}) cannot take {v!r}") from None
    return PackedArgs(out)


def expected_packed(args: Sequence[ArgLike], values: dict[str, Any]) -> bytes:
    """The same byte image built independently with ``struct`` (used to check ``PackedArgs``)."""
    codes = {
        "float32": "f",
        "float64": "d",
        "int8": "b",
        "uint8": "B",
        "int16": "h",
        "uint16": "H",
        "int32": "i",
        "uint32": "I",
        "int64": "q",
        "uint64": "Q",
    }
    out = bytearray()
    for a in args:
        if a.kind == "buffer":
            v = values[a.name]
            fmt, val = (
                ("Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I"),
                (v.ptr if isinstance(v, DeviceBuffer) else int(v)),
            )
        else:
            fmt, val = codes[a.dtype], values[a.name]
        size = struct.calcsize("=" + fmt)
        out += b"\0" * ((-len(out)) % size)
        out += struct.pack("=" + fmt, val)
    return bytes(out)


@dataclass(frozen=True)
class BoundKernel:
    """A loaded kernel function with the dynamic shared memory every launch of it passes
    (``extern __shared__``); the harness hands it to ``Device.launch`` like a plain function."""

    function: Any
    shared_bytes: int = 0


class StreamWork(Protocol):
    """Work that is not a kernel function: a Python callable launching on the stream it is given
    (``hipexplore.bench.callable``). ``Device.launch`` calls ``run(args, stream)``."""

    def run(self, args: Any, stream: Any) -> None: ...


def unbind(kernel: Any, shared_bytes: int) -> tuple[Any, int]:
    """(function, shared bytes) of a plain function or a ``BoundKernel``."""
    if isinstance(kernel, BoundKernel):
        return kernel.function, max(int(shared_bytes), kernel.shared_bytes)
    return kernel, int(shared_bytes)


def is_stream_work(kernel: Any) -> bool:
    return callable(getattr(kernel, "run", None)) and getattr(kernel, "stream_work", False)


class Event(Protocol):
    """An opaque timestamp marker recorded in the device's stream."""


class StreamHold(Protocol):
    """A held stream: everything enqueued after it waits until ``release()``."""

    def release(self) -> None: ...

    def timed_out(self) -> bool:
        """After a synchronize: True when the blocking kernel gave up before release."""
        ...


@runtime_checkable
class Device(Protocol):
    """One compute device behind the harness."""

    kind: str
    index: int

    @property
    def name(self) -> str: ...

    @property
    def target(self) -> str:
        """Compiler target: 'gfx90a', 'sm_90', 'host'."""
        ...

    @property
    def compiler(self) -> str:
        """Compiler name for ``CompileRequest``: 'hiprtc', 'nvrtc', 'host'."""
        ...

    @property
    def llc_bytes(self) -> int: ...

    @property
    def llc_source(self) -> str: ...

    @property
    def llc_override(self) -> int | None:
        """The LLC bytes this device was given (``llc_bytes=``, HIPEXPLORE_LLC_BYTES), else None."""
        ...

    @property
    def compute_units(self) -> int: ...

    @property
    def peak_bandwidth_gbs(self) -> float: ...

    @property
    def properties(self) -> DeviceProperties: ...

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory now."""
        ...

    def fresh(self) -> "Device":
        """A device like this one with nothing loaded (code at new addresses), or itself."""
        ...

    def alloc(self, nbytes: int) -> DeviceBuffer: ...

    def free(self, buf: DeviceBuffer) -> None: ...

    def memset(self, buf: DeviceBuffer, value: int = 0) -> None:
        """Every byte of ``buf`` set to ``value`` (GPU: enqueued on the device's stream)."""
        ...

    def set_max_dynamic_shared(self, kernel: Any, nbytes: int) -> None:
        """Allow ``kernel`` launches with ``nbytes`` of dynamic shared memory."""
        ...

    def copy_to_device(self, buf: DeviceBuffer, host: np.ndarray) -> None: ...

    def copy_to_host(self, buf: DeviceBuffer, host: np.ndarray) -> None: ...

    def load(self, code: ObjectCode) -> Any:
        """Load a compiled binary; returns a module handle."""
        ...

    def kernel(self, module: Any, name: str) -> Any:
        """Look a kernel up in a loaded module by its (lowered) symbol name."""
        ...

    def launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int = 0,
    ) -> None: ...

    def event(self) -> Event: ...

    def record(self, event: Event) -> None: ...

    def elapsed_s(self, start: Event, end: Event) -> float:
        """Seconds from ``start`` to ``end`` (both recorded and completed)."""
        ...

    def synchronize(self) -> None: ...

    def hold_stream(self, timeout_s: float = 2.0, *, kernels: "KernelBuilder | None" = None) -> StreamHold:
        """Block the stream until the returned hold is released (or ``timeout_s`` passes); a GPU
        builds its spin kernel with ``kernels`` (the host has no queue to hold and needs none)."""
        ...

    @property
    def instruction_cache_flush(self) -> bool:
        """Whether the device can invalidate its instruction cache (AMD's ``s_icache_inv``): what
        the flush vocabulary (``bench.flush``) asks before offering an instruction-cache flush."""
        ...

    def reset_l2_persistence(self, clear: bool = True) -> str:
        """Persisting-L2 state cleared before a timed chunk (lines made normal, no set-aside, no
        persisting window on the timed stream); what was found set, in words ("" when nothing)."""
        ...

    def close(self) -> None: ...


def fill_host_array(arr: np.ndarray, init: str | float, rng: np.random.Generator) -> None:
    import numpy as np

    if init == "random":
        if np.issubdtype(arr.dtype, np.floating):
            # uniform in [0.5, 1.5): fast to draw, never near zero (relative errors stay meaningful)
            arr[...] = rng.random(arr.shape, dtype=np.float32 if arr.dtype == np.float32 else np.float64) + 0.5
        else:
            arr[...] = rng.integers(0, 100, arr.shape).astype(arr.dtype)
    elif init == "zeros":
        arr[...] = 0
    elif init == "ones":
        arr[...] = 1
    else:
        try:
            arr[...] = float(init)
        except (TypeError, ValueError):
            raise BenchmarkError(f"buffer init {init!r} is not 'random', 'zeros', 'ones' or a number") from None


class KernelBuilder(Protocol):
    """What a device asks for the kernels it needs itself (``hipexplore.kernels.build.KernelBuilder``):
    given explicitly, as ``hold_stream``'s ``kernels``."""

    def kernel(self, device: Any, name: str, *, inline_icache: bool = False) -> Any:
        """The loaded, looked-up kernel function for ``device`` (memoized per device)."""
        ...

    def arguments(self, name: str) -> Sequence[ArgLike]:
        """The argument list of the catalog kernel ``name``."""
        ...


class DeviceBase:
    """What every backend shares above the runtime calls: the compile cache its kernels build
    through (``cache``; None means the default cache), the last-level cache it sizes and flushes
    against, and every capability the harness asks of a device, as a member.

    Why members: callers used to probe with ``getattr``/``hasattr`` and fill a gap with one GPU's
    figures (132 compute units, 16 GiB free). A member answers honestly here, or refuses with
    ``UnsupportedOperation`` naming the device and what it cannot do; a backend overrides what it has.
    """

    kind: str = ""
    index: int = 0
    #: the CompileCache the device's kernels compile through (None: the process default cache)
    cache: Any = None
    #: (bytes, where the number came from) and whether it was given rather than read (``_choose_llc``)
    _llc: tuple[int, str] | None = None
    _llc_overridden = False
    #: what the runtime reported at start-up (None: this device reports no count)
    _compute_units: int | None = None

    def _refuse(self, what: str) -> UnsupportedOperation:
        return UnsupportedOperation(f"{self.kind or type(self).__name__} device: {what}")

    # the last-level cache -------------------------------------------------------------------
    def _choose_llc(self, reported: int, source: str, given: int | None) -> None:
        """The LLC this device sizes rotating sets and flushes against: ``given`` (the ``llc_bytes``
        argument), else HIPEXPLORE_LLC_BYTES, else what it ``reported`` (read from ``source``). An
        override names what it replaced: the source is recorded with every result."""
        from .. import settings

        env = settings.LLC_BYTES.get()
        if given is not None:
            self._llc, self._llc_overridden = (
                (int(given), f"override (llc_bytes argument; reported {reported} B: {source})"),
                True,
            )
        elif env is not None:
            self._llc, self._llc_overridden = (
                (int(env), f"override (HIPEXPLORE_LLC_BYTES; reported {reported} B: {source})"),
                True,
            )
        else:
            self._llc, self._llc_overridden = (int(reported), source), False

    @property
    def llc_bytes(self) -> int:
        if self._llc is None:
            raise self._refuse("reports no last-level cache size (give llc_bytes= or HIPEXPLORE_LLC_BYTES)")
        return self._llc[0]

    @property
    def llc_source(self) -> str:
        return self._llc[1] if self._llc is not None else "none: this device reports no last-level cache"

    @property
    def llc_override(self) -> int | None:
        """The LLC bytes this device was given (``llc_bytes=`` or HIPEXPLORE_LLC_BYTES), None when it
        uses its own figure: what a device opened elsewhere (a sweep worker's) must be given to
        size and flush like this one."""
        return self._llc[0] if self._llc is not None and self._llc_overridden else None

    # what the device has ---------------------------------------------------------------------
    @property
    def compute_units(self) -> int:
        """Compute units (SMs, CUs; the host: CPUs): what grid-stride launches scale with."""
        if self._compute_units is None:
            raise self._refuse("reports no compute-unit count")
        return self._compute_units

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory now."""
        raise self._refuse("reports no free/total memory")

    def fresh(self) -> "DeviceBase":
        """A device like this one with nothing loaded, so the next unit of a sweep places its code
        anew (``bench.units``). This default is the device itself: a runtime that cannot be opened
        twice in one process (a GPU's context) gets fresh placement from a fresh worker process."""
        return self

    def memset(self, buf: DeviceBuffer, value: int = 0) -> None:
        """Every byte of ``buf`` set to ``value``."""
        raise self._refuse("has no memset")

    def set_max_dynamic_shared(self, kernel: Any, nbytes: int) -> None:
        """Allow ``kernel`` launches with ``nbytes`` of dynamic shared memory (beyond a runtime's
        default cap, e.g. CUDA's 48 KiB)."""
        raise self._refuse(f"has no dynamic shared memory to allow ({int(nbytes)} B asked)")

    #: whether the device can invalidate its instruction cache (``s_icache_inv``): the flush modes
    #: that need it (``bench.flush``: icache, inline-icache) are offered on such devices only
    instruction_cache_flush: bool = False

    def reset_l2_persistence(self, clear: bool = True) -> str:
        """Clear every persisting-L2 state before a timed chunk and say what was set ("" when
        nothing; ``clear=False``: only say). Why: a line marked persisting (an access-policy window over a set-aside of the
        L2) survives any flush that reads or writes other memory, so a kernel's launcher could keep
        its inputs in the L2 under a cold promise (``bench.trust.L2Guard`` calls this before every
        chunk). This default: a device without persisting-L2 control (the host, AMD GPUs) has
        nothing to clear."""
        return ""
