"""Cache flushes run between timed launches (never inside a timed window).

Modes:
  none           nothing.
  l2-write       a kernel stores over a buffer of ``write_factor`` x LLC (default 2x; rocMLIR's old
                 flushL2Cache memset L2 + 20%, triton's do_bench zeroes 256 MiB). Leaves the cache
                 full of dirty lines that the measured kernel then pays to write back.
  l2-read        a kernel reads a zero-filled buffer of ``read_factor`` x LLC (default 4x, at least
                 2x): a clean eviction, no dirty lines left behind.
  icache         AMD: a separate kernel running s_icache_inv + 16 s_nop on compute_units x 60 blocks
                 (rocMLIR's old flushInstructionCache).
  inline-icache  AMD: s_icache_inv + 16 s_nop inserted at the entry of the kernel under test by a
                 source transform (``kernels/transform.py``); no separate launch, so no Flusher.

A mode the device cannot do raises ``UnsupportedOperation``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..devices.base import Device, DeviceBuffer, PackedArgs, check_flush_mode, pack_args
from ..errors import ConfigError
from ..kernels import catalog
from ..kernels.build import kernel_for

WRITE_FACTOR = 2.0
READ_FACTOR = 4.0
_MIB = 1 << 20


def flush_bytes(mode: str, llc_bytes: int, factor: float | None = None) -> int:
    if mode == "l2-write":
        f = WRITE_FACTOR if factor is None else factor
        if f < 1:
            raise ConfigError(f"l2-write needs a buffer of at least the LLC (factor >= 1), got factor {f}")
    elif mode == "l2-read":
        f = READ_FACTOR if factor is None else factor
        if f < 2:
            raise ConfigError(f"l2-read needs a buffer of at least 2x the LLC (factor >= 2), got factor {f}")
    else:
        return 0
    return int(math.ceil(llc_bytes * f / _MIB)) * _MIB


@dataclass
class Flusher:
    """A prepared flush: kernel, marshalled arguments and geometry; ``enqueue()`` launches it."""

    device: Device
    mode: str
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


def _kernel(device: Device, name: str) -> Any:
    return kernel_for(device, name)


def make_flusher(device: Device, mode: str, *, factor: float | None = None) -> Flusher | None:
    """The flush for ``mode`` on ``device`` (None for 'none' and 'inline-icache')."""
    check_flush_mode(device, mode)
    if mode in ("none", "inline-icache"):
        return None
    if mode == "icache":
        spec = catalog.get("flush-icache")
        grid, block = spec.geometry(0, device)
        return Flusher(device, mode, 0, _kernel(device, "flush-icache"), pack_args((), {}), grid, block)
    nbytes = flush_bytes(mode, device.llc_bytes, factor)
    if mode == "l2-write":
        spec = catalog.get("flush-l2-write")
        n = nbytes // 4
        buf = device.alloc(nbytes)
        args = pack_args(spec.args, {"buf": buf, "value": 0, "n": n})
        grid, block = spec.geometry(n, device)
        return Flusher(device, mode, nbytes, _kernel(device, spec.name), args, grid, block, [buf])
    spec = catalog.get("flush-l2-read")
    n16 = nbytes // 16
    buf = device.alloc(nbytes)
    sink = device.alloc(16)
    _zero(device, buf)
    _zero(device, sink)
    args = pack_args(spec.args, {"buf": buf, "n16": n16, "sink": sink})
    grid, block = spec.geometry(n16, device)
    return Flusher(device, mode, nbytes, _kernel(device, spec.name), args, grid, block, [buf, sink])


def _zero(device: Device, buf: DeviceBuffer) -> None:
    memset = getattr(device, "memset", None)
    if memset is not None:
        memset(buf, 0)
        device.synchronize()
        return
    import numpy as np

    device.copy_to_device(buf, np.zeros(buf.nbytes, dtype=np.uint8))
