"""``sweep(...)``: the convenient front of ``run(SweepSpec(...), device)``.

Why both: ``SweepSpec`` is the value other code passes around (to another process, into the
recorded metadata, into resume); ``sweep()`` keeps the keyword signature notebooks, the CLI and
the widgets call. Its options are the spec's fields (``bench.spec.options()``), under the same
names and with the same defaults (its signature is built from them, so ``help(sweep)`` shows
them); what is not a spec field is about where and how this call runs: the device, the out file,
the hooks, the worker, the cluster (``RunOptions``' fields, ``SweepHooks``', and ``RUN_HERE``; its
signature lists them too). It builds the spec, picks the device, gives the device the
compile cache its kernels build through, and runs. The parent is ``bench.run``, the files ``bench.io``.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Iterable

from ..devices import get_device
from ..devices.base import Device
from ..errors import ConfigError
from ..kernels.spec import KernelSpec
from ..schema import COLD_REFERENCE, SAMPLE_COLUMNS, SUMMARY_COLUMNS
from .io import output_paths
from .result import RunOptions
from .run import SweepHooks, SweepResult, run, verify
from .spec import RENAMED, SweepSpec, options, spec_from_arguments
from .spec_checks import parse_size
from .spec import options as options_of_spec  # sweep() takes **options by that name
from .stats import StopRule


#: ``sweep()``'s keywords about this call beside ``RunOptions``' and the hooks': the compile cache the
#: device's kernels build through, a worker process or not (``bench.executors.run_location``), a Dask cluster
RUN_HERE = {"cache": ("Any", None), "worker": ("bool | None", None), "cluster": ("Any", None)}
#: ``SweepHooks``' fields ``sweep()`` takes as keywords
HOOKS = ("on_result", "on_samples", "should_stop", "on_progress")


def sweep(
    kernels: str | KernelSpec | Iterable[str | KernelSpec] = "triad",
    sizes: int | str | Iterable[int | str] = (1 << 20,),
    rotating: int | str | Iterable[int | str] = (1,),
    flush: str | Iterable[str] = ("none",),
    *,
    device: str | Device = "auto",
    iterations: int | None = None,
    stop: StopRule | None = None,
    **options: Any,
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
    run_names = {*HOOKS, *RUN_HERE, *(f.name for f in dataclasses.fields(RunOptions) if f.name != "hooks")}
    known = run_names | {f.name for f in options_of_spec()}
    unknown = sorted(set(options) - known - set(RENAMED))
    if unknown:  # named here, beside this call's own keywords (the spec's check knows only its fields)
        raise ConfigError(f"unknown sweep option(s) {', '.join(unknown)}; expected one of {', '.join(sorted(known))}")
    hooks = SweepHooks(**{name: options.pop(name) for name in HOOKS if name in options})
    how = RunOptions(
        **{
            f.name: options.pop(f.name)
            for f in dataclasses.fields(RunOptions)
            if f.name in options and f.name != "hooks"
        },
        hooks=hooks,
    )
    cache, worker, cluster = (options.pop(name, None) for name in RUN_HERE)
    spec = spec_from_arguments(kernels, sizes, rotating, flush, iterations=iterations, stop=stop, **options)
    if cluster is not None:
        from .cluster import ClusterOptions, run_cluster

        return run_cluster(spec, cluster, ClusterOptions(device=device), how)  # type: ignore[arg-type]
    dev = get_device(device, cache=cache) if isinstance(device, str) else device
    if cache is not None and dev.cache is None:
        dev.cache = cache
    return run(spec, dev, how, worker=worker)


def _signature() -> inspect.Signature:
    """``sweep``'s signature with every keyword of its own, default included: ``RunOptions``' fields,
    the hooks, ``RUN_HERE`` and every spec option."""
    sig = inspect.signature(sweep)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    keyword = inspect.Parameter.KEYWORD_ONLY
    params += [
        inspect.Parameter(f.name, keyword, default=f.default, annotation=f.type)
        for f in dataclasses.fields(RunOptions)
        if f.name != "hooks"
    ]
    params += [
        inspect.Parameter(f.name, keyword, default=None, annotation=f.type)
        for f in dataclasses.fields(SweepHooks)
        if f.name in HOOKS
    ]
    params += [
        inspect.Parameter(name, keyword, default=default, annotation=kind) for name, (kind, default) in RUN_HERE.items()
    ]
    for f in options():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
    return sig.replace(parameters=params)


sweep.__signature__ = _signature()  # type: ignore[attr-defined]

__all__ = [
    "COLD_REFERENCE",
    "SAMPLE_COLUMNS",
    "SUMMARY_COLUMNS",
    "SweepHooks",
    "SweepResult",
    "SweepSpec",
    "output_paths",
    "parse_size",
    "run",
    "sweep",
    "verify",
]
