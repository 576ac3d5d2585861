"""The host CPU as a device: C kernels compiled by the host compiler, loaded with ctypes, run on
numpy buffers.

Timing: an "event" is ``time.perf_counter_ns()`` read when it is recorded, and a launch is a
synchronous ctypes call, so an event pair brackets exactly the call. A CPU has no launch queue, so
there is no submission latency to hide and ``hold_stream`` is a no-op hold (it cannot be misused:
it reports that it never timed out). The per-call ctypes overhead (~1 us) stays in the numbers.

The last-level cache is read from sysfs (``/sys/devices/system/cpu/cpu0/cache/index*``): the
highest level's size.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..compile.base import ObjectCode
from ..errors import ConfigError, DeviceError
from .base import DeviceBase, DeviceBuffer, DeviceProperties, PackedArgs, is_stream_work, unbind

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_ALIGN = 64


def read_llc(root: Path = SYSFS_CACHE) -> tuple[int, str]:
    """(bytes, source) of the highest-level data/unified cache that sysfs lists."""
    best: tuple[int, int, str] | None = None
    try:
        entries = sorted(root.glob("index*"))
    except OSError:
        entries = []
    for idx in entries:
        try:
            level = int((idx / "level").read_text().strip())
            ctype = (idx / "type").read_text().strip()
            size = parse_size((idx / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if ctype == "Instruction":
            continue
        if best is None or level > best[0] or (level == best[0] and size > best[1]):
            best = (level, size, str(idx))
    if best is None:
        return 32 << 20, f"default 32 MiB: no cache sizes readable under {root}"
    return best[1], f"sysfs L{best[0]} {best[2]}/size"


def parse_size(text: str) -> int:
    """'32768K' -> 33554432; '8M' -> 8388608; '512' -> 512."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if t and t[-1] in mult:
        return int(t[:-1]) * mult[t[-1]]
    return int(t)


def meminfo() -> tuple[int, int]:
    vals: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                vals[key] = int(parts[0]) * 1024
    except OSError:
        pass
    total = vals.get("MemTotal", 0)
    return vals.get("MemAvailable", total), total


class HostEvent:
    __slots__ = ("t_ns",)

    def __init__(self) -> None:
        self.t_ns = -1


class _NoHold:
    """The host runs launches synchronously: nothing to hold, nothing to time out."""

    def release(self) -> None:
        return None

    def timed_out(self) -> bool:
        return False


