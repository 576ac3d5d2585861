"""Sweeps in a worker process: a faulting kernel kills the worker, never the notebook.

Why: on the H200 a kernel writing out of bounds surfaced as ``cuMemFree failed:
CUDA_ERROR_ILLEGAL_ADDRESS`` *later*, named neither kernel nor configuration, and left the
process's CUDA context dead (the notebook had to be restarted, in-memory results were at risk).
``run_in_worker(spec, device)`` runs ``bench.run.run`` in a fresh interpreter (``subprocess``,
as the compile workers of ``compile.isolation`` are started: never ``fork``, the parent has
threads and a GPU context) with its own device of the same kind and index. The worker announces
each configuration before measuring it and streams every finished one back (samples, then the
summary row), so the caller's hooks see results as they are measured and nothing finished is
lost. A fault becomes ``KernelFault`` ("kernel K faulted in configuration C:
CUDA_ERROR_ILLEGAL_ADDRESS"), whether the worker caught a device error or died (``SIGSEGV``),
carrying the finished configurations; the parent's device and context were never touched, so the
next sweep works. ``should_stop`` is the caller's, asked over the pipe (a round trip between
configurations), so a stop takes effect where it would in-process.

What crosses: the ``SweepSpec`` and the ``KernelSpec`` of every kernel the worker's fresh catalog
does not have (user kernels: their expressions and geometry pickle; a lambda does not, and is
named in the error). Callables (``callable_kernel``) cannot cross: they run in-process. The
worker compiles through the process-default cache (the disk tier is shared; a custom in-memory
``CompileCache`` of the caller is not).
"""
from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from typing import Any, Sequence

import pandas as pd

from .. import settings
from ..errors import ConfigError, KernelFault
from ..kernels import catalog
from .io import samples_frame, summary_frame
from .result import SweepHooks, SweepResult
from .spec import SweepSpec

_BOOT = (
    "import sys, json\n"
    "for p in reversed(json.loads(sys.argv[1])):\n"
    "    sys.path.insert(0, p) if p not in sys.path else None\n"
    "from hipexplore.bench.worker_main import _worker_main\n"
    "_worker_main(int(sys.argv[2]), int(sys.argv[3]))\n"
)
STDERR_TAIL = 4000


def use_worker(device: Any, worker: bool | None) -> bool:
    """The default: a worker for GPU devices, in-process for the host (``HIPEXPLORE_SWEEP_WORKER``
    overrides the default; an explicit ``worker=`` overrides both)."""
    if worker is not None:
        return bool(worker)
    env = settings.SWEEP_WORKER.get()
    if env is not None:
        return bool(env)
    return getattr(device, "kind", "host") != "host"


def _shippable(spec: SweepSpec) -> tuple[SweepSpec, list[tuple[str, bytes | None]]]:
    """The spec with kernels by name, and each kernel pickled (``None``: a registered kernel that
    does not pickle; the worker then uses its own catalog's kernel of that name, if it has one)."""
    out: list[tuple[str, bytes | None]] = []
    for k in spec.specs():
        if k.call is not None:
            raise ConfigError(f"kernel {k.name!r} is a Python callable, which cannot run in a sweep worker; use worker=False")
        try:
            out.append((k.name, pickle.dumps(k)))
        except Exception as exc:
            try:
                registered = catalog.get(k.name) is k
            except ConfigError:
                registered = False
            if not registered:  # the worker's kernel of that name would not be this one
                raise ConfigError(f"kernel {k.name!r} cannot be sent to a sweep worker ({type(exc).__name__}: {exc}); "
                                  f"give its reference/traffic as importable functions or expressions, or use worker=False") from None
            out.append((k.name, None))
    named = copy.copy(spec)
    object.__setattr__(named, "kernels", tuple(name for name, _ in out))
    return named, out


def _device_text(device: Any) -> str:
    return f"{device.kind}:{device.index}"


def run_in_worker(spec: SweepSpec, device: Any, *, out: Any = None, resume: bool = True, hooks: SweepHooks | None = None,
                  run_id: str | None = None, command: str | Sequence[str] | None = None, pad_bytes: int = 0) -> SweepResult:
    """``run(spec, device)`` in a worker process (see the module docstring); ``pad_bytes``: held
    allocated there before the sweep allocates anything (``bench.passes``)."""
    hooks = hooks or SweepHooks()
    spec, kernels = _shippable(spec)
    llc = device.llc_bytes if "override" in str(getattr(device, "llc_source", "")) else None
    fd, err_path = tempfile.mkstemp(prefix="hipexplore-sweep-worker-", suffix=".log")
    os.close(fd)
    child_read, parent_write = os.pipe()
    parent_read, child_write = os.pipe()
    try:
        with open(err_path, "ab", buffering=0) as errf:
            proc = subprocess.Popen([sys.executable, "-c", _BOOT, json.dumps(sys.path), str(child_read), str(child_write)],
                                    stdin=subprocess.DEVNULL, stdout=errf, stderr=errf, pass_fds=(child_read, child_write),
                                    start_new_session=True, env=dict(os.environ, LIBC_FATAL_STDERR_="1"))
    finally:
        os.close(child_read)
        os.close(child_write)
    rx, tx = Connection(parent_read, writable=False), Connection(parent_write, readable=False)
    samples: list[pd.DataFrame] = []
    rows: list[dict[str, Any]] = []
    current = ["", ""]
    try:
        tx.send_bytes(pickle.dumps({"device": _device_text(device), "llc_bytes": llc, "kernels": kernels, "spec": spec,
                                    "out": None if out is None else os.fspath(out), "resume": resume, "run_id": run_id,
                                    "command": command, "pad_bytes": int(pad_bytes)}))
        while True:
            try:
                kind, payload = pickle.loads(rx.recv_bytes())
            except (EOFError, OSError):
                proc.wait()
                from ..compile.isolation import signal_description

                _, how = signal_description(proc.returncode)
                partial = SweepResult(samples_frame(samples), summary_frame(rows), {}, None)
                tail = _tail(err_path)
                raise KernelFault(current[0] or "?", current[1] or "(before the first configuration)",
                                  f"the sweep worker (pid {proc.pid}) died with {how}" + (f"; its stderr: {tail}" if tail else ""),
                                  partial) from None
            if kind == "ask":  # the worker's should_stop(), answered by the caller's
                tx.send_bytes(pickle.dumps(hooks.stop_now()))
            elif kind == "start":
                current[:] = payload
                hooks.started(current)
            elif kind == "samples":
                samples.append(payload)
                if hooks.on_samples is not None:
                    hooks.on_samples(payload.copy())
            elif kind == "result":
                rows.append(payload)
                if hooks.on_result is not None:
                    hooks.on_result(dict(payload))
            elif kind == "done":
                _reap(proc)
                return payload
            elif kind == "error":
                _reap(proc)
                if isinstance(payload, KernelFault):
                    payload.result = SweepResult(samples_frame(samples), summary_frame(rows), {}, None)
                raise payload
    finally:
        for c in (rx, tx):
            c.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        try:
            os.unlink(err_path)
        except OSError:
            pass


def _reap(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait for a worker that has reported; one stuck in its exit (a dead GPU context) is killed."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()[-STDERR_TAIL:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


__all__ = ["run_in_worker", "use_worker"]
