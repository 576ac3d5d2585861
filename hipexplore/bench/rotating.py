"""Rotating buffer sets: each launch reads and writes a different copy of its buffers, so what one
launch leaves in the last-level cache is not what the next one reads.

``auto`` = max(2, 2 * ceil(LLC / footprint)) (the rocMLIR PR 2188 review's rule), footprint being
the bytes one launch touches. The total is capped at ``mem_fraction`` of the device's free memory;
the cap is recorded with every result (``rotating_cap_bytes``) and a capped count is a warning,
never silent.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from ..devices.base import Device, DeviceBuffer, PackedArgs, pack_args
from ..errors import ConfigError
from ..readable import format_bytes
from ..kernels.spec import KernelSpec
from .defaults import DEFAULT_MEM_FRACTION, auto_or_count  # noqa: F401 - importable from here too
from .inputs import HOST_INPUTS, HOST_INPUT_CACHE_BYTES, host_inputs  # noqa: F401 - importable from here too

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np


def auto_count(llc_bytes: int, footprint_bytes: int) -> int:
    if footprint_bytes <= 0:
        raise ConfigError(f"footprint must be positive to size rotating buffers, got {footprint_bytes} B")
    return max(2, 2 * math.ceil(llc_bytes / footprint_bytes))


def parse_rotating(value: int | str) -> int | str:
    """1, 4, '4' -> int; 'auto' -> 'auto'; anything else is a ConfigError."""
    given, value = value, auto_or_count(value)
    if value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"rotating must be a positive integer or 'auto', got {given!r}")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"rotating must be a positive integer or 'auto', got {value!r}")
    return int(value)


@dataclass(frozen=True)
class RotatingPlan:
    requested: str  # "auto" or the number asked for, as text (the rotating_requested column)
    count: int
    footprint_bytes: int
    set_bytes: int
    llc_bytes: int
    cap_bytes: int
    capped: bool
    note: str = ""


def plan(
    requested: int | str,
    *,
    footprint_bytes: int,
    set_bytes: int,
    llc_bytes: int,
    free_bytes: int,
    mem_fraction: float = DEFAULT_MEM_FRACTION,
    size_bytes: int | None = None,
) -> RotatingPlan:
    """Decide how many buffer sets to allocate; a count that does not fit the cap is reduced (noted).
    ``size_bytes`` (the configuration's size per array, where known) lets a set that cannot fit at
    all name the largest ``--size`` that would."""
    req = parse_rotating(requested)
    if not 0 < mem_fraction <= 1:
        raise ConfigError(f"mem_fraction must be in (0, 1], got {mem_fraction!r}")
    want = auto_count(llc_bytes, footprint_bytes) if req == "auto" else int(req)
    cap = int(free_bytes * mem_fraction)
    fits = cap // set_bytes if set_bytes > 0 else want
    if fits < 1:
        raise ConfigError(
            f"one buffer set needs {format_bytes(set_bytes)} but the cap is {format_bytes(cap)} ({mem_fraction * 100:g}% of "
            f"{format_bytes(free_bytes)} free device memory): {_fits(set_bytes, free_bytes, size_bytes, cap)}"
        )
    count, note = want, ""
    if want > fits:
        count = int(fits)
        note = (
            f"rotating {req} wants {want} sets x {set_bytes} B = {want * set_bytes} B, over the cap of {cap} B "
            f"({mem_fraction:.0%} of free memory): capped to {count}"
        )
    return RotatingPlan(str(req), count, footprint_bytes, set_bytes, llc_bytes, cap, want > fits, note)


def _fits(set_bytes: int, free_bytes: int, size_bytes: int | None, cap: int) -> str:
    """What makes a buffer set fit: a smaller ``--size`` (the largest that fits, where the size is
    known) or, where the set fits in the free memory at all, the ``--mem-fraction`` it would need."""
    smaller = f"--size {_size_at_most(size_bytes * cap // set_bytes)} or less" if size_bytes else "a smaller --size"
    if 0 < set_bytes <= free_bytes:
        return (
            f"give {smaller}, or --mem-fraction {math.ceil(set_bytes / free_bytes * 100) / 100:.2f} or more (at most 1)"
        )
    return f"give {smaller} (one set is more than all of the free memory: no --mem-fraction fits it)"


def _size_at_most(n: int) -> str:
    """``n`` bytes rounded down to a ``--size`` value (``3.5GiB``, ``640KiB``, ``12``) that is <= n."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{math.floor(n / size * 10) / 10:g}{unit}"
    return str(max(int(n), 0))


def check_iterations(iterations: int, buffer_sets: int) -> None:
    """Fewer iterations than buffer sets would leave sets unused: an error that shows both numbers
    and both ways out."""
    if iterations < buffer_sets:
        raise ConfigError(
            f"iterations ({iterations}) must be greater than or equal to the number of rotating buffer sets ({buffer_sets}): "
            f"give --iterations {buffer_sets} or more, or --rotating {iterations} or fewer"
        )


class BufferSets:
    """``count`` independent copies of a kernel's buffers, each with its marshalled arguments.

    Inputs are filled once on the host (seeded random data, ``bench.inputs``) and copied into every
    set, so all sets hold the same values; ``host`` gives writable copies for correctness checks.
    """

    def __init__(
        self,
        device: Device,
        spec: KernelSpec,
        n: int,
        count: int,
        *,
        seed: int = 0,
        scalars: dict[str, Any] | None = None,
    ) -> None:
        self.device, self.spec, self.n, self.count = device, spec, n, count
        self.buffers: list[dict[str, DeviceBuffer]] = []
        self.args: list[PackedArgs] = []
        self.scalars = spec.scalars(n)
        self.scalars.update(scalars or {})
        self._pristine = host_inputs(spec, n, self.scalars, seed, copy=False)  # read-only, shared
        self._host: dict[str, np.ndarray] | None = None
        try:
            for _ in range(count):
                bufs: dict[str, DeviceBuffer] = {}
                self.buffers.append(bufs)
                for a in spec.buffers():
                    bufs[a.name] = device.alloc(self._pristine[a.name].nbytes)
                    device.copy_to_device(bufs[a.name], self._pristine[a.name])
                self.args.append(pack_args(spec.args, {**bufs, **self.scalars}))
            device.synchronize()
        except BaseException:
            self.free()
            raise

    @property
    def host(self) -> dict[str, np.ndarray]:
        """Writable host copies of set 0's inputs (for the output check), made at first use: most
        sets are only launched, and at 256 MiB each copy cost a fraction of a second."""
        if self._host is None:
            self._host = {k: (v if v.flags.writeable else v.copy()) for k, v in self._pristine.items()}
        return self._host

    @property
    def pristine(self) -> dict[str, np.ndarray]:
        """Every buffer's data as it was put into each set (read-only, shared): what the role check
        (``bench.roles``) compares with and restores, without a writable copy of 256 MiB."""
        return dict(self._pristine)

    @property
    def total_bytes(self) -> int:
        return sum(b.nbytes for bufs in self.buffers for b in bufs.values())

    def free(self) -> None:
        for bufs in self.buffers:
            for b in bufs.values():
                self.device.free(b)
        self.buffers.clear()
        self.args.clear()

    def __enter__(self) -> "BufferSets":
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def rotation(iterations: int, count: int) -> Sequence[int]:
    """Buffer set of each iteration: round robin."""
    return [i % count for i in range(iterations)]
