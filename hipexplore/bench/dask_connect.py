"""Connecting to Dask: ``local:N`` clusters only their owner can reach, and clusters users started.

Why a ``local:N`` cluster speaks TLS although it listens on 127.0.0.1 only: loopback is not
private. Every user of the machine can open a port on 127.0.0.1 (``/proc/net/tcp`` even names the
owner of each), and a Dask scheduler, nanny or worker runs whatever a connected client sends
(``Client.run_on_scheduler``, ``submit``, ``Nanny.run``): a plain ``tcp://`` local cluster ran any
local user's code as its owner. The transports distributed (2026.8) offers, and why this one:

* ``inproc://`` works inside one process only; the workers are processes (one per GPU, each with its
  own visible devices and GPU context).
* ``ucx://`` needs UCX and authenticates no one either; there is no Unix-socket comm to put behind
  file permissions.
* ``tls://`` with ``distributed.security.Security.temporary()`` (chosen): a fresh self-signed
  key and certificate made in memory for this one cluster, the certificate its only CA. Every
  listener (scheduler, nanny, worker) asks the peer for a certificate signed by it
  (``ssl.CERT_REQUIRED`` in ``distributed/security.py``) and ``require_encryption=True`` refuses
  ``tcp://``, so another user can open the port but no message reaches a handler without the key.
  The key never leaves this user: it reaches the worker processes pickled in their start-up
  arguments through the spawn pipe (not a command line, an environment or a file), and
  distributed writes it only for a moment into a ``TemporaryDirectory`` (mode 0700) to load it.
  Costs: ``cryptography`` (the extra ``cluster``), a 2048-bit key made at start-up and encrypted
  messages between local processes. On the 2-core test VM (loaded by other work, so noisy): start
  8.3-8.9 s against 7.6-8.6 s over ``tcp://``, 300 empty tasks 5.0-9.1 s against 4.0-6.2 s: per task
  milliseconds, beside a group's measurement or a compile.

Scratch space: a Dask server puts its ``local_directory`` first on ``sys.path`` (this process's for
the scheduler and the nannies, each worker's; the spawned workers inherit this process's). The
default is ``$TMPDIR/dask-scratch-space``, shared by every user of the machine: distributed uses it
whenever this user can write to it, so another user who made it first (mode 0777) put modules ahead
of the installed packages in this process and its workers. A ``local:N`` cluster gets a folder of its
own instead (``tempfile.mkdtemp``: 0700, this user's), removed with the cluster.

The dashboard stays plain HTTP on 127.0.0.1 (``cluster.dashboard``, the sweep panel's link): it is
read-only, but other local users can read it (task names, worker logs and profiles).

Spawned workers never import from the working directory: multiprocessing starts a worker as
``python -c 'from multiprocessing.spawn import spawn_main; ...'``, which puts '' (the working
directory) first on ``sys.path`` while it imports ``multiprocessing`` and what it needs, before the
parent's ``sys.path`` is restored, so a ``threading.py`` planted in the folder where the user ran
``hipexplore bench`` ran in every worker. The nannies start their workers with ``PYTHONSAFEPATH=1``
(Python >= 3.11: no '' on the path) in the environment the child inherits. It must be in
``os.environ`` when the process is spawned (``distributed.nanny.environ`` and the Nanny's ``env`` are
applied inside the child, too late), and ``distributed.nanny.pre-spawn-environ`` would leave it in
this process's environment for good (every later ``python script.py`` the user starts from a
notebook would lose its script's folder on the path), so ``_SafePathNanny`` sets it around each
spawn and restores it after (counted: nannies start concurrently on one event loop; a worker that
a nanny restarts goes through the same ``instantiate``). The parent's own ``sys.path`` still reaches
the workers: a notebook that has its folder on ``sys.path`` hands it to them, as it imports from it
itself.

Clusters users started (``tcp://``, ``tls://`` addresses): hipexplore cannot secure a scheduler it
did not start. ``connect(address, security=...)`` passes a ``distributed.Security`` through; without
one, distributed builds it from the Dask configuration (``distributed.comm.tls.*``,
``distributed.comm.require-encryption``; the ``DASK_DISTRIBUTED__COMM__TLS__*`` variables), which
is how the CLI's ``--cluster tls://...`` gets its certificates. A plain ``tcp://`` address still
works: docs/guide/cluster.md says what it exposes.
"""

