"""The launch sequence a counter pass counts: ``launch_sequence(spec, device, configuration, warmup, count)``.

This is the ONE seam between the counters and the measurement pipeline. It builds what a timed
configuration launches from the same building blocks the timed run uses today (the kernel from
``kernels.build.kernel_for``, its rotating buffer sets from ``bench.callable.sets_for``, sized by
``bench.rotating.plan``, the flush from ``bench.flush.make_flusher``) and launches them in the timed
run's order: every launch after its flush, buffer set ``i % sets`` for launch ``i`` (round robin, as
``time_launches`` rotates), first ``warmup`` launches (whole rotations, so the first counted launch
finds the state the timed launches find: every set touched, the previous ``sets - 1`` launches'
data wherever the cache kept it), then ``count`` counted launches between ``marker.start()`` and
``marker.stop()``. Nothing is timed: no stream hold, no events (they move no data).

When the pipeline is rewritten, re-point this function at its way of building a configuration's
kernel, sets and flush; the child (``counters.child``), the backends and the records need no change.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Protocol, Sequence

from ...devices.base import BoundKernel, Device
from ...errors import ConfigError
from ...kernels.build import kernel_for
from ...kernels.spec import KernelSpec
from ...schema import COLD_REFERENCE, Configuration
from .. import rotating as rot
from ..callable import sets_for
from ..flush import Flusher, make_flusher
from .record import input_bytes

#: warm-up launches before counting, at least (rounded up to whole rotations over the sets)
MIN_WARMUP = 4
#: counted launches per configuration by default (the H200 table of issue 35 counted 12)
DEFAULT_COUNT = 12


class SequenceSpec(Protocol):
    """What ``launch_sequence`` reads of a sweep's spec (``bench.spec.SweepSpec`` has all three)."""

    def specs(self) -> list[KernelSpec]: ...

    @property
    def flush_factor(self) -> dict[str, float]: ...

    @property
    def mem_fraction(self) -> float: ...


class Marker(Protocol):
    """Where the counted launches start and stop, for a profiler that counts only between them."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


class NoMarker:
    """Nothing marked: the backend counts every launch of the kernel and drops the warm-up by order."""

    name = "none"

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class CudaProfilerRange:
    """``cuProfilerStart`` / ``cuProfilerStop`` around the counted launches (Nsight Compute's
    ``--profile-from-start off`` profiles only between them), so warm-up launches are never replayed
    by the profiler: they cost microseconds instead of a profiled launch each."""

    name = "cuda-profiler"

    def __init__(self) -> None:
        from cuda.bindings import driver

        self._drv = driver
        self.status = ""

    def _call(self, fn: Any, what: str) -> None:
        err = fn()[0]
        if err != self._drv.CUresult.CUDA_SUCCESS:
            self.status = f"{what} returned {getattr(err, 'name', err)}"

    def start(self) -> None:
        self._call(self._drv.cuProfilerStart, "cuProfilerStart")

    def stop(self) -> None:
        self._call(self._drv.cuProfilerStop, "cuProfilerStop")


MARKERS = {"none": NoMarker, "cuda-profiler": CudaProfilerRange}


def warmup_launches(sets: int, least: int = MIN_WARMUP) -> int:
    """Warm-up launches for ``sets`` buffer sets: at least ``least`` and at least one rotation,
    rounded up to whole rotations (so the first counted launch is on set 0, as the first timed one)."""
    if sets < 1:
        raise ConfigError(f"a launch sequence needs at least 1 buffer set, got {sets}")
    return sets * math.ceil(max(least, sets) / sets)


def kernel_spec(spec: SequenceSpec, name: str) -> KernelSpec:
    """The ``KernelSpec`` of ``name`` among the spec's kernels."""
    for k in spec.specs():
        if k.name == name:
            return k
    raise ConfigError(f"kernel {name!r} is not one of the spec's kernels {[k.name for k in spec.specs()]}")