class HostDevice(DeviceBase):
    """The CPU: C kernels through ctypes, perf_counter_ns timing."""

    kind = "host"
    cache: Any = None

    def __init__(self, index: int = 0, *, llc_bytes: int | None = None) -> None:
        if index != 0:
            raise ConfigError(f"the host device has only index 0, got {index}")
        self.index = 0
        #: launches begun and ended, and the kernel of the last one begun: a watchdog in a sweep
        #: worker (``bench.worker_main``) reads them to stop a launch that never returns
        self.launches_begun = self.launches_ended = 0
        self.launching = ""
        #: when ``get_device('auto')`` fell back to the host: why each GPU runtime was not used
        self.auto_reasons: list[str] = []
        self._choose_llc(*read_llc(), llc_bytes)
        self._compute_units = os.cpu_count() or 1  # None only where the count is undeterminable: one CPU runs it
        # the pid in the name: a process killed before close() leaves this folder behind, and the
        # next hipexplore process removes it once that pid is dead (compile.host.clean_leftovers)
        from ..compile.host import BUILD_PREFIX, clean_dead_build_dirs

        clean_dead_build_dirs()
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{BUILD_PREFIX}{os.getpid()}-device-")
        self._libs: list[ctypes.CDLL] = []
        self._nlib = 0

    def fresh(self) -> "HostDevice":
        """Another host device with this one's settings and nothing loaded: a sweep's next unit
        (``bench.units``) loads its libraries anew through it, at other addresses, since where
        the code sits is no property of the code under review (Mytkowicz et al., ASPLOS 2009)."""
        try:
            other = type(self)()
        except TypeError:  # a subclass that needs arguments: a plain host device
            other = HostDevice()
        other._llc, other._llc_overridden = self._llc, self._llc_overridden
        other.auto_reasons = list(self.auto_reasons)
        return other

    # --- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        from ..provenance import _cpu_model

        return _cpu_model()

    @property
    def target(self) -> str:
        return "host"

    @property
    def compiler(self) -> str:
        return "host"

    @property
    def peak_bandwidth_gbs(self) -> float:
        return float("nan")

    @property
    def properties(self) -> DeviceProperties:
        free, total = self.memory_info()
        return DeviceProperties(
            kind="host",
            index=0,
            name=self.name,
            target="host",
            compiler="host",
            llc_bytes=self.llc_bytes,
            llc_source=self.llc_source,
            free_bytes=free,
            total_bytes=total,
            peak_bandwidth_gbs=float("nan"),
            peak_bandwidth_source="unknown: no datasheet table for host CPUs (kernels here are single-threaded)",
            compute_units=self.compute_units,
            driver="none (host CPU: C kernels called through ctypes, no GPU driver)",
            runtime="ctypes",
        )

    def memory_info(self) -> tuple[int, int]:
        return meminfo()

    # --- memory ---------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> DeviceBuffer:
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ConfigError(f"allocation size must be a positive number of bytes, got {nbytes!r}")
        raw = np.empty(int(nbytes) + _ALIGN, dtype=np.uint8)
        off = (-raw.ctypes.data) % _ALIGN
        view = raw[off : off + int(nbytes)]
        return DeviceBuffer(ptr=view.ctypes.data, nbytes=int(nbytes), device_kind="host", owner=(raw, view))

    def free(self, buf: DeviceBuffer) -> None:
        buf.owner = None
        buf.freed = True

    def _view(self, buf: DeviceBuffer) -> np.ndarray:
        if buf.freed or buf.owner is None:
            raise DeviceError(f"host buffer at {buf.ptr:#x} was already freed")
        return buf.owner[1]

    def copy_to_device(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        src = np.ascontiguousarray(host)
        if src.nbytes > buf.nbytes:
            raise ConfigError(f"copy of {src.nbytes} B does not fit the {buf.nbytes} B buffer")
        ctypes.memmove(self._view(buf).ctypes.data, src.ctypes.data, src.nbytes)

    def copy_to_host(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        if not host.flags.c_contiguous or host.nbytes > buf.nbytes:
            raise ConfigError(
                f"copy target must be a C-contiguous array of at most {buf.nbytes} B, got {host.nbytes} B"
            )
        ctypes.memmove(host.ctypes.data, self._view(buf).ctypes.data, host.nbytes)

    def memset(self, buf: DeviceBuffer, value: int = 0) -> None:
        self._view(buf)[...] = value

    # --- code -----------------------------------------------------------------------------
    def load(self, code: ObjectCode) -> ctypes.CDLL:
        if code.compiler != "host":
            raise ConfigError(
                f"the host device loads shared libraries from the host compiler, not {code.compiler!r} output"
            )
        self._nlib += 1
        path = Path(self._tmp.name) / f"module{self._nlib}.so"
        path.write_bytes(code.binary)
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as exc:
            raise DeviceError(f"dlopen of the host module failed: {exc}") from None
        self._libs.append(lib)
        return lib

    def kernel(self, module: ctypes.CDLL, name: str) -> Any:
        try:
            fn = getattr(module, name)
        except AttributeError:
            raise DeviceError(f"kernel {name!r} is not in the loaded host module; {_exports_hint(module)}") from None
        from .elf import exported_symbols

        kind = exported_symbols(getattr(module, "_name", "") or "").get(name, "function")
        if kind != "function":  # calling a variable's address jumps into data: a fault, no word
            raise ConfigError(
                f"kernel {name!r} is {kind} in the host module (a variable, an array or a function pointer), "
                f"not a function; {_exports_hint(module)}"
            )
        fn.restype = None
        return fn

    def launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int = 0,
    ) -> None:
        if is_stream_work(kernel):
            kernel.run(args, None)  # the host has no stream: a callable is just called
            return
        kernel, _ = unbind(kernel, shared_bytes)
        if kernel.argtypes is None or list(kernel.argtypes) != args.argtypes:
            kernel.argtypes = args.argtypes
        self.launching = getattr(kernel, "__name__", "?")
        self.launches_begun += 1
        try:
            kernel(*args.values)
        finally:
            self.launches_ended += 1

    # --- timing ---------------------------------------------------------------------------
    def event(self) -> HostEvent:
        return HostEvent()

    def record(self, event: HostEvent) -> None:
        event.t_ns = time.perf_counter_ns()

    def elapsed_s(self, start: HostEvent, end: HostEvent) -> float:
        if start.t_ns < 0 or end.t_ns < 0:
            raise DeviceError("elapsed time asked for an event that was never recorded")
        return (end.t_ns - start.t_ns) * 1e-9

    def synchronize(self) -> None:
        return None

    def hold_stream(self, timeout_s: float = 2.0, *, kernels: Any = None) -> _NoHold:
        return _NoHold()  # synchronous calls: no queue to hold, no spin kernel to build

    def close(self) -> None:
        self._libs.clear()
        self._tmp.cleanup()

    def __repr__(self) -> str:
        return f"HostDevice({self.name!r}, llc={self.llc_bytes} B)"


def _exports_hint(module: ctypes.CDLL) -> str:
    """What a missing kernel's message offers: the functions the module does export (``--entry``
    takes one of them) and, where they are C++-mangled, the ``extern "C"`` that keeps a name."""
    from .elf import exported_functions

    names = exported_functions(getattr(module, "_name", "") or "")
    if not names:
        return 'it exports no function: give --entry NAME of a function the source defines (extern "C" in C++)'
    shown = ", ".join(names[:12]) + (f", and {len(names) - 12} more" if len(names) > 12 else "")
    mangled = (
        ' (a C++ name is mangled, _Z...: declare the kernel extern "C")'
        if any(n.startswith("_Z") for n in names)
        else ""
    )
    return f"it exports {shown}: give --entry NAME with one of them{mangled}"
