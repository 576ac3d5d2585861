"""``callable_kernel(fn, make_args, bytes_per_launch=...)``: benchmark any Python callable that
launches work on the stream the harness gives it (a torch op, a Triton kernel, a CuPy kernel).

Why it times like a kernel: ``Device.launch`` sees the callable as ``StreamWork`` and calls
``run(args, stream)`` where a kernel launch would be, so the callable's work sits between the same
start/end events, behind the same stream hold, after the same flush, rotating over the sets
``make_args(n, i)`` built (one per buffer set; each must own its buffers). The host-side dispatch
(Python, the framework's op dispatch, Triton's launcher) runs while the stream is *held*, before
the GPU reaches the start event, so it is outside the timed window as long as the hold covers the
chunk (a hold that timed out is reported in the configuration's notes). What is inside the window
that a raw launch does not have: every kernel the callable enqueues and the GPU-side gaps between
them. A callable must not synchronize (``.item()``, ``.cpu()``): that waits for a held stream and
the hold times out.

``stream``: how the callable learns the stream: ``"arg"`` (default) calls ``fn(args, stream)``
with the raw handle (an int; ``None`` on the host); ``"torch"`` and ``"cupy"`` call ``fn(*args)``
inside ``torch.cuda.stream(ExternalStream(handle))`` / ``cupy.cuda.ExternalStream(handle)``.
On the host device there is no stream: the callable is just called, between two
``perf_counter_ns`` reads. Callables always run in the calling process (a function object
cannot be sent to a sweep worker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ConfigError
from ..kernels import catalog
from ..kernels.spec import KernelSpec

STREAM_MODES = ("arg", "torch", "cupy")


@dataclass(frozen=True)
class OutputCheck:
    """A callable's output check against a reference (``callable_kernel(..., check=OutputCheck(...))``):
    ``reference(args)`` returns the expected array, ``output(args)`` picks what the callable wrote
    (None: the last argument), compared element by element within ``rtol``/``atol`` after the
    first launch of each configuration (and on launches sampled across its timed run)."""

    reference: Callable[[Any], Any]
    output: Callable[[Any], Any] | None = None
    rtol: float = 1e-5
    atol: float = 1e-6


@dataclass(frozen=True)
class LaunchModel:
    """How a callable's sizes and rates are read (``callable_kernel(..., model=LaunchModel(...))``):
    ``element_dtype`` maps a size (bytes per array) to ``n`` as for kernels; ``flops_per_launch``, an
    int or an expression in n, gives its GFLOP/s (0: none)."""

    element_dtype: str = "float32"
    flops_per_launch: int | str = 0


def _handle(stream: Any) -> int | None:
    """The raw stream handle (``cuda.bindings`` ``CUstream`` and hip-python streams convert with
    ``int()``; ``getPtr()`` would be the address *of* the handle, not the handle)."""
    if stream is None:
        return None
    return int(stream)


class CallableWork:
    """``StreamWork``: what ``Device.launch`` runs for a callable kernel."""

    stream_work = True

    def __init__(self, fn: Callable[..., Any], stream: str) -> None:
        self.fn, self.stream = fn, stream
        self._contexts: dict[int, Any] = {}

    def _context(self, handle: int) -> Any:
        ctx = self._contexts.get(handle)
        if ctx is None:
            if self.stream == "torch":
                import torch

                ext = torch.cuda.ExternalStream(handle)
                ctx = self._contexts[handle] = ("torch", ext)
            else:
                import cupy

                ctx = self._contexts[handle] = ("cupy", cupy.cuda.ExternalStream(handle))
        return ctx

    def run(self, args: Any, stream: Any) -> None:
        values = args.values if isinstance(args, CallArgs) else args
        handle = _handle(stream)
        if self.stream == "arg":
            self.fn(values, handle)
            return
        seq = values if isinstance(values, (tuple, list)) else (values,)
        if handle is None:  # host device: nothing to enter
            self.fn(*seq)
            return
        kind, ext = self._context(handle)
        if kind == "torch":
            import torch

            with torch.cuda.stream(ext):
                self.fn(*seq)
        else:
            with ext:
                self.fn(*seq)

    def synchronize_framework(self) -> None:
        """After ``make_args``: the framework's own streams finish filling the sets (the harness's
        stream is non-blocking, so it would not wait for them)."""
        if self.stream == "torch":
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        elif self.stream == "cupy":
            import cupy

            cupy.cuda.Device().synchronize()


class CallArgs:
    """One rotating set of a callable: whatever ``make_args(n, i)`` returned."""

    def __init__(self, values: Any) -> None:
        self.values = values


class CallableSets:
    """``BufferSets`` for a callable: ``count`` sets from ``make_args(n, i)``."""

    def __init__(self, device: Any, spec: KernelSpec, n: int, count: int) -> None:
        self.device, self.spec, self.n, self.count = device, spec, n, count
        make = spec.call.make_args
        self.args = [CallArgs(make(n, i)) for i in range(count)]
        spec.call.work.synchronize_framework()
        device.synchronize()
        self.buffers: list[dict[str, Any]] = [{} for _ in range(count)]
        self.host: dict[str, np.ndarray] = {}
        self.scalars: dict[str, Any] = {}

    def free(self) -> None:
        self.args.clear()

    def __enter__(self) -> "CallableSets":
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


class _Call:
    """What ``KernelSpec.call`` holds: the work and its set maker (``spec.call.run`` is the
    ``StreamWork`` the device launches)."""

    stream_work = True

    def __init__(
        self,
        fn: Callable[..., Any],
        make_args: Callable[[int, int], Any],
        stream: str,
        reference: Callable[..., Any] | None,
    ) -> None:
        self.work = CallableWork(fn, stream)
        self.make_args = make_args
        self.fn = fn
        self.reference = reference
        self.output: Callable[[Any], Any] | None = None
        self.check: Callable[[Any], float] | None = None

    def run(self, args: Any, stream: Any) -> None:
        self.work.run(args, stream)


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu"):
        x = x.cpu()
    if hasattr(x, "get") and not isinstance(x, Mapping):
        x = x.get()
    return np.asarray(x)


def callable_kernel(
    fn: Callable[..., Any],
    make_args: Callable[[int, int], Any],
    *,
    bytes_per_launch: int | str | Callable[[int], int],
    name: str | None = None,
    stream: str = "arg",
    check: OutputCheck | Callable[[Any], float] | None = None,
    model: LaunchModel | None = None,
    register_it: bool = True,
) -> KernelSpec:
    """A sweepable kernel from a callable (see the module docstring).

    ``make_args(n, i)``: the arguments of buffer set ``i`` for ``n`` elements (sizes map to ``n``
    through ``model.element_dtype`` as for kernels; ``model``: a ``LaunchModel``, float32 and no
    flops by default). ``bytes_per_launch``: an int, an expression in n, or a function of n (the
    traffic, also the rotating-set size). The output check, ``check``: an ``OutputCheck`` (its
    ``reference(args)`` returns the expected array, its ``output(args)`` picks what the callable
    wrote, default the last argument; compared after the first launch of each configuration), or a
    check of its own, ``check(args)``, that returns the error (``BenchmarkError`` when it is wrong).
    """
    if not callable(fn) or not callable(make_args):
        raise ConfigError(f"callable_kernel needs a callable fn and make_args(n, i); got {fn!r}, {make_args!r}")
    if stream not in STREAM_MODES:
        raise ConfigError(f"stream must be one of {', '.join(STREAM_MODES)}; got {stream!r}")
    if check is not None and not isinstance(check, OutputCheck) and not callable(check):
        raise ConfigError(
            f"check must be an OutputCheck or a function of the arguments returning the error; got {check!r}"
        )
    if isinstance(check, OutputCheck) and not callable(check.reference):
        raise ConfigError(f"OutputCheck needs a callable reference(args); got {check.reference!r}")
    from ..kernels.catalog import _NExpr

    model = model if model is not None else LaunchModel()
    if callable(bytes_per_launch):
        bpl = bytes_per_launch
    else:
        bpl = _NExpr(bytes_per_launch, "bytes_per_launch")
        bpl(1)
    label = name or getattr(fn, "__name__", "callable")
    if not label.isidentifier():
        label = "callable"
    against = check if isinstance(check, OutputCheck) else None
    call = _Call(fn, make_args, stream, against.reference if against else None)
    spec = KernelSpec(
        name=label,
        entry=label,
        args=(),
        geometry=lambda n, dev: ((1, 1, 1), (1, 1, 1)),
        element_dtype=model.element_dtype,
        bytes_per_launch=bpl,
        flops_per_launch=_NExpr(model.flops_per_launch, "flops_per_launch"),
        description=f"Python callable {label}",
        call=call,
        check_rtol=(against or OutputCheck).rtol,
        check_atol=(against or OutputCheck).atol,
    )
    call.output, call.check = (against.output, None) if against else (None, check)
    if register_it:
        catalog.register(spec, replace=True)
    return spec


def check_callable(device: Any, spec: KernelSpec, sets: CallableSets, *, config: str, index: int = 0) -> float:
    """The output check of a callable: run it once on set ``index`` (0 before timing; the sampled
    check of ``bench.sampled`` takes others), compare ``output(args)`` with ``reference(args)``."""
    from .check import compare

    call = spec.call
    own = call.check
    if call.reference is None and own is None:
        return float("nan")
    device.launch(call, (1, 1, 1), (1, 1, 1), sets.args[index])
    device.synchronize()
    values = sets.args[index].values
    if own is not None:
        return float(own(values))
    seq = values if isinstance(values, (tuple, list)) else (values,)
    got = call.output(values) if call.output is not None else seq[-1]
    return compare(
        config, "output", _to_numpy(got), _to_numpy(call.reference(values)), rtol=spec.check_rtol, atol=spec.check_atol
    )


def sets_for(device: Any, spec: KernelSpec, n: int, count: int) -> Any:
    """Rotating sets of a kernel (``BufferSets``) or of a callable (``CallableSets``)."""
    if spec.call is not None:
        return CallableSets(device, spec, n, count)
    from .rotating import BufferSets

    return BufferSets(device, spec, n, count)


__all__ = [
    "CallableSets",
    "CallableWork",
    "LaunchModel",
    "OutputCheck",
    "callable_kernel",
    "check_callable",
    "sets_for",
]