def _flusher(device: Device, spec: SequenceSpec, mode: str, flushers: dict[str, Flusher | None] | None) -> Flusher | None:
    if flushers is not None and mode in flushers:
        return flushers[mode]
    fl = make_flusher(device, mode, factor=spec.flush_factor.get(mode))
    if flushers is not None:
        flushers[mode] = fl
    return fl


def launch_sequence(spec: SequenceSpec, device: Device, configuration: Configuration, warmup: int | None = None,
                    count: int = DEFAULT_COUNT, *, marker: Marker | None = None,
                    flushers: dict[str, Flusher | None] | None = None) -> dict[str, Any]:
    """Launch ``configuration`` of ``spec`` on ``device`` as its timed run would, untimed: ``warmup``
    launches (None: ``warmup_launches(sets)``), then ``count`` launches between ``marker.start()``
    and ``marker.stop()``, each after the configuration's flush, rotating over its buffer sets.

    ``flushers``: a dict the caller keeps across configurations (a flush buffer allocated once per
    process, as a sweep unit does; the caller frees them). Returns the manifest entry a backend's
    parser attributes counted launches by: kernel, entry, size, rotating (asked and sets), flush,
    warmup, count, input bytes, geometry."""
    if configuration.flush == COLD_REFERENCE:
        raise ConfigError("the cold reference is not counted: count its flush as rotating=1, flush=l2-read")
    kspec = kernel_spec(spec, configuration.kernel)
    if kspec.call is not None:
        raise ConfigError(f"kernel {kspec.name!r} is a Python callable: its launches cannot be replayed in a profiled child process")
    if count < 1:
        raise ConfigError(f"count must be at least 1 counted launch, got {count}")
    n = kspec.elements(configuration.size)
    flusher = _flusher(device, spec, configuration.flush, flushers)
    free, _ = device.memory_info()
    plan = rot.plan(configuration.rotating, footprint_bytes=kspec.footprint(n), set_bytes=kspec.set_bytes(n),
                    llc_bytes=device.llc_bytes, free_bytes=free, mem_fraction=spec.mem_fraction)
    grid, block, shared = kspec.launch(n, device)
    fn = kernel_for(device, kspec, inline_icache=(configuration.flush == "inline-icache"))
    kernel = BoundKernel(fn, shared) if shared else fn
    warm = warmup_launches(plan.count) if warmup is None else int(warmup)
    if warm < 0:
        raise ConfigError(f"warmup must be >= 0 launches, got {warmup}")
    mark = marker or NoMarker()
    with sets_for(device, kspec, n, plan.count) as sets:
        _launches(device, kernel, grid, block, sets.args, flusher, range(warm))
        device.synchronize()
        mark.start()
        try:
            _launches(device, kernel, grid, block, sets.args, flusher, range(warm, warm + count))
            device.synchronize()
        finally:
            mark.stop()
    return {"kernel": kspec.name, "entry": kspec.entry, "size_bytes": int(configuration.size), "n": n,
            "rotating_requested": str(plan.requested), "rotating": plan.count, "flush": configuration.flush,
            "warmup": warm, "count": int(count), "input_bytes": input_bytes(kspec, n), "footprint_bytes": kspec.footprint(n),
            "first_counted_set": warm % plan.count, "grid": list(grid), "block": list(block), "plan_note": plan.note}


def _launches(device: Device, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int], args: Sequence[Any],
              flusher: Flusher | None, indices: range) -> None:
    """Launch ``i`` for each index: the flush, then the kernel on buffer set ``i % len(args)``."""
    nsets = len(args)
    for i in indices:
        if flusher is not None:
            flusher.enqueue()
        device.launch(kernel, grid, block, args[i % nsets])


def free_flushers(flushers: Mapping[str, Flusher | None]) -> None:
    """Free the flush buffers ``launch_sequence`` allocated into ``flushers``."""
    for fl in flushers.values():
        if fl is not None:
            fl.free()


__all__ = ["CudaProfilerRange", "DEFAULT_COUNT", "MARKERS", "MIN_WARMUP", "Marker", "NoMarker", "SequenceSpec", "free_flushers",
           "kernel_spec", "launch_sequence", "warmup_launches"]