from __future__ import annotations

import contextlib

import os
import shutil
import tempfile
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ..errors import ConfigError

VISIBLE_DEVICE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
#: the variable a spawned worker starts with (no working directory on its ``sys.path``)
SAFE_PATH_VAR = "PYTHONSAFEPATH"

try:  # the extra ``cluster``; without it every entry point says how to install it (``_distributed``)
    from distributed import Nanny as _NannyBase
    from distributed import WorkerPlugin as _PluginBase
except ImportError:  # pragma: no cover
    _PluginBase = object  # type: ignore[misc,assignment]
    _NannyBase = object  # type: ignore[misc,assignment]


def _distributed() -> Any:
    from ..extras import require

    return require("distributed", "a run on a cluster (Dask distributed)", "cluster")


def _security() -> Any:
    """A fresh in-memory key and certificate for one local cluster (see the module docstring)."""
    distributed = _distributed()
    try:
        return distributed.Security.temporary()
    except ImportError as exc:
        from ..extras import hint

        raise ConfigError(
            "a local:N cluster encrypts and authenticates its connections and needs the package "
            f"cryptography: {hint('cluster')}"
        ) from exc


# ----------------------------------------------------------------------------- spawning workers
_SAFE_LOCK = threading.Lock()
_SAFE_STATE: dict[str, Any] = {"users": 0, "saved": None}


@contextmanager
def safe_path_environ() -> Iterator[None]:
    """``PYTHONSAFEPATH=1`` in this process's environment while worker processes are spawned; the
    value it had is restored when the last spawn in progress ends."""
    with _SAFE_LOCK:
        if _SAFE_STATE["users"] == 0:
            _SAFE_STATE["saved"] = os.environ.get(SAFE_PATH_VAR)
            os.environ[SAFE_PATH_VAR] = "1"
        _SAFE_STATE["users"] += 1
    try:
        yield
    finally:
        with _SAFE_LOCK:
            _SAFE_STATE["users"] -= 1
            if _SAFE_STATE["users"] == 0:
                saved = _SAFE_STATE["saved"]
                if saved is None:
                    os.environ.pop(SAFE_PATH_VAR, None)
                else:
                    os.environ[SAFE_PATH_VAR] = saved


class _SafePathNanny(_NannyBase):  # type: ignore[misc,valid-type]
    """A Nanny whose worker processes start with ``PYTHONSAFEPATH=1`` (start, restart, replacement
    of a dead one: each goes through ``instantiate``).

    A worker process that dies while the cluster starts (killed, out of memory, a failing import)
    made distributed's ``SpecCluster`` close the whole cluster and raise ``RuntimeError:
    _SafePathNanny failed to start.`` (a 61-line traceback, nothing measured on the workers that
    did start). Here the failed start is kept as ``start_failure`` and the nanny stays closed;
    ``local_cluster`` drops it and the run goes on with the workers that came up."""

    start_failure: BaseException | None = None

    async def instantiate(self) -> Any:
        with safe_path_environ():
            return await super().instantiate()

    async def start_unsafe(self) -> Any:
        try:
            return await super().start_unsafe()
        except Exception as exc:  # noqa: BLE001 - kept, said in one line by local_cluster
            self.start_failure = exc  # the Nanny closed itself already (distributed's own handling)
            return self


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


@contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """SIGINT ignored while the cluster starts its processes, which inherit that (an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt handler): a Ctrl-C at
    the terminal reaches the whole process group, and every Dask worker printed a KeyboardInterrupt
    traceback (about 60 lines) over the sweep's one "interrupted: keeps ..." line. This process
    handles the interrupt and closes the cluster, which stops them. Only on the main thread (the
    only one that may set a handler); a Ctrl-C during the few seconds of the start waits for it."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def local_cluster(n: int, pin: bool = True) -> Any:
    """N worker processes (1 thread each) and a scheduler on 127.0.0.1, over TLS with a key only
    this process and its workers hold (``tls://127.0.0.1:PORT``; ``cluster.security`` is what a
    client needs: ``distributed.Client(cluster)`` takes it from the cluster).

    ``pin=True`` (sweeps): worker i sees GPU i alone and advertises ``GPU=1``. ``pin=False`` (compile-only
    work such as the tuning replay): no visible-device variables, no GPU resource, no NVML diagnostics,
    so any number of workers starts on a machine with fewer GPUs (or none): pinning worker 1 on a
    one-GPU machine made distributed's NVML start-up query fail ("Nanny failed to start")."""
    distributed = _distributed()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"local cluster size must be a positive integer, got {n!r}")
    import dask

    security = _security()
    scratch = tempfile.mkdtemp(prefix="hipexplore-dask-")  # 0700, this user's: see the module docstring
    common = {"host": "127.0.0.1", "protocol": "tls://", "security": security, "local_directory": scratch}
    config = {"distributed.scheduler.allowed-failures": 0, "distributed.worker.daemon": False}
    if not pin:
        config["distributed.diagnostics.nvml"] = False
    try:
        with dask.config.set(config), _workers_ignore_sigint():
            workers = {
                i: {
                    "cls": _SafePathNanny,
                    "options": {
                        **common,
                        "nthreads": 1,
                        "resources": {"GPU": 1} if pin else {},
                        "name": i,
                        "env": {v: str(i) for v in VISIBLE_DEVICE_VARS} if pin else {},
                        "silence_logs": 40,
                    },
                }
                for i in range(n)
            }
            scheduler = {"cls": distributed.Scheduler, "options": {**common, "dashboard_address": "127.0.0.1:0"}}
            cluster = distributed.SpecCluster(workers=workers, scheduler=scheduler, security=security, silence_logs=40)
    except RuntimeError as exc:  # the scheduler (or a nanny outside _SafePathNanny's care) did not start
        shutil.rmtree(scratch, ignore_errors=True)
        raise ConfigError(f"cluster local:{n} did not start: {_why(exc)}; nothing was measured") from None
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    weakref.finalize(cluster, shutil.rmtree, scratch, True)  # when the cluster goes (or this process ends)
    _drop_failed_workers(cluster, n)
    return cluster


def _why(exc: BaseException) -> str:
    """An exception and its causes in one line (``Nanny failed to start worker process``)."""
    parts = []
    while exc is not None and len(parts) < 4:
        parts.append(f"{type(exc).__name__}: {exc}".strip().rstrip(":") if str(exc) else type(exc).__name__)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return " <- ".join(" ".join(p.split()) for p in parts)[:400]


def _drop_failed_workers(cluster: Any, n: int) -> None:
    """Workers whose process died while the cluster started are left out of it, said in one
    warning; with none left the cluster is closed and the run ends in one line (nothing was
    measured yet: what an earlier run left in the out file is untouched)."""
    import warnings

    failed = {name: w for name, w in list(cluster.workers.items()) if getattr(w, "start_failure", None) is not None}
    if not failed:
        return
    for name in failed:
        cluster.workers.pop(name, None)
        cluster.worker_spec.pop(name, None)  # never started again by a later scale or correction
    first = _why(next(iter(failed.values())).start_failure)
    names = ", ".join(str(k) for k in sorted(failed, key=str))
    if len(failed) == n:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)
        raise ConfigError(
            f"cluster local:{n}: no worker started (every worker process died while the cluster "
            f"started: {first}); nothing was measured"
        )
    warnings.warn(
        f"cluster local:{n}: worker(s) {names} died while the cluster started ({first}); the run goes on "
        f"with the {n - len(failed)} that came up",
        RuntimeWarning,
        stacklevel=3,
    )


