"""``tune-replay --cluster``: a tuning list's compiles spread over Dask workers sharing a cache tier.

Why: a tuning list that compiles for an hour on one host is what a cluster is for, and the compile
cache is only worth its name there if a kernel compiled on one worker is a hit on every other. The
workers share the disk tier (one host, or a directory every host mounts: checked before anything
is timed, by a marker file each worker must see). Hosts that share no directory share the Redis
tier instead (``remote=URL``, default ``HIPEXPLORE_CACHE_REMOTE``): then each worker's cache is memory
+ Redis (no disk tier, so every hit across tasks is a ``remote-hit``), and the report's ``cache``
is ``remote``.

The passes are ``bench.replay``'s, with the workers as the jobs: ``ideal`` (each unique kernel
compiled once, no cache, spread over the workers in tasks shaped like the cache passes': a
candidate's first-seen kernels a task), then ``disk-cold`` (or ``disk`` when the directory already
held entries) and ``disk-warm``, then the ideal again (its own salt): the faster ideal is the
report's, both are kept (``ReplayReport.ideal_passes``). Why: on the H200 machine one ideal pass
first, one task per kernel, took 94.3 s against the cold pass's 34.2 s -- the workers' first pass
after start-up and 532 tasks' scheduling, not compiling. Each task is one candidate (or one kernel, by
``granularity``) replayed by ``replay.replay_through_cache`` on a worker in a fresh cache object
over the shared directory, with the worker's own compiler (loaded and warmed once per worker
process before any pass is timed). A pass's ``seconds`` is its wall time, first submission to
last result. Every event row records the ``worker`` and ``host`` that made it.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..files import write_file
from .lists import TuningList
from .replay import (
    GRANULARITIES,
    _dir_has_entries,
    candidate_groups,
    check_target,
    make_compiler,
    measure_ideal,
    replay_through_cache,
    salted,
    warm_up,
)
from .results import ReplayReport, ScenarioResult

#: what a cluster replay adds to the replay frame's columns
WORKER_COLUMNS = ("worker", "host")
_COMPILERS: dict[str, Any] = {}


def _compiler(name: str) -> Any:
    """The worker process's own compiler for ``name`` (kept open for the process's life)."""
    if name not in _COMPILERS or _COMPILERS[name].closed:
        _COMPILERS[name] = make_compiler(name, 1)
    return _COMPILERS[name]


def _identity() -> dict[str, str]:
    from distributed import get_worker

    return {"worker": get_worker().address, "host": socket.gethostname()}


def warm_worker(compiler_name: str, target: str) -> str:
    """On a worker: load its compiler and compile throw-away kernels (no pass pays for that)."""
    comp = _compiler(compiler_name)
    check_target(comp, target)
    warm_up(comp, compiler_name, target, 1)
    return os.getpid().__str__()


def sees(path: str) -> bool:
    return os.path.exists(path)


def _part(whole: TuningList, positions: tuple[int, ...]) -> TuningList:
    """The entries of ``whole`` at ``positions``: a task carries indices into the pass's list,
    which reaches each worker once (scattered), not its requests: the kernels of the real-model
    lists carry a 75 KB header set each, pickled once per task otherwise (90 MB per pass of llama3-8b)."""
    return replace(whole, entries=tuple(whole.entries[i] for i in positions))


def ideal_task(whole: TuningList, positions: tuple[int, ...]) -> pd.DataFrame:
    part = _part(whole, positions)
    res = measure_ideal(part, _compiler(part.compiler), 1)
    return res.frame.assign(**_identity())


def cache_task(
    whole: TuningList,
    positions: tuple[int, ...],
    scenario: str,
    cache_dir: str,
    granularity: str,
    remote: str | None = None,
) -> pd.DataFrame:
    from ..compile.cache import CompileCache

    part = _part(whole, positions)
    cache = CompileCache(
        max_entries=4096, max_bytes=1024**3, disk_dir=Path(cache_dir) if not remote else False, remote=remote or False
    )
    res = replay_through_cache(part, _compiler(part.compiler), cache, scenario, 1, granularity)
    return res.frame.assign(**_identity())


def task_parts(tuning_list: TuningList, granularity: str) -> list[tuple[int, ...]]:
    """Positions of each task's entries: one candidate each (``candidate``), else one entry each."""
    pos = {id(e): i for i, e in enumerate(tuning_list.entries)}
    groups = candidate_groups(tuning_list) if granularity == "candidate" else [[e] for e in tuning_list.entries]
    return [tuple(pos[id(e)] for e in g) for g in groups]


