"""``sweep(...)``: the convenient front of ``run(SweepSpec(...), device)``.

Why both: ``SweepSpec`` is the value other code passes around (to another process, into the
recorded metadata, into resume); ``sweep()`` keeps the keyword signature notebooks, the CLI and
the widgets call. Its options are the spec's fields (``bench.spec.options()``), under the same
names and with the same defaults (its signature is built from them, so ``help(sweep)`` shows
them); what is not a spec field is about where and how this call runs: the device, the out file,
the hooks, the worker, the cluster. It builds the spec, picks the device, gives the device the
compile cache its kernels build through, and runs. The parent is ``bench.run``, the files ``bench.io``.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from ..devices import get_device
from ..devices.base import Device
from ..kernels.spec import KernelSpec
from ..schema import COLD_REFERENCE, SAMPLE_COLUMNS, SUMMARY_COLUMNS
from .io import output_paths
from .result import SweepProgress
from .run import SweepHooks, SweepResult, run, verify
from .spec import SweepSpec, options, parse_size, spec_from_arguments
from .stats import StopRule


def sweep(
    kernels: str | KernelSpec | Iterable[str | KernelSpec] = "triad",
    sizes: int | str | Iterable[int | str] = (1 << 20,),
    rotating: int | str | Iterable[int | str] = (1,),
    flush: str | Iterable[str] = ("none",),
    *,
    device: str | Device = "auto",
    iterations: int | None = None,
    stop: StopRule | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    resume_from_others: bool = False,
    progress: bool = True,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_samples: Callable[[pd.DataFrame], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[SweepProgress], None] | None = None,
    run_id: str | None = None,
    command: str | Sequence[str] | None = None,
    cache: Any = None,
    worker: bool | None = None,
    cluster: Any = None,
    **fields: Any,
) -> SweepResult:
    """Benchmark every (kernel, size, rotating, flush) combination (see ``bench.run`` for the
    frames, the files and resume; ``SweepSpec`` for the options, which are its fields by name).

    ``iterations=N`` takes exactly N samples per configuration (N must be >= the buffer sets);
    otherwise ``stop`` (default ``StopRule()``, adaptive) decides. Sizes are bytes per array.

    ``worker``: run in a worker process (``bench.worker``: a faulting kernel is a ``KernelFault``
    naming kernel and configuration, finished configurations are kept, this process's device stays
    usable). Default (``None``): a worker for GPU devices, in-process for the host device
    (``HIPEXPLORE_SWEEP_WORKER`` changes the default); Python callables always run in-process
    (``bench.executors.run_location`` decides). ``on_progress(SweepProgress)``: after every finished
    (configuration, unit), with the time left.

    ``counters=True`` (or ``"ncu"``, ``"rocprofv3"``): after the timed units, the counter pass
    (``bench.counters``) adds DRAM bytes, L2 hit rate, cold fraction and a cache state per
    configuration to the summary; where the device cannot count, a ``CountersSkipped`` warning says
    why in one line and the sweep is the same as without.

    ``resume_from_others``: resume from an ``out`` file another user owns (a team folder); without
    it such a file is refused in one line (``bench.io.check_owner``), never taken silently.

    ``cluster``: a ``distributed.Client``, a Dask cluster, ``'local:N'`` or ``'tcp://HOST:PORT'``:
    each (kernel, size) group runs whole on one pinned worker per GPU (``bench.cluster``); the
    frames gain ``worker``, ``host`` and ``gpu``; ``device`` is then the name each worker opens.
    """
    spec = spec_from_arguments(kernels, sizes, rotating, flush, iterations=iterations, stop=stop, **fields)
    hooks = SweepHooks(on_result=on_result, on_samples=on_samples, should_stop=should_stop, on_progress=on_progress)
    if cluster is not None:
        from .cluster import run_cluster

        return run_cluster(spec, cluster, device=device, out=out, resume=resume, hooks=hooks, progress=progress,  # type: ignore[arg-type]
                           run_id=run_id, command=command, resume_from_others=resume_from_others)
    dev = get_device(device, cache=cache) if isinstance(device, str) else device
    if cache is not None and dev.cache is None:
        dev.cache = cache
    return run(spec, dev, out=out, resume=resume, hooks=hooks, progress=progress, run_id=run_id, command=command,
               worker=worker, resume_from_others=resume_from_others)


def _signature() -> inspect.Signature:
    """``sweep``'s signature with every spec option as a keyword of its own, default included."""
    sig = inspect.signature(sweep)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for f in options():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
    return sig.replace(parameters=params)


sweep.__signature__ = _signature()  # type: ignore[attr-defined]

__all__ = ["COLD_REFERENCE", "SAMPLE_COLUMNS", "SUMMARY_COLUMNS", "SweepHooks", "SweepResult", "SweepSpec", "output_paths",
           "parse_size", "run", "sweep", "verify"]
