"""One (kernel, size) of a unit, built: what each of its configurations launches.

Why apart from the unit (``bench.sweeprun``): the unit's phases (the output check, the warm-up,
the groups of trials, the cold reference, the interleaved partners) all launch the same loaded
code with the same geometry; building it once per (kernel, size), with the trust flags and the
sampled check's fresh inputs that belong to it, keeps every phase on the very same code object
(the output check's "passed earlier in this process" rule, ``bench.verify``, is keyed by it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..devices.base import BoundKernel, Device
from ..kernels.build import kernel_for
from ..kernels.spec import KernelSpec
from ..schema import Timer
from .flush import flush_mode

if TYPE_CHECKING:
    from .sampled import Fresh


def bound(kernel: Any, shared: int) -> Any:
    """The loaded function with its dynamic shared memory (``Device.launch`` unwraps it)."""
    return BoundKernel(kernel, shared) if shared else kernel


class Target:
    """One (kernel, size) of the unit, built: the loaded variants per timer, the events variant
    ``plain`` for the warm-up and the output check, the geometry, the footprint; the trust flags of
    every row of it (``bench.trust``) and the sampled checks' fresh inputs, drawn at first use."""

    def __init__(self, device: Device, kspec: KernelSpec, size: int, timers: tuple[str, ...]) -> None:
        self.kspec, self.size = kspec, size
        self.n = kspec.elements(size)
        self.grid, self.block, self.shared = kspec.launch(self.n, device)
        self.kernels = {
            t: bound(kernel_for(device, kspec, timed=Timer.of(t).timed_kernel), self.shared) for t in timers
        }
        self.plain = self.kernels.get(Timer.EVENTS) or bound(kernel_for(device, kspec), self.shared)
        self.footprint = kspec.footprint(self.n)
        self.flags: list[str] = []  # trust flags of every row of this (kernel, size) (``bench.trust``)
        self.fresh: Fresh | None = None  # the sampled checks' fresh inputs, drawn at first use

    def kernel(self, device: Device, flush: str, timer: str) -> Any:
        """What a configuration's trials launch: the timer's variant, or a flush compiled into the kernel's own."""
        mode = flush_mode(flush)
        if mode.transforms_kernel:  # the flush is compiled into the kernel: its own variant
            return bound(mode.kernel(device, self.kspec, timed=False), self.shared)
        return self.kernels[timer]


__all__ = ["Target", "bound"]
