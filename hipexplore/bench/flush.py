"""The flush vocabulary: every cache flush a sweep can run between timed launches, as objects.

Why objects: a flush mode used to be a bare string compared in eight files (the devices, the spec,
the unit, the cold reference, both tuning engines), so adding one meant finding every comparison.
Each mode is now one ``FlushMode`` here (nvbench keeps its flush as an ``l2flush`` member of the
timer; Triton lets each backend own ``clear_cache``): its name (what the frames' ``flush`` column
says), which devices support it (from what a device declares it can do:
``Device.instruction_cache_flush``), how to make its ``Flusher`` on a device, whether it transforms
the kernel under test instead of launching anything, whether that kernel has an in-kernel timed
variant, and the note every row of it carries. Nobody else compares flush names: they ask the mode.

Modes:
  none           nothing.
  l2-write       a kernel stores over a buffer of ``write_factor`` x LLC (default 2x; rocMLIR's old
                 flushL2Cache memset L2 + 20%, triton's do_bench zeroes 256 MiB). Leaves the cache
                 full of dirty lines that the measured kernel then pays to write back.
  l2-read        a kernel reads a zero-filled buffer of ``read_factor`` x LLC (default 4x, at least
                 2x): a clean eviction, no dirty lines left behind. The cold reference's flush.
  icache         AMD: a separate kernel running s_icache_inv + 16 s_nop on compute_units x 60 blocks
                 (rocMLIR's old flushInstructionCache).
  inline-icache  AMD: s_icache_inv + 16 s_nop inserted at the entry of the kernel under test by a
                 source transform (``kernels/transform.py``); no separate launch, so no Flusher.

A mode the device cannot do raises ``UnsupportedOperation``; an unknown name a ``ConfigError``.
Adding a mode: one ``FlushMode`` in ``MODES`` (and its kernel in the catalog).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from ..devices.base import Device, DeviceBuffer, PackedArgs, pack_args
from ..errors import ConfigError, UnsupportedOperation
from ..kernels import catalog
from ..schema import Timer

WRITE_FACTOR = 2.0
READ_FACTOR = 4.0
_MIB = 1 << 20


@dataclass
class Flusher:
    """A prepared flush: kernel, marshalled arguments and geometry; ``enqueue()`` launches it
    (``mode``: its ``FlushMode``)."""

    device: Device
    mode: "FlushMode"
    nbytes: int
    kernel: Any
    args: PackedArgs
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: list[DeviceBuffer] = field(default_factory=list)

    def enqueue(self) -> None:
        self.device.launch(self.kernel, self.grid, self.block, self.args)

    def free(self) -> None:
        for b in self.buffers:
            self.device.free(b)
        self.buffers.clear()


@dataclass(frozen=True)
class FlushMode:
    """One flush mode (module docstring). ``factor``: (default, least) multiple of the LLC its
    buffer takes, None for modes without a buffer; ``icache``: it needs the device's
    instruction-cache flush (``Device.instruction_cache_flush``); ``transforms_kernel``: it is
    compiled into the kernel under test (no ``Flusher``, the kernel is built in its variant);
    ``in_kernel_timer``: that kernel still has its in-kernel timed variant; ``cold_data``: it
    promises the kernel's inputs come from memory (it evicts the last-level cache: the counter
    pass checks the promise); ``note``: said in every row's warning."""

    name: str
    build: Callable[["FlushMode", Device, int], Flusher] | None = None
    factor: tuple[float, float] | None = None
    icache: bool = False
    transforms_kernel: bool = False
    in_kernel_timer: bool = True
    cold_data: bool = False
    note: str = ""

    def __str__(self) -> str:
        return self.name

    def supported_by(self, device: Any) -> bool:
        """Whether ``device`` can run this flush (what the device declares it can do)."""
        return not self.icache or bool(device.instruction_cache_flush)

    def check(self, device: Any) -> None:
        """``UnsupportedOperation`` naming the mode and the device when it cannot run it."""
        if not self.supported_by(device):
            has = ",".join(m.name for m in supported_modes(device))
            raise UnsupportedOperation(
                f"flush mode {self.name!r} is not available on {device.kind} device {device.name!r}: "
                f"it is an AMD GPU instruction-cache flush (s_icache_inv); this device has "
                f"--flush {has}"
            )

    def measures(self, timer: "str | Timer") -> bool:
        """Whether this flush has a ``timer`` variant (an inline flush has no in-kernel timer slot)."""
        return self.in_kernel_timer or not Timer.of(timer).timed_kernel

    def nbytes(self, llc_bytes: int, factor: float | None = None) -> int:
        """Bytes of its buffer on a device with ``llc_bytes`` of last-level cache (0: none)."""
        if self.factor is None:
            return 0
        default, least = self.factor
        f = default if factor is None else factor
        if f < least:
            what = "at least the LLC" if least == 1 else f"at least {least:g}x the LLC"
            raise ConfigError(f"{self.name} needs a buffer of {what} (factor >= {least:g}), got factor {f}")
        return int(math.ceil(llc_bytes * f / _MIB)) * _MIB

    def make(self, device: Device, factor: float | None = None) -> Flusher | None:
        """Its ``Flusher`` on ``device`` (None when nothing is launched: ``none``, a kernel transform)."""
        self.check(device)
        if self.build is None:
            return None
        return self.build(self, device, self.nbytes(device.llc_bytes, factor))

    def kernel(self, device: Device, kspec: Any, timed: bool) -> Any:
        """The loaded kernel under test for this flush: its transformed variant, else as the timer wants it."""
        from ..kernels.build import kernel_for

        if self.transforms_kernel:
            return kernel_for(device, kspec, inline_icache=True)
        return kernel_for(device, kspec, timed=timed)


