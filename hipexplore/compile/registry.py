"""Pick a compiler by name: ``get_compiler("hiprtc" | "nvrtc" | "host", ...)``, and describe them all.

hiprtc is isolated by default (ROCm 5.2's comgr aborts the process on targets it does not know);
nvrtc and host run in-process by default (they report errors instead of dying), and either can be
isolated on request. Instances are cached per (name, isolated, workers, timeout) so a notebook
reuses one worker pool.

Environment: ``HIPEXPLORE_COMPILE_TIMEOUT`` (seconds, default 120), ``HIPEXPLORE_COMPILE_WORKERS``
(default min(4, CPUs)), ``HIPEXPLORE_HIPRTC_LIBRARY`` (one hiprtc library name or path instead of the
search), ``CC`` (host compiler), ``HIPEXPLORE_DUMP_DIR`` (where diagnostics write).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .. import settings
from ..errors import ConfigError
from . import compiler_cache
from .backends import BACKENDS, backend_class
from .base import Compiler
from .isolation import IsolatedCompiler
from .request import COMPILERS

ENV_TIMEOUT = settings.COMPILE_TIMEOUT.name
ENV_WORKERS = settings.COMPILE_WORKERS.name
DEFAULT_TIMEOUT = settings.COMPILE_TIMEOUT.default
ISOLATED_BY_DEFAULT = {name: b.isolated_by_default for name, b in BACKENDS.items()}

_instances: dict[tuple, Compiler] = {}
_instances_lock = threading.Lock()


def default_timeout() -> float:
    return settings.COMPILE_TIMEOUT.get()


def default_workers() -> int:
    return settings.COMPILE_WORKERS.get()


def _checked_args(
    name: str, isolated: bool | None, workers: int | None, timeout: float | None
) -> tuple[bool, int, float]:
    backend_class(name)
    if isolated is None:
        isolated = ISOLATED_BY_DEFAULT[name]
    if not isinstance(isolated, bool):
        raise ConfigError(f"isolated must be True, False or None; got {isolated!r}")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ConfigError(f"workers must be a positive integer; got {workers!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ConfigError(f"timeout must be a positive number of seconds; got {timeout!r}")
    workers = workers if workers is not None else (default_workers() if isolated else 1)
    timeout = float(timeout) if timeout is not None else default_timeout()
    return isolated, workers, timeout


def get_compiler(
    name: str, isolated: bool | None = None, workers: int | None = None, timeout: float | None = None
) -> Compiler:
    """A (cached, shared) compiler. ``workers``/``timeout`` apply to isolated compilers; the host
    backend also honours ``timeout`` in-process (it kills the compiler's process group). Never
    close a shared compiler: use ``new_compiler`` for one you own."""
    isolated, workers, timeout = _checked_args(name, isolated, workers, timeout)
    # the environment a backend reads at construction is part of the key: changing CC or the hiprtc
    # library in a notebook must not hand back a compiler built for the old setting
    key = (name, isolated, workers, timeout, _env_signature(name))
    with _instances_lock:
        found = _instances.get(key)
        if found is not None and not found.closed:
            return found
        compiler = _build(name, isolated, workers, timeout)
        _instances[key] = compiler
        return compiler


def new_compiler(
    name: str, isolated: bool | None = None, workers: int | None = None, timeout: float | None = None
) -> Compiler:
    """A private compiler (not shared through ``get_compiler``), which its owner may close."""
    return _build(name, *_checked_args(name, isolated, workers, timeout))


def _env_signature(name: str) -> tuple[str, ...]:
    if name == "hiprtc":
        return (*settings.raw_values(settings.HIPRTC_LIBRARY), os.environ.get("ROCM_PATH", ""))
    if name == "host":
        return (os.environ.get("CC", ""),)
    if name == "triton":  # an in-process Triton backend reads HIPEXPLORE_COMPILER_CACHE when it is made
        return compiler_cache.signature(name)
    return ()


def _build(name: str, isolated: bool, workers: int, timeout: float) -> Compiler:
    kwargs: dict[str, Any] = {}
    if name == "hiprtc" and isolated:
        kwargs["allow_unknown_targets"] = True  # the worker may die trying; that is what isolation is for
    if name == "host" and not isolated:
        kwargs["timeout"] = timeout  # isolated: the worker pool's timeout kills the whole worker group
    if isolated:
        return IsolatedCompiler(name, kwargs, workers=workers, timeout=timeout)
    return backend_class(name)(**kwargs)


def compiler_info() -> list[dict[str, Any]]:
    """One dict per compiler for ``hipexplore info`` and provenance; never raises, never compiles."""
    rows = []
    for name in COMPILERS:
        row: dict[str, Any] = {
            "name": name,
            "available": False,
            "reason": "",
            "version": "",
            "library": "",
            "targets": [],
            "notes": [],
        }
        try:
            backend = backend_class(name)()
            row["available"] = bool(backend.available())
            if not row["available"]:
                row["reason"] = backend.unavailable_reason()
            else:
                ident = backend.identity()
                row.update(
                    version=ident.version, library=ident.library, stamp=ident.stamp, targets=list(backend.targets())
                )
                row["isolated_by_default"] = ISOLATED_BY_DEFAULT[name]
                crashing = backend.crashing_targets()
                row["crashing_targets"] = list(crashing)
                if crashing:
                    row["notes"].append(
                        f"targets {', '.join(crashing)} crash this comgr (SIGABRT; SIGSEGV after earlier compiles): in-process compiles refuse them, the "
                        f"isolated compiler reports CompilerCrashed"
                    )
        except Exception as exc:  # info must describe a broken install, not die on it
            row["available"] = False
            row["reason"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows
