"""A sweep spread over Dask workers, one worker process per GPU.

Why Dask and why this shape: a sweep over kernels x sizes x rotating counts x flush modes takes
minutes per device; notebooks already speak Dask (``LocalCluster``, a scheduler address, its
dashboard), so no scheduler is written here. The unit of work is one (kernel, size) *group*: the
cold reference of a (kernel, size) is taken in parts through its configurations and every bias in
the group is measured against it, so a group runs whole on one worker (configurations are never
split across devices, and a bias never compares two GPUs). Each group is a sub-``SweepSpec``
(``kernels=(k,)``, ``sizes=(s,)``) measured on the worker as one unit (``bench.sweeprun.SweepRun``).

Pinning: ``local:N`` starts N worker processes, each with ``CUDA_VISIBLE_DEVICES`` /
``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES`` set to its own ordinal before the process
starts, plus the ``PinDevices`` worker plugin (which also pins workers of an external cluster by
their names, when they were not started pinned). Every worker advertises the resource ``GPU=1``
and every group asks for it, so two groups never time on one GPU at once.

Results stream back as groups finish: the frames gain ``worker``, ``host`` and ``gpu`` (the
visible-device ordinal the worker was pinned to) and ``--out`` is rewritten after each group.
Resume: groups whose configurations are all in the out file are not submitted; a partially
finished group (an interrupted single-device run) is measured again whole and only its missing
configurations are added, so no finished row is lost.

Failures: a worker that dies mid-group loses only that group. Dask reschedules it (the scheduler's
``allowed-failures``); a ``KilledWorker`` is caught here and the group resubmitted; a retry is
charged only to a group that had started on a worker (groups waiting in a dying worker's queue
never ran), at most ``retries`` of them. Every re-run is reported (``SweepResult.metadata['cluster.reruns']`` and the
rows' ``warning``); groups that never finished are listed in ``cluster.failed``. The run never
hangs: no result for ``stall_s`` seconds, or no worker for ``no_workers_s``, ends it with what
finished written.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import pandas as pd

from ..errors import BenchmarkError, ConfigError
from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration, configurations_of
from .io import check_resume, output_paths, previous_results
from .recorder import Recorder
from .result import SweepHooks, SweepResult
from .spec import SweepSpec

VISIBLE_DEVICE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
TASK_PREFIX = "hipexplore-sweep"
EVENT_TOPIC = "hipexplore.sweep"

try:  # the extra ``cluster``; without it every entry point says how to install it (``_distributed``)
    from distributed import WorkerPlugin as _PluginBase
except ImportError:  # pragma: no cover
    _PluginBase = object  # type: ignore[misc,assignment]


def _distributed() -> Any:
    from ..extras import require

    return require("distributed", "a run on a cluster (Dask distributed)", "cluster")


# ----------------------------------------------------------------------------- workers
class PinDevices(_PluginBase):  # type: ignore[misc,valid-type]
    """Worker plugin: pin a worker to one GPU through the visible-device variables.

    ``devices``: the ordinals to hand out; a worker named with an integer ``i`` (as ``local:N``
    and ``dask worker --name i`` name them) gets ``devices[i % len(devices)]``. A worker started
    with the variables already set keeps them. Pinning must happen before a GPU library loads in
    the worker process, which is why ``local:N`` also sets them in the process's environment."""

    idempotent = True
    name = "hipexplore-pin-devices"

    def __init__(self, devices: Sequence[int | str] | None = None) -> None:
        self.devices = [str(d) for d in devices] if devices else None

    def setup(self, worker: Any) -> None:
        if any(os.environ.get(v) for v in VISIBLE_DEVICE_VARS):
            return
        try:
            i = int(worker.name)
        except (TypeError, ValueError):
            return  # not named by an ordinal: started pinned or not at all (recorded as gpu '')
        value = self.devices[i % len(self.devices)] if self.devices else str(i)
        for var in VISIBLE_DEVICE_VARS:
            os.environ[var] = value


def _pinned() -> str:
    for var in VISIBLE_DEVICE_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return ""


