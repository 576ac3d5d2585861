"""``sweep(...)``: the convenient front of ``run(SweepSpec(...), device)``.

Why both: ``SweepSpec`` is the value other code passes around (to another process, into the
recorded metadata, into resume); ``sweep()`` keeps the keyword signature notebooks, the CLI and
the widgets call. It builds the spec, picks the device, gives the device the compile cache its
kernels build through, and runs. The loop is ``bench.run``, the files ``bench.io``.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from ..devices import get_device
from ..devices.base import Device
from ..kernels.spec import KernelSpec
from ..schema import COLD_REFERENCE, SAMPLE_COLUMNS, SUMMARY_COLUMNS
from . import rotating as rot
from .io import output_paths
from .run import SweepHooks, SweepResult, run, verify
from .spec import SweepSpec, parse_size, spec_from_arguments
from .stats import StopRule
from .timing import DEFAULT_CHUNK
from .worker import run_in_worker, use_worker


def sweep(
    kernels: str | KernelSpec | Iterable[str | KernelSpec] = "triad",
    sizes: int | str | Iterable[int | str] = (1 << 20,),
    rotating: int | str | Iterable[int | str] = (1,),
    flush: str | Iterable[str] = ("none",),
    *,
    device: str | Device = "auto",
    iterations: int | None = None,
    stop: StopRule | None = None,
    reference: bool = True,
    reference_samples: int = 48,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    progress: bool = True,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_samples: Callable[[pd.DataFrame], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    mem_fraction: float = rot.DEFAULT_MEM_FRACTION,
    chunk: int = DEFAULT_CHUNK,
    warmup_s: float = 0.02,
    verify_results: bool = True,
    flush_factor: dict[str, float] | None = None,
    flush_end_event: bool = False,
    run_id: str | None = None,
    command: str | Sequence[str] | None = None,
    cache: Any = None,
    timers: str | Iterable[str] = ("events",),
    reference_parts: int = 3,
    throttle_threshold: float = 0.75,
    drop_throttled: bool = True,
    clock_warmup_s: float | None = None,
    worker: bool | None = None,
    interleave: bool = False,
    interleave_seed: int = 0,
    passes: int = 1,
    floor: bool | None = None,
    chunk_lead: int | str = "random",
    chunk_trail: int = 1,
    cluster: Any = None,
) -> SweepResult:
    """Benchmark every (kernel, size, rotating, flush) combination (see ``bench.run`` for the
    frames, the files and resume; ``SweepSpec`` for the fields these arguments fill).

    ``iterations=N`` takes exactly N samples per configuration (N must be >= the buffer sets);
    otherwise ``stop`` (default ``StopRule()``, adaptive) decides. Sizes are bytes per array.

    ``worker``: run in a worker process (``bench.worker``: a faulting kernel is a ``KernelFault``
    naming kernel and configuration, finished configurations are kept, this process's device stays
    usable). Default (``None``): a worker for GPU devices, in-process for the host device
    (``HIPEXPLORE_SWEEP_WORKER`` changes the default); Python callables always run in-process.
    ``interleave=True`` measures the kernels of each configuration in alternating turns, in an
    order shuffled with ``interleave_seed`` (A/B in one run: drift cancels; ``bench.interleave``).
    ``passes=N`` makes the sweep N times through with fresh buffers at other addresses and merges
    them: intervals then cover what changes between runs (``bench.passes``).
    ``floor``: time the launch floor (an empty kernel) and add ``floor_s`` / ``net_median_s`` to
    the events rows (``bench.floor``; default None: on a GPU, not on the host).
    ``chunk_lead``: untimed launches at the head of each held chunk, an int or ``"random"`` (0 or 1
    per chunk, so every chunk position sees both launch parities; ``bench.timing``); ``chunk_trail``:
    untimed samples after each chunk's last timed one (default 1: it too has work queued behind it).

    ``cluster``: a ``distributed.Client``, a Dask cluster, ``'local:N'`` or ``'tcp://HOST:PORT'``:
    each (kernel, size) group runs whole on one pinned worker per GPU (``bench.cluster``); the
    frames gain ``worker``, ``host`` and ``gpu``; ``device`` is then the name each worker opens.
    """
    spec = spec_from_arguments(
        kernels, sizes, rotating, flush, iterations=iterations, stop=stop, reference=reference,
        reference_samples=reference_samples, mem_fraction=mem_fraction, chunk=chunk, warmup_s=warmup_s,
        verify_results=verify_results, flush_factor=flush_factor, flush_end_event=flush_end_event,
        timers=timers, reference_parts=reference_parts, throttle_threshold=throttle_threshold,
        drop_throttled=drop_throttled, clock_warmup_s=clock_warmup_s, interleave=interleave,
        interleave_seed=interleave_seed, passes=passes, floor=floor, chunk_lead=chunk_lead,
        chunk_trail=chunk_trail,
    )
    hooks = SweepHooks(on_result=on_result, on_samples=on_samples, should_stop=should_stop)
    if cluster is not None:
        from .cluster import run_cluster

        return run_cluster(spec, cluster, device=device, out=out, resume=resume, hooks=hooks,  # type: ignore[arg-type]
                           run_id=run_id, command=command)
    dev = get_device(device, cache=cache) if isinstance(device, str) else device
    if cache is not None and dev.cache is None:
        dev.cache = cache
    has_callable = any(k.call is not None for k in spec.specs())
    if use_worker(dev, worker) and not (has_callable and worker is None):
        if spec.passes > 1 and dev.kind != "host":
            # every pass runs in a worker of its own (bench.passes); orchestrating them from another
            # worker would keep one more idle CUDA context alive through every pass than a one-pass
            # sweep has, and on the H200 that alone read L2-resident triads 1.6-4% slower
            return run(spec, dev, out=out, resume=resume, hooks=hooks, progress=progress, run_id=run_id, command=command)
        return run_in_worker(spec, dev, out=out, resume=resume, hooks=hooks, run_id=run_id, command=command)
    return run(spec, dev, out=out, resume=resume, hooks=hooks, progress=progress, run_id=run_id, command=command)


__all__ = ["COLD_REFERENCE", "SAMPLE_COLUMNS", "SUMMARY_COLUMNS", "SweepHooks", "SweepResult", "SweepSpec", "output_paths",
           "parse_size", "run", "sweep", "verify"]