def unique_task_parts(tuning_list: TuningList, granularity: str) -> list[tuple[int, ...]]:
    """The ideal's tasks: each unique kernel once, at its first place in the list, grouped as the
    cache passes group their tasks (one candidate's first-seen kernels a task, for ``candidate``),
    so the ideal pays the same number of task round trips as the passes it is set against."""
    seen: set[Any] = set()
    parts = []
    for part in task_parts(tuning_list, granularity):
        mine = []
        for i in part:
            req = tuning_list.entries[i].request
            if req not in seen:
                seen.add(req)
                mine.append(i)
        if mine:
            parts.append(tuple(mine))
    return parts


def _check_shared(client: Any, path: Path, url: str | None) -> None:
    """Every worker must see the cache directory ``path`` (made here if missing), unless the Redis
    tier ``url`` is shared: a marker file written here is looked for by each worker."""
    path.mkdir(parents=True, exist_ok=True)
    marker = path / f".hipexplore-shared-{uuid.uuid4().hex[:8]}"
    write_file(marker, "", what="shared-folder marker", durable=False)
    try:
        seen = client.run(sees, str(marker))
    finally:
        marker.unlink()
    blind = sorted(w for w, ok in seen.items() if not ok)
    if blind and url is None:
        raise ConfigError(
            f"cache directory {str(path)!r} is not shared with worker(s) {', '.join(blind)}: give every "
            f"worker the same directory (HIPEXPLORE_CACHE_DIR on a shared file system) or share the "
            f"Redis tier (HIPEXPLORE_CACHE_REMOTE=redis://HOST:6379/0)"
        )


def _cache_passes_list(
    tuning_list: TuningList, path: Path, given: bool, salt: bool, url: str | None, run_salt: str
) -> tuple[TuningList, str]:
    """The list the cache passes replay and the name of the first: a given directory is replayed as it is
    (``disk`` when it already holds entries); Redis is cold only when the list is salted (its keys are new)."""
    if url is not None:
        return (salted(tuning_list, f"{run_salt}_disk"), "disk-cold") if salt else (tuning_list, "disk")
    disk_list = tuning_list if given or not salt else salted(tuning_list, f"{run_salt}_disk")
    return disk_list, "disk" if _dir_has_entries(path) else "disk-cold"


def replay_on_cluster(
    tuning_list: TuningList,
    cluster: Any,
    *,
    cache_dir: str | os.PathLike | None = None,
    granularity: str = "candidate",
    salt: bool = True,
    timeout_s: float = 3600.0,
    remote: str | bool | None = None,
) -> ReplayReport:
    """The ideal, the cold and the warm disk pass of ``tuning_list`` over the workers of
    ``cluster`` (a Client, a cluster object, ``local:N`` or ``tcp://HOST:PORT``)."""
    from ..bench.cluster import connect

    if granularity not in GRANULARITIES:
        raise ConfigError(f"granularity must be one of {', '.join(GRANULARITIES)}; got {granularity!r}")
    from ..extras import require

    distributed = require("distributed", "a tuning replay on a cluster (Dask distributed)", "cluster")
    url = _remote_url(remote)
    conn = connect(cluster, pin=False)  # compiling needs no GPU: unpinned workers, any number
    client = conn.client
    tmp: tempfile.TemporaryDirectory | None = None
    try:
        workers = list(client.scheduler_info().get("workers", {}))
        if not workers:
            raise ConfigError(f"the cluster at {client.scheduler.address} has no workers")
        given = cache_dir is not None
        if cache_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="hipexplore-tune-cluster-")
            cache_dir = tmp.name
        path = Path(cache_dir)
        _check_shared(client, path, url)
        for _w, _pid in client.run(warm_worker, tuning_list.compiler, tuning_list.target).items():
            pass  # a target the compiler refuses fails here, as ConfigError from the worker
        passes = _Passes(client, distributed, f"{os.getpid()}_{time.time_ns()}", len(workers), timeout_s)
        return _cluster_passes(passes, tuning_list, path, given, salt, url, granularity)
    finally:
        if tmp is not None:
            tmp.cleanup()
        conn.close()