def local_cluster(n: int, pin: bool = True) -> Any:
    """N worker processes (1 thread each) and a scheduler on 127.0.0.1.

    ``pin=True`` (sweeps): worker i sees GPU i alone and advertises ``GPU=1``. ``pin=False`` (compile-only
    work such as the tuning replay): no visible-device variables, no GPU resource, no NVML diagnostics,
    so any number of workers starts on a machine with fewer GPUs (or none): pinning worker 1 on a
    one-GPU machine made distributed's NVML start-up query fail ("Nanny failed to start")."""
    distributed = _distributed()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"local cluster size must be a positive integer, got {n!r}")
    import dask

    config = {"distributed.scheduler.allowed-failures": 0, "distributed.worker.daemon": False}
    if not pin:
        config["distributed.diagnostics.nvml"] = False
    with dask.config.set(config):
        workers = {i: {"cls": distributed.Nanny,
                       "options": {"nthreads": 1, "resources": {"GPU": 1} if pin else {}, "host": "127.0.0.1",
                                   "name": i, "env": {v: str(i) for v in VISIBLE_DEVICE_VARS} if pin else {},
                                   "silence_logs": 40}}
                   for i in range(n)}
        scheduler = {"cls": distributed.Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}
        return distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40)


def parse_cluster(text: str) -> tuple[str, Any]:
    """'local:N' -> ('local', N); 'tcp://HOST:PORT' -> ('address', text); else a ConfigError."""
    t = str(text).strip()
    if t.startswith("local:"):
        try:
            n = int(t[len("local:"):])
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"cluster {text!r}: expected local:N with N a positive integer (workers, one per GPU)")
        return "local", n
    if t.startswith(("tcp://", "tls://", "inproc://", "ucx://")) and ":" in t.split("://", 1)[1]:
        return "address", t
    raise ConfigError(f"cluster {text!r} is neither local:N nor a scheduler address like tcp://HOST:PORT")


@dataclass
class Connection:
    """A Dask client and whatever this module started for it (closed by ``close``)."""

    client: Any
    owned: list[Any]

    def close(self) -> None:
        for obj in reversed(self.owned):
            try:
                obj.close()
            except Exception:  # noqa: BLE001 - closing what we started, best effort
                pass


def connect(cluster: Any, timeout_s: float = 30.0, pin: bool = True) -> Connection:
    """A client for ``cluster``: a ``distributed.Client`` (used as is), a cluster object,
    ``'local:N'`` or a scheduler address; with ``pin`` the ``PinDevices`` plugin is registered on it
    (``pin=False``: compile-only work, ``local:N`` starts unpinned workers, see ``local_cluster``)."""
    distributed = _distributed()
    owned: list[Any] = []
    if isinstance(cluster, distributed.Client):
        client = cluster
    elif isinstance(cluster, str):
        kind, value = parse_cluster(cluster)
        if kind == "local":
            lc = local_cluster(value, pin=pin)
            owned.append(lc)
            client = distributed.Client(lc, timeout=timeout_s)
        else:
            try:
                client = distributed.Client(value, timeout=timeout_s)
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"cluster {value!r}: no Dask scheduler answered within {timeout_s:g} s ({exc})") from exc
        owned.append(client)
    elif hasattr(cluster, "scheduler_address"):
        client = distributed.Client(cluster, timeout=timeout_s)
        owned.append(client)
    else:
        raise ConfigError(f"cluster must be a distributed.Client, a Dask cluster, 'local:N' or 'tcp://HOST:PORT'; "
                          f"got {type(cluster).__name__} {cluster!r}")
    if pin:
        client.register_plugin(PinDevices())
    return Connection(client, owned)


