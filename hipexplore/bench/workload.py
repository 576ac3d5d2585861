"""What a sweep measures: a workload, able to enqueue itself on buffer set *i*; and the kind made
of several kernels (a tuning candidate's fill, GEMM, reduction and pointwise pipeline).

Every workload reaches the pipeline (``bench.orchestrator`` -> ``bench.sweeprun``) as a
``KernelSpec``, which is what the catalog, the resume identities, the provenance and the workers
already know: a catalog kernel, a ``--source`` kernel (``user_kernel``), a precompiled code object
(``code_object=``) and a Python callable (``callable_kernel``) each say how to build buffer set *i*
(``bench.callable.sets_for``: ``BufferSets`` or the callable's ``make_args(n, i)``) and how to
enqueue themselves on it (a launch, or ``StreamWork.run``), and how their output is checked. So the
pipeline gives every kind the same units, flushes, rotating sets, cold reference, throttle rules
and launch floor.

``pipeline_workload`` makes the multi-kernel kind: ``make_set(i)`` allocates and fills one set and
returns its ``PipelineSet`` (its buffers and, in order, the ``Launch``es that run the pipeline on
them); the workload enqueues those launches back to back, so a timed sample is the whole pipeline
between one event pair (what a tuner compares), after the same flush and on a set of its own.
``check(set)`` checks set 0's output after one run (``BenchmarkError`` when it is wrong: a fast
wrong candidate never gets a row). A set's buffers are freed with the set. It runs in the
calling process (it holds loaded kernels: a sweep worker could not build them).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from ..kernels.spec import KernelSpec
from .callable import callable_kernel


@dataclass(frozen=True)
class Launch:
    """One kernel of a pipeline on one buffer set: the loaded function, its geometry, its packed
    arguments, its dynamic shared memory."""

    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: Any
    shared_bytes: int = 0


@dataclass
class PipelineSet:
    """One buffer set of a pipeline workload: its ``buffers`` (name -> ``DeviceBuffer``) and the
    ``launches`` that run the pipeline on them, in order."""

    buffers: dict[str, Any]
    launches: list[Launch] = field(default_factory=list)


def pipeline_workload(
    name: str,
    device: Any,
    make_set: Callable[[int], PipelineSet],
    *,
    footprint_bytes: int,
    check: Callable[[PipelineSet], float] | None = None,
) -> KernelSpec:
    """A workload of several kernels (module docstring): ``footprint_bytes`` is what one run touches
    (the traffic, and the rotating-set size), ``name`` its name in the frames (an identifier)."""

    def make_args(n: int, i: int) -> PipelineSet:
        one = make_set(i)
        weakref.finalize(one, _free, device, list(one.buffers.values()))  # freed with the set
        return one

    def run(values: PipelineSet, stream: Any) -> None:
        for step in values.launches:
            device.launch(step.kernel, step.grid, step.block, step.args, shared_bytes=step.shared_bytes)

    run.__name__ = run.__qualname__ = name
    return callable_kernel(
        run, make_args, bytes_per_launch=lambda n: footprint_bytes, name=name, register_it=False, check=check
    )


def _free(device: Any, buffers: list[Any]) -> None:
    for buf in buffers:
        try:
            device.free(buf)
        except Exception:  # noqa: BLE001 - a dead context after a fault: nothing to give back
            pass


__all__ = ["Launch", "PipelineSet", "pipeline_workload"]