def parse_cluster(text: str) -> tuple[str, Any]:
    """'local:N' -> ('local', N); 'tcp://HOST:PORT' -> ('address', text); else a ConfigError."""
    t = str(text).strip()
    if t.startswith("local:"):
        try:
            n = int(t[len("local:") :])
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"cluster {text!r}: expected local:N with N a positive integer (workers, one per GPU)")
        return "local", n
    if t.startswith(("tcp://", "tls://", "inproc://", "ucx://")) and ":" in t.split("://", 1)[1]:
        return "address", t
    raise ConfigError(f"cluster {text!r} is neither local:N nor a scheduler address like tcp://HOST:PORT")


def _client(distributed: Any, *args: Any, **kwargs: Any) -> Any:
    """``distributed.Client(*args, **kwargs)``, closed here and now when its constructor fails.

    Why: a client whose constructor raised is left to the garbage collector, and its ``__del__``
    closes it — at whatever moment the collector runs. Run inside the next client's start (which
    holds its loop runner's lock), that close waits on the same lock forever: a refused TLS handshake
    followed by any other connection hung the test process (seen here)."""
    client = distributed.Client.__new__(distributed.Client)
    try:
        client.__init__(*args, **kwargs)
    except BaseException:
        with contextlib.suppress(Exception):
            client.close(timeout=5)
        with contextlib.suppress(Exception):
            client._loop_runner.stop()
        with contextlib.suppress(Exception):
            client.status = "closed"  # its __del__ has nothing left to do
        raise
    return client


def _client_for_address(distributed: Any, address: str, timeout_s: float, security: Any) -> Any:
    """A client of the scheduler at ``address``; a ConfigError in one line when none answers or
    a ``tls://`` address finds no certificates (distributed raises a TypeError about ``ssl_context``)."""
    try:
        return _client(distributed, address, timeout=timeout_s, security=security)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cluster {address!r}: no Dask scheduler answered within {timeout_s:g} s ({exc})") from exc
    except TypeError as exc:
        if "ssl_context" not in str(exc):
            raise
        raise ConfigError(
            f"cluster {address!r} speaks TLS and no client certificate is configured: set "
            f"distributed.comm.tls.ca-file, .client.cert and .client.key in the Dask configuration "
            f"(or DASK_DISTRIBUTED__COMM__TLS__CA_FILE etc.; see docs/guide/cluster.md)"
        ) from exc


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


def connect(cluster: Any, timeout_s: float = 30.0, pin: bool = True, security: Any = None) -> Connection:
    """A client for ``cluster``: a ``distributed.Client`` (used as is), a cluster object,
    ``'local:N'`` (over TLS, see ``local_cluster``) or a scheduler address; with ``pin`` the
    ``PinDevices`` plugin is registered on it (``pin=False``: compile-only work, ``local:N`` starts
    unpinned workers). ``security``: a ``distributed.Security`` (or True, False, a dict, as
    ``distributed.Client`` takes them) for an address; None takes the Dask configuration's."""
    distributed = _distributed()
    owned: list[Any] = []
    if isinstance(cluster, distributed.Client):
        client = cluster
    elif isinstance(cluster, str):
        kind, value = parse_cluster(cluster)
        if kind == "local":
            lc = local_cluster(value, pin=pin)
            owned.append(lc)
            client = _client(distributed, lc, timeout=timeout_s)
        else:
            client = _client_for_address(distributed, value, timeout_s, security)
        owned.append(client)
    elif hasattr(cluster, "scheduler_address"):
        client = _client(distributed, cluster, timeout=timeout_s)
        owned.append(client)
    else:
        raise ConfigError(
            f"cluster must be a distributed.Client, a Dask cluster, 'local:N' or 'tcp://HOST:PORT'; "
            f"got {type(cluster).__name__} {cluster!r}"
        )
    if pin:
        client.register_plugin(PinDevices())
    return Connection(client, owned)


__all__ = [
    "Connection",
    "PinDevices",
    "SAFE_PATH_VAR",
    "VISIBLE_DEVICE_VARS",
    "connect",
    "local_cluster",
    "parse_cluster",
    "safe_path_environ",
]