def gpu_workers(client: Any) -> list[str]:
    """Addresses of the workers advertising ``GPU`` >= 1; a ConfigError when there are none."""
    workers = client.scheduler_info().get("workers", {})
    ok = [a for a, w in workers.items() if float((w.get("resources") or {}).get("GPU", 0)) >= 1]
    if not ok:
        raise ConfigError(f"the cluster at {client.scheduler.address} has {len(workers)} worker(s) and none advertises the "
                          f"resource GPU=1; start one worker per GPU: CUDA_VISIBLE_DEVICES=i dask worker ADDRESS "
                          f"--nthreads 1 --resources GPU=1")
    return ok


# ----------------------------------------------------------------------------- the task
_DEVICES: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}


def measure_group(spec: SweepSpec, device: str, device_options: dict[str, Any], run_id: str, group: str,
                  attempt: int = 1) -> dict[str, Any]:
    """On a worker: measure one (kernel, size) sub-spec as one unit; the frames gain worker, host and
    gpu. The ``started`` event it logs first is what lets the coordinator charge a retry only to a
    group that actually ran (``attempt``: which submission of the group this is)."""
    from .recorder import Recorder
    from .sweeprun import SweepRun

    distributed = _distributed()
    worker = distributed.get_worker()
    worker.log_event(EVENT_TOPIC, {"group": group, "attempt": int(attempt), "worker": worker.address, "state": "started",
                                   "pid": os.getpid()})
    from ..provenance import collect

    device_name(device, device_options)  # one device object per worker process: its context and cache stay warm
    dev = _DEVICES[(device, tuple(sorted(device_options.items())))]
    unit = Recorder(collect(dev, None), write=False)
    SweepRun(spec, dev, unit, run_id=run_id).measure()
    res = unit.result()
    ident = {"worker": worker.address, "host": socket.gethostname(), "gpu": _pinned()}
    meta = {k: v for k, v in res.metadata.items() if k.startswith(("device.", "verify.", "warmup.", "flush.", "telemetry."))}
    return {"samples": res.samples.assign(**ident), "summary": res.summary.assign(**ident), "metadata": meta, **ident}


# ----------------------------------------------------------------------------- the coordinator
def groups_of(spec: SweepSpec) -> list[SweepSpec]:
    """One sub-spec per (kernel, size), in the spec's order; per size (every kernel together) when
    the spec interleaves its kernels (their alternating turns must stay on one device)."""
    if getattr(spec, "interleave", False):
        return [replace(spec, sizes=(s,)) for s in spec.sizes]
    return [replace(spec, kernels=(k,), sizes=(s,)) for k in spec.kernels for s in spec.sizes]


def expected_keys(sub: SweepSpec) -> set[Configuration]:
    """Every configuration a sub-spec's run produces (``SweepSpec.configurations()``)."""
    return set(sub.configurations())


def _started(client: Any) -> dict[str, set[int]]:
    """group -> the attempts of it that started on a worker, from the workers' logged events."""
    out: dict[str, set[int]] = {}
    try:
        events = client.get_events(EVENT_TOPIC)
    except Exception:  # noqa: BLE001 - the scheduler went away: no knowledge, no report
        return out
    for _t, msg in events:
        if isinstance(msg, dict) and msg.get("state") == "started":
            out.setdefault(str(msg["group"]), set()).add(int(msg.get("attempt", 1)))
    return out


def _starts(client: Any) -> dict[str, list[str]]:
    """group -> workers that started it (any attempt), in the order they did."""
    out: dict[str, list[str]] = {}
    try:
        events = client.get_events(EVENT_TOPIC)
    except Exception:  # noqa: BLE001
        return out
    for _t, msg in events:
        if isinstance(msg, dict) and msg.get("state") == "started":
            out.setdefault(str(msg["group"]), []).append(str(msg["worker"]))
    return out