def _icache(mode: FlushMode, device: Device, nbytes: int) -> Flusher:
    from ..kernels.build import kernel_for

    spec = catalog.get("flush-icache")
    grid, block = spec.geometry(0, device)
    return Flusher(device, mode, 0, kernel_for(device, "flush-icache"), pack_args((), {}), grid, block)


def _write(mode: FlushMode, device: Device, nbytes: int) -> Flusher:
    from ..kernels.build import kernel_for

    spec = catalog.get("flush-l2-write")
    n = nbytes // 4
    buf = device.alloc(nbytes)
    args = pack_args(spec.args, {"buf": buf, "value": 0, "n": n})
    grid, block = spec.geometry(n, device)
    return Flusher(device, mode, nbytes, kernel_for(device, spec.name), args, grid, block, [buf])


def _read(mode: FlushMode, device: Device, nbytes: int) -> Flusher:
    from ..kernels.build import kernel_for

    spec = catalog.get("flush-l2-read")
    n16 = nbytes // 16
    buf = device.alloc(nbytes)
    sink = device.alloc(16)
    _zero(device, buf)
    _zero(device, sink)
    args = pack_args(spec.args, {"buf": buf, "n16": n16, "sink": sink})
    grid, block = spec.geometry(n16, device)
    return Flusher(device, mode, nbytes, kernel_for(device, spec.name), args, grid, block, [buf, sink])


NONE = FlushMode("none")
L2_WRITE = FlushMode("l2-write", _write, factor=(WRITE_FACTOR, 1.0), cold_data=True)
L2_READ = FlushMode("l2-read", _read, factor=(READ_FACTOR, 2.0), cold_data=True)
ICACHE = FlushMode("icache", _icache, icache=True)
INLINE_ICACHE = FlushMode(
    "inline-icache",
    icache=True,
    transforms_kernel=True,
    in_kernel_timer=False,
    note="by design time_s includes the s_icache_inv + 16 s_nop 0 at the kernel entry",
)
#: every mode, in the order the docs list them
MODES: tuple[FlushMode, ...] = (NONE, L2_WRITE, L2_READ, ICACHE, INLINE_ICACHE)
#: their names (what ``--flush`` and ``SweepSpec.flush`` take)
FLUSH_MODES: tuple[str, ...] = tuple(m.name for m in MODES)
#: the flush of the cold reference (single launches, each after a clean eviction)
REFERENCE = L2_READ
_BY_NAME = {m.name: m for m in MODES}


def flush_mode(mode: "str | FlushMode") -> FlushMode:
    """The ``FlushMode`` of a name (or the mode itself); a ``ConfigError`` naming the known ones."""
    if isinstance(mode, FlushMode):
        return mode
    found = _BY_NAME.get(str(mode))
    if found is None:
        raise ConfigError(f"flush mode {mode!r} is unknown; expected one of {', '.join(FLUSH_MODES)}")
    return found


def supported_modes(device: Any, modes: "tuple[FlushMode, ...]" = MODES) -> tuple[FlushMode, ...]:
    """The modes ``device`` can run (what a panel offers)."""
    return tuple(m for m in modes if m.supported_by(device))


def check_flush_mode(device: Any, mode: "str | FlushMode") -> FlushMode:
    """The mode, after checking it is known and ``device`` can run it (ConfigError / UnsupportedOperation)."""
    m = flush_mode(mode)
    m.check(device)
    return m


def flush_bytes(mode: "str | FlushMode", llc_bytes: int, factor: float | None = None) -> int:
    """Bytes of ``mode``'s flush buffer for ``llc_bytes`` of LLC (``FlushMode.nbytes``)."""
    return flush_mode(mode).nbytes(llc_bytes, factor)


def make_flusher(device: Device, mode: "str | FlushMode", *, factor: float | None = None) -> Flusher | None:
    """The flush for ``mode`` on ``device`` (``FlushMode.make``: None for 'none' and 'inline-icache')."""
    return flush_mode(mode).make(device, factor)


def _zero(device: Device, buf: DeviceBuffer) -> None:
    try:
        device.memset(buf, 0)
        device.synchronize()
        return
    except UnsupportedOperation:  # a device without memset: zeros copied in
        pass
    import numpy as np

    device.copy_to_device(buf, np.zeros(buf.nbytes, dtype=np.uint8))


__all__ = [
    "FLUSH_MODES",
    "FlushMode",
    "Flusher",
    "ICACHE",
    "INLINE_ICACHE",
    "L2_READ",
    "L2_WRITE",
    "MODES",
    "NONE",
    "REFERENCE",
    "check_flush_mode",
    "flush_bytes",
    "flush_mode",
    "make_flusher",
    "supported_modes",
]