def _cluster_passes(
    passes: _Passes,
    tuning_list: TuningList,
    path: Path,
    given: bool,
    salt: bool,
    url: str | None,
    granularity: str,
) -> ReplayReport:
    """The ideal, the two cache passes on ``path`` (or Redis ``url``), the ideal again (salted runs
    only), and their report with the faster ideal as its ``ideal``."""
    scenarios: dict[str, ScenarioResult] = {}

    def ideal(tag: str) -> ScenarioResult:
        lst = salted(tuning_list, f"{passes.run_salt}_{tag}") if salt else tuning_list
        return passes.timed("ideal", ideal_task, lst, unique_task_parts(lst, granularity))

    ideal_passes = [ideal("ideal")]
    disk_list, first = _cache_passes_list(tuning_list, path, given, salt, url, passes.run_salt)
    for name in (first, "disk-warm"):
        scenarios[name] = passes.timed(
            name, cache_task, disk_list, task_parts(disk_list, granularity), name, str(path), granularity, url
        )
    if salt:  # unsalted, a second ideal would compile the same keys: no fresh compile to time
        ideal_passes.append(ideal("ideal1"))
    scenarios = {"ideal": min(ideal_passes, key=lambda res: res.seconds), **scenarios}
    return ReplayReport(
        tuning_list,
        passes.jobs,
        "remote" if url else "disk",
        False,
        first,
        scenarios,
        str(path) if given else "",
        granularity,
        salt,
        ideal_passes,
    )


def _remote_url(remote: str | bool | None) -> str | None:
    """The Redis tier the workers share (``None``/``True``: ``HIPEXPLORE_CACHE_REMOTE``; ``False``/empty:
    none), checked here so that a bad URL fails before any worker starts."""
    from .. import settings

    url = settings.CACHE_REMOTE.get() if remote in (None, True) else (remote or None)
    if url is not None:
        from ..compile.remote import remote_cache_from_env

        remote_cache_from_env(url)  # a bad URL fails here, before any worker starts
    return url


@dataclass(frozen=True)
class _Passes:
    """What every timed pass of one cluster replay shares: the client, the run's salt (task keys of
    one pass never collide with another's) and the number of workers (each row's ``jobs``)."""

    client: Any
    distributed: Any
    run_salt: str
    jobs: int
    timeout_s: float

    def timed(
        self, scenario: str, fn: Any, whole: TuningList, parts: list[tuple[int, ...]], *args: Any
    ) -> ScenarioResult:
        """One pass: ``fn(whole, part, *args)`` for each part over the workers, its wall time from the
        first submission to the last result (the list is broadcast before the clock starts)."""
        client, timeout_s = self.client, self.timeout_s
        shared = client.scatter(whole, broadcast=True, hash=False)  # before the clock: the list reaches every worker
        self.distributed.wait([shared], timeout=timeout_s)
        t0 = time.perf_counter()
        futs = [
            client.submit(fn, shared, p, *args, pure=False, key=f"hipexplore-replay-{scenario}-{self.run_salt}-{i}")
            for i, p in enumerate(parts)
        ]
        try:
            frames = client.gather(futs, errors="raise") if self.distributed.wait(futs, timeout=timeout_s) else []
        except TimeoutError as exc:
            client.cancel(futs)
            raise ConfigError(
                f"tune-replay --cluster: the {scenario} pass did not finish within {timeout_s:g} s"
            ) from exc
        seconds = time.perf_counter() - t0
        frame = pd.concat(frames, ignore_index=True)
        frame["jobs"] = self.jobs
        return ScenarioResult(scenario, self.jobs, seconds, frame)


__all__ = ["WORKER_COLUMNS", "replay_on_cluster", "task_parts", "unique_task_parts"]