def run_cluster(
    spec: SweepSpec,
    cluster: Any,
    *,
    device: str = "auto",
    device_options: dict[str, Any] | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    hooks: SweepHooks | None = None,
    run_id: str | None = None,
    command: str | Sequence[str] | None = None,
    retries: int = 2,
    stall_s: float = 1800.0,
    no_workers_s: float = 60.0,
    progress: bool = False,
) -> SweepResult:
    """Measure ``spec`` on the workers of ``cluster`` (see the module docstring)."""
    _check_arguments(spec, device, retries)
    from ..provenance import collect

    paths = output_paths(out) if out is not None else None
    previous = previous_results(paths, resume)
    if paths is not None and previous.metadata:
        check_resume(str(paths[0]), previous, spec.measurement())
    run_id = run_id or previous.run_id or uuid.uuid4().hex[:12]
    metadata = collect(None, command)
    metadata.update({**spec.record(), "run_id": run_id, "cluster.device": device,
                     "timing.method": "per-configuration on one pinned worker per GPU (bench.cluster); see each device's method"})
    rec = Recorder(metadata, previous=previous.with_cluster_columns(), paths=paths, hooks=hooks,
                   columns=([*SAMPLE_COLUMNS, *CLUSTER_COLUMNS], [*SUMMARY_COLUMNS, *CLUSTER_COLUMNS]))
    todo = [(i, g) for i, g in enumerate(groups_of(spec)) if not expected_keys(g) <= previous.done]
    _check_local_gpus(cluster, device)
    conn = connect(cluster)
    try:
        gpu_workers(conn.client)
        metadata["cluster.scheduler"] = str(conn.client.scheduler.address)
        metadata["cluster.dashboard"] = str(conn.client.dashboard_link or "")
        if previous.done:  # finished rows are kept only when the workers measure the same device kind
            _check_devices(conn.client, str(paths[0]), rec.rows, device, dict(device_options or {}))  # type: ignore[index]
        coordinator = _Coordinator(conn.client, rec, set(previous.done), device, dict(device_options or {}), run_id,
                                   retries=retries, stall_s=stall_s, no_workers_s=no_workers_s)
        stopped = coordinator.run(todo)
        metadata["cluster.reruns"] = json.dumps(coordinator.reruns)
        metadata["cluster.failed"] = json.dumps(coordinator.failed)
        metadata["cluster.workers"] = ",".join(sorted({str(r["worker"]) for r in rec.rows if r.get("worker")}))
        rec.write()
    finally:
        conn.close()
    result = rec.result(stopped)
    if coordinator.failed and not stopped:
        result.metadata["cluster.incomplete"] = f"{len(coordinator.failed)} group(s) did not finish: " + \
            "; ".join(f"{f['group']} ({f['error']})" for f in coordinator.failed)
    return result


def _check_arguments(spec: SweepSpec, device: Any, retries: Any) -> None:
    if not isinstance(spec, SweepSpec):
        raise ConfigError(f"run_cluster() takes a SweepSpec; got {type(spec).__name__}")
    if not isinstance(device, str):
        raise ConfigError(f"with a cluster, device must be a name each worker opens (auto, host, cuda, hip); "
                          f"got a {type(device).__name__} object")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
    for kspec in spec.specs():
        if kspec.name not in _catalog_names():
            raise ConfigError(f"kernel {kspec.name!r} is not in the catalog; a cluster run sends kernels by name "
                              f"(register it on the workers, or run it on one device)")


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
        raise ConfigError(f"cluster {cluster!r} starts one worker per GPU and this machine has {have} {device} GPU(s): "
                          f"use local:{max(have, 1)}, or a scheduler address whose workers have GPUs of their own")


#: resubmissions of a group lost before it started (not charged a retry) allowed on top of the retries:
#: a bound, in case a worker dies before its "started" event reaches the scheduler every time
MAX_UNCHARGED = 16


