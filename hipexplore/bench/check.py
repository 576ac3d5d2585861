"""The output check: one launch per configuration compared with a reference, element by element.

Why element-wise with the worst element named: a relative L2 error says *that* a kernel is wrong;
a reviewer needs *where* (a transpose that drops the last partial tile, a softmax whose shared
memory was never sized). The reference is a NumPy function ``reference(inputs, scalars) ->
{output: array}`` or a second kernel (``KernelSpec.check_kernel``, same arguments) run on the same
inputs. An element fails when ``|got - expected| > atol + rtol * |expected|`` (or one side is
NaN); the error names the configuration, the output, the worst element's index, got and expected,
and how many elements differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..devices.base import Device
from ..errors import BenchmarkError
from ..kernels.spec import KernelSpec


#: what a failed check says of an element that still holds the poison put there before the launch
POISONED = "left unwritten: the poison value"


@dataclass(frozen=True)
class CheckTarget:
    """What an output check launches, as one value: ``kernel`` (the loaded code of ``spec``, or a
    callable's ``spec.call``) on ``device`` with ``grid`` and ``block``, over ``sets`` (the rotating
    sets: ``BufferSets``, or a callable's ``CallableSets``). The check before timing
    (``verify.verify``, ``check_outputs``) and the sampled check (``sampled.SampledCheck``) take it whole."""

    device: Device
    spec: KernelSpec
    sets: Any
    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def compare(config: str, output: str, got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> float:
    """Relative L2 error of ``got``; ``BenchmarkError`` naming the worst element when any fails."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.size != expected.size:
        raise BenchmarkError(
            f"output check of {config}: output {output!r} has {got.size} elements, the reference {expected.size}"
        )
    g = got.reshape(-1).astype(np.float64)
    e = expected.reshape(-1).astype(np.float64)
    diff = np.abs(g - e)
    tol = atol + rtol * np.abs(e)
    nan_bad = np.isnan(g) != np.isnan(e)
    bad = (diff > tol) | nan_bad
    if bad.any():
        excess = np.where(nan_bad | np.isnan(diff), np.inf, diff - tol)
        worst = int(np.argmax(np.where(bad, excess, -np.inf)))
        index = np.unravel_index(worst, expected.shape) if expected.ndim > 1 else worst
        shown = index if isinstance(index, int) else tuple(int(i) for i in index)
        unwritten = f" ({POISONED})" if np.isnan(g[worst]) and not np.isnan(e[worst]) else ""
        raise BenchmarkError(
            f"output check failed for {config}: {output}[{shown}] = {g[worst]:.9g} but expected {e[worst]:.9g}"
            f"{unwritten} (|diff| {diff[worst]:.3g} > {tol[worst]:.3g} = atol {atol:g} + rtol {rtol:g} * |expected|); "
            f"{int(bad.sum())} of {bad.size} elements differ; ||got - ref|| / ||ref|| = {_rel_l2(g, e):.3g}"
        )
    return _rel_l2(g, e)


def _rel_l2(g: np.ndarray, e: np.ndarray) -> float:
    """||got - ref|| / ||ref||. Elements that agree as the check reads them (a NaN on both sides,
    the same infinity) contribute 0, not inf (a passing check then reports a finite figure); one
    that disagrees with a NaN or an infinity makes it inf; the reference's norm counts its finite
    elements (a zero norm: the largest |got - ref| instead)."""
    agree = (np.isnan(g) & np.isnan(e)) | (g == e)
    diff = np.where(agree, 0.0, g - e)
    diff = np.where(np.isfinite(diff), diff, np.inf)
    norm = float(np.linalg.norm(e[np.isfinite(e)]))
    if norm > 0:
        return float(np.linalg.norm(diff) / norm)
    return float(np.abs(diff).max(initial=0.0))


def _poison(arg: Any, count: int) -> np.ndarray:
    fill = np.nan if np.issubdtype(np.dtype(arg.dtype), np.floating) else 0x7F
    return np.full(count, fill, dtype=arg.dtype)


def _run_on(
    device: Device,
    spec: KernelSpec,
    buffers: Mapping[str, Any],
    sets: Any,
    kernel: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    args: Any,
) -> dict[str, np.ndarray]:
    outs = [a for a in spec.buffers() if a.role in ("out", "inout")]
    for a in outs:
        if a.role == "out":
            device.copy_to_device(buffers[a.name], _poison(a, a.elements(sets.n, sets.scalars)))
    device.synchronize()
    device.launch(kernel, grid, block, args)
    device.synchronize()
    got = {}
    for a in outs:
        arr = np.empty(a.elements(sets.n, sets.scalars), dtype=a.dtype)
        device.copy_to_host(buffers[a.name], arr)
        got[a.name] = arr
    return got


def check_outputs(
    target: CheckTarget, *, config: str = "", rtol: float | None = None, atol: float | None = None
) -> float:
    """Launch once on set 0 (outputs poisoned first) and compare with the reference; the worst
    relative L2 error over the outputs (NaN when the kernel has no reference). Set 0's outputs are
    restored afterwards, so every set holds the same data again."""
    device, spec, sets = target.device, target.spec, target.sets
    if spec.reference is None and spec.check_kernel is None:
        return math.nan
    config = config or f"kernel {spec.name!r} at n={sets.n}"
    rtol = spec.check_rtol if rtol is None else rtol
    atol = spec.check_atol if atol is None else atol
    got = _run_on(device, spec, sets.buffers[0], sets, target.kernel, target.grid, target.block, sets.args[0])
    if spec.check_kernel is not None:
        expected = _expected_from_kernel(device, spec, sets)
    else:
        expected = dict(spec.reference(sets.host, sets.scalars))
    worst = 0.0
    for name, ref in expected.items():
        if name not in got:
            raise BenchmarkError(
                f"output check of {config}: the reference returned {name!r}, which is not an output "
                f"argument (outputs: {sorted(got)})"
            )
        worst = max(worst, compare(config, name, got[name], ref, rtol=rtol, atol=atol))
    for a in spec.buffers():
        if a.role in ("out", "inout"):
            device.copy_to_device(sets.buffers[0][a.name], sets.host[a.name])
    device.synchronize()
    return worst


def _expected_from_kernel(device: Device, spec: KernelSpec, sets: Any) -> dict[str, np.ndarray]:
    from ..kernels.build import BUILDER
    from . import rotating as rot

    ref = spec.check_kernel
    assert ref is not None
    loaded = BUILDER.loaded(device, ref)
    with rot.BufferSets(device, ref, sets.n, 1, scalars=sets.scalars) as rsets:
        for a in ref.buffers():
            if a.name in sets.host:
                device.copy_to_device(rsets.buffers[0][a.name], sets.host[a.name])
        grid, block, shared = ref.launch(sets.n, device)
        from ..devices.base import BoundKernel

        return _run_on(
            device, ref, rsets.buffers[0], rsets, BoundKernel(loaded.function, shared), grid, block, rsets.args[0]
        )


__all__ = ["POISONED", "CheckTarget", "check_outputs", "compare"]
