"""Sweeps on a Dask cluster, one worker process per GPU: connecting, pinning, and the front.

Why Dask and why this shape: a sweep over kernels x sizes x rotating counts x flush modes takes
minutes per device; notebooks already speak Dask (``LocalCluster``, a scheduler address, its
dashboard), so no scheduler is written here. A cluster run is an ordinary sweep
(``bench.orchestrator``: resume, units, files, progress) whose units run on the workers
(``bench.dask_executor.DaskExecutor``): the unit of work is one unit of one (kernel, size) group.

Pinning: ``local:N`` starts N worker processes, each with ``CUDA_VISIBLE_DEVICES`` /
``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES`` set to its own ordinal before the process
starts, plus the ``PinDevices`` worker plugin (which also pins workers of an external cluster by
their names, when they were not started pinned). Every worker advertises the resource ``GPU=1``
and every unit asks for it, so two units never time on one GPU at once.

Results stream back as units finish: the frames gain ``worker``, ``host`` and ``gpu`` (the
visible-device ordinal the worker was pinned to) and ``--out`` is rewritten after each
(configuration, unit). Resume is a one-device run's: what the out file holds is not measured again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd

from ..errors import BenchmarkError, ConfigError
from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS

# the connection functions (local:N over TLS, addresses, device pinning) live in dask_connect.py, by name here too
from .dask_connect import (  # noqa: F401
    VISIBLE_DEVICE_VARS,
    Connection,
    PinDevices,
    _distributed,
    connect,
    local_cluster,
    parse_cluster,
)
from .dask_executor import DaskExecutor, expected_keys, gpu_workers, groups_of  # noqa: F401
from .result import RunOptions, SweepResult
from .spec import SweepSpec


# ----------------------------------------------------------------------------- the front
@dataclass(frozen=True)
class ClusterOptions:
    """Where a cluster sweep's units run (``bench.dask_executor.DaskExecutor``): the device each worker
    opens (a name) and its options, how many times a unit lost with its worker is submitted again,
    how long a unit may run without a result (``stall_s``) and the cluster stay without GPU workers."""

    device: str = "auto"
    device_options: dict[str, Any] | None = None
    retries: int = 2
    stall_s: float = 1800.0
    no_workers_s: float = 60.0


def run_cluster(
    spec: SweepSpec, cluster: Any, options: ClusterOptions | None = None, run: RunOptions | None = None
) -> SweepResult:
    """Measure ``spec`` on the workers of ``cluster`` (module docstring; ``bench.dask_executor``):
    ``options`` where and how its units run, ``run`` the out file, resume, hooks, bar, run id and
    command (default: none of them, and no bar)."""
    from .orchestrator import Orchestrator

    if not isinstance(spec, SweepSpec):
        raise ConfigError(f"run_cluster() takes a SweepSpec; got {type(spec).__name__}")
    o = options or ClusterOptions()
    executor = DaskExecutor(
        cluster,
        o.device,
        o.device_options,
        connect=connect,
        retries=o.retries,
        stall_s=o.stall_s,
        no_workers_s=o.no_workers_s,
    )
    _check_local_gpus(cluster, o.device)
    return Orchestrator(spec, executor, run or RunOptions(progress=False)).run()


def _check_local_gpus(cluster: Any, device: str) -> None:
    """``local:N`` pins worker i to GPU i: more workers than this machine's GPUs would start workers on
    no GPU (on an NVIDIA machine the Nanny then fails in distributed's NVML query). Say so in one line."""
    if not isinstance(cluster, str) or device not in ("cuda", "hip"):
        return
    kind, n = parse_cluster(cluster)
    if kind != "local":
        return
    from ..errors import DeviceUnavailable

    try:
        if device == "cuda":
            from ..devices.cuda import device_count
        else:
            from ..devices.hip import device_count
        have = device_count()
    except DeviceUnavailable:
        return  # the workers report the missing device themselves, each in one line
    if n > have:
        raise ConfigError(
            f"cluster {cluster!r} starts one worker per GPU and this machine has {have} {device} GPU(s): "
            f"use local:{max(have, 1)}, or a scheduler address whose workers have GPUs of their own"
        )


def run_on_every_worker(
    spec: SweepSpec, cluster: Any, *, device: str = "auto", run_id: str | None = None, timeout_s: float = 1800.0
) -> pd.DataFrame:
    """The whole ``spec`` once on every GPU worker (are the GPUs alike?): their summaries, with
    ``worker``, ``host`` and ``gpu``; ``grouping.per_gpu`` compares them. A lost worker's sweep is
    not re-run here (there is no "elsewhere" for a per-GPU measurement): the error names it."""
    from .dask_executor import TASK_PREFIX, unit_result
    from .dask_worker import unit_task
    from .units import UnitRun
    from .units import UnitJob

    distributed = _distributed()
    run_id = run_id or uuid.uuid4().hex[:12]
    conn = connect(cluster)
    try:
        workers = gpu_workers(conn.client)
        run = UnitRun(UnitJob(spec, 0, frozenset()), run_id)
        futs = [
            conn.client.submit(
                unit_task,
                run,
                device,
                {},
                f"{run_id}-every-{i}",
                workers=[w],
                allow_other_workers=False,
                resources={"GPU": 1},
                pure=False,
                key=f"{TASK_PREFIX}-{run_id}-every-{i}",
            )
            for i, w in enumerate(workers)
        ]
        try:
            results = conn.client.gather(futs, errors="raise") if distributed.wait(futs, timeout=timeout_s) else []
        except TimeoutError as exc:
            raise BenchmarkError(f"run_on_every_worker: no result from every worker within {timeout_s:g} s") from exc
    finally:
        conn.close()
    from .io import results_frames

    got = [result for r in results for result in unit_result(r, run).results]
    return results_frames(got, ([*SAMPLE_COLUMNS, *CLUSTER_COLUMNS], [*SUMMARY_COLUMNS, *CLUSTER_COLUMNS]))[1]


def worker_progress(summary: pd.DataFrame) -> dict[str, int]:
    """Configurations finished per worker (what the sweep panel shows)."""
    if "worker" not in summary.columns:
        return {}
    return {str(w): int(n) for w, n in summary.groupby("worker").size().items()}


def panel_html(client: Any, per_worker: dict[str, int]) -> str:
    """The sweep panel's cluster line: the dashboard link and configurations finished per worker."""
    import html

    link = str(getattr(client, "dashboard_link", "") or "")
    try:
        workers = sorted(client.scheduler_info().get("workers", {}))
    except Exception:  # noqa: BLE001 - the scheduler went away: show what is known
        workers = sorted(per_worker)
    parts = [f"{html.escape(w)}: {per_worker.get(w, 0)}" for w in workers]
    parts += [f"{html.escape(w)} (gone): {n}" for w, n in sorted(per_worker.items()) if w not in workers]
    dash = f'<a href="{html.escape(link)}" target="_blank">dashboard</a>' if link else "no dashboard"
    return (
        f"<div>cluster {html.escape(str(client.scheduler.address))} · {dash} · configurations per worker: "
        f"{', '.join(parts) or 'no workers'}</div>"
    )


def iter_groups(spec: SweepSpec) -> Iterator[tuple[str, int]]:
    for sub in groups_of(spec):
        yield sub.specs()[0].name, sub.sizes[0]


__all__ = [
    "CLUSTER_COLUMNS",
    "ClusterOptions",
    "Connection",
    "PinDevices",
    "connect",
    "expected_keys",
    "gpu_workers",
    "groups_of",
    "local_cluster",
    "parse_cluster",
    "run_cluster",
    "run_on_every_worker",
    "worker_progress",
]