class _Coordinator:
    """Submits the groups, records each finished one, resubmits lost ones, ends a stalled run.

    A group lost with a dying worker (``KilledWorker``) is charged a retry only when one of its
    attempts had started on a worker (its ``started`` event): groups that were only waiting in the
    dying worker's queue never ran, and are resubmitted free (three deaths in one run once lost 10
    of 30 configurations that way)."""

    def __init__(self, client: Any, rec: Recorder, done: set[Configuration], device: str, options: dict[str, Any],
                 run_id: str, *, retries: int, stall_s: float, no_workers_s: float) -> None:
        self.client, self.rec, self.done, self.device, self.options, self.run_id = client, rec, done, device, options, run_id
        self.retries, self.stall_s, self.no_workers_s = retries, stall_s, no_workers_s
        self.attempts: dict[str, int] = {}
        self.charged: dict[str, int] = {}
        self.futures: dict[Any, tuple[str, SweepSpec]] = {}
        self.reruns: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []
        self.nonce = uuid.uuid4().hex[:6]  # this invocation's tasks (a resumed run keeps its run_id)

    def submit(self, name: str, sub: SweepSpec) -> None:
        n = self.attempts[name] = self.attempts.get(name, 0) + 1
        fut = self.client.submit(measure_group, sub, self.device, self.options, self.run_id, name, n,
                                 key=f"{TASK_PREFIX}-{name}-a{n}", resources={"GPU": 1}, pure=False)
        self.futures[fut] = (name, sub)

    def run(self, todo: list[tuple[int, SweepSpec]]) -> bool:
        """Until every group finished or failed; True when the hooks stopped it."""
        distributed = _distributed()
        for i, sub in todo:
            self.submit(f"{self.run_id}-{self.nonce}-{i}-{'+'.join(k.name for k in sub.specs())}-{sub.sizes[0]}", sub)
        self.last_result = time.monotonic()
        self.no_workers_since: float | None = None
        while self.futures:
            if self.rec.stop_now():
                self.client.cancel(list(self.futures))
                return True
            try:
                distributed.wait(list(self.futures), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            for fut in [f for f in self.futures if f.status in ("finished", "error", "cancelled")]:
                self.collect(fut, *self.futures.pop(fut))
            self.watch(time.monotonic())
        return False

    def collect(self, fut: Any, name: str, sub: SweepSpec) -> None:
        distributed = _distributed()
        if fut.status == "finished":
            self.finished(name, fut.result())
            return
        exc = fut.exception() if fut.status == "error" else None
        if isinstance(exc, distributed.KilledWorker):
            ran = self.attempts[name] in _started(self.client).get(name, set())
            self.charged[name] = self.charged.get(name, 0) + (1 if ran else 0)
            if self.charged[name] <= self.retries and self.attempts[name] <= self.retries + 1 + MAX_UNCHARGED:
                self.submit(name, sub)
                return
        if isinstance(exc, distributed.KilledWorker) or fut.status == "cancelled":
            self.failed.append({"group": name, "attempts": self.attempts[name], "error": str(exc or "cancelled")})
            return
        self.rec.write()
        self.client.cancel(list(self.futures))
        raise exc  # type: ignore[misc] - an error of the measurement itself: as a one-device run raises it

    def finished(self, name: str, res: dict[str, Any]) -> None:
        self.last_result = time.monotonic()
        lost = list(dict.fromkeys(w for w in _starts(self.client).get(name, []) if w != res["worker"]))
        note = ""
        if self.attempts[name] > 1 or lost:
            how = (f"after worker(s) {', '.join(lost)} died while measuring it" if lost or self.charged.get(name) else
                   "after the worker it was queued on died (no start of it was seen: not charged a retry)")
            note = f"re-run on {res['worker']} {how} (attempt {self.attempts[name]})"
            self.reruns.append({"group": name, "lost": lost, "worker": res["worker"], "attempts": self.attempts[name],
                                "charged": self.charged.get(name, 0)})
        _merge(res, note, self.done, self.rec)

    def watch(self, now: float) -> None:
        """End the run when no worker was there for ``no_workers_s`` or no result came for ``stall_s``."""
        if not self.client.scheduler_info().get("workers"):
            self.no_workers_since = self.no_workers_since or now
            if now - self.no_workers_since > self.no_workers_s:
                self.give_up(f"no worker for {self.no_workers_s:g} s")
        else:
            self.no_workers_since = None
        if self.futures and now - self.last_result > self.stall_s:
            self.give_up(f"no result for {self.stall_s:g} s")

    def give_up(self, why: str) -> None:
        self.failed += [{"group": n, "attempts": self.attempts[n], "error": why} for n, _ in self.futures.values()]
        self.client.cancel(list(self.futures))
        self.futures.clear()


def run_on_every_worker(spec: SweepSpec, cluster: Any, *, device: str = "auto", run_id: str | None = None,
                        timeout_s: float = 1800.0) -> pd.DataFrame:
    """The whole ``spec`` once on every GPU worker (are the GPUs alike?): their summaries, with
    ``worker``, ``host`` and ``gpu``; ``grouping.per_gpu`` compares them. A lost worker's sweep is
    not re-run here (there is no "elsewhere" for a per-GPU measurement): the error names it."""
    distributed = _distributed()
    run_id = run_id or uuid.uuid4().hex[:12]
    conn = connect(cluster)
    try:
        workers = gpu_workers(conn.client)
        futs = [conn.client.submit(measure_group, spec, device, {}, run_id, f"{run_id}-every-{i}", workers=[w],
                                   allow_other_workers=False, resources={"GPU": 1}, pure=False,
                                   key=f"{TASK_PREFIX}-{run_id}-every-{i}")
                for i, w in enumerate(workers)]
        try:
            results = conn.client.gather(futs, errors="raise") if distributed.wait(futs, timeout=timeout_s) else []
        except TimeoutError as exc:
            raise BenchmarkError(f"run_on_every_worker: no result from every worker within {timeout_s:g} s") from exc
    finally:
        conn.close()
    return pd.concat([r["summary"] for r in results], ignore_index=True)


def device_name(device: str, device_options: dict[str, Any]) -> str:
    """On a worker: the name of the device it measures on (opened once per process)."""
    from ..devices import get_device

    key = (device, tuple(sorted(device_options.items())))
    if key not in _DEVICES:
        _DEVICES[key] = get_device(device, **device_options)
    return str(_DEVICES[key].name)


def _check_devices(client: Any, path: str, rows: list[dict[str, Any]], device: str, options: dict[str, Any]) -> None:
    """Refuse to resume a file whose rows came from another device kind than the workers'."""
    futs = [client.submit(device_name, device, options, workers=[w], allow_other_workers=False, resources={"GPU": 1},
                          pure=False) for w in gpu_workers(client)]
    now = set(client.gather(futs))
    then = {str(r["device_name"]) for r in rows}
    if not then <= now:
        raise ConfigError(f"cannot resume {path!r}: it holds results from {sorted(then)}, the workers measure on "
                          f"{sorted(now)}; use another out file")


def _catalog_names() -> set[str]:
    from ..kernels import catalog

    return set(catalog.names())


def _merge(res: dict[str, Any], note: str, done: set[Configuration], rec: Recorder) -> None:
    """Add a finished group's rows that are not in the results yet (resume keeps finished rows)."""
    summary, samples = res["summary"], res["samples"]
    summary = summary[[k not in done for k in configurations_of(summary)]]
    if not len(summary):
        return
    keep = set(configurations_of(summary))
    samples = samples[[k in keep for k in configurations_of(samples)]].reset_index(drop=True)
    if note:
        summary = summary.assign(warning=["; ".join(filter(None, [w, note])) for w in summary["warning"]])
    # the first worker's device description; every group's verification
    rec.meta({k: v for k, v in res["metadata"].items() if k.startswith("verify.") or k not in rec.metadata})
    done.update(keep)
    rec.add_group(samples, summary.to_dict("records"))


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
    return f"<div>cluster {html.escape(str(client.scheduler.address))} · {dash} · configurations per worker: " \
           f"{', '.join(parts) or 'no workers'}</div>"


def iter_groups(spec: SweepSpec) -> Iterator[tuple[str, int]]:
    for sub in groups_of(spec):
        yield sub.specs()[0].name, sub.sizes[0]


__all__ = ["CLUSTER_COLUMNS", "Connection", "PinDevices", "connect", "expected_keys", "gpu_workers", "groups_of",
           "local_cluster", "measure_group", "parse_cluster", "run_cluster", "run_on_every_worker", "worker_progress"]
