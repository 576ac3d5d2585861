"""Counter backends by name: ``cupti`` and ``ncu`` (NVIDIA), ``rocprofv3`` (AMD), ``host`` (none).

Why its own module: the backends import their shared pieces (``backends``: the errors, ``Launch``,
the name pattern, ``find_tool``); the registry imports the backends. Kept in one module they made
an import circle (backends -> ncu -> backends).
"""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError
from .backends import HostBackend


def backend_named(name: str, **options: Any) -> Any:
    """A backend by name: ``cupti``, ``ncu``, ``rocprofv3``, ``host``."""
    if name == "cupti":
        from .cupti import CuptiBackend

        return CuptiBackend(**options)
    if name == "ncu":
        from .ncu import NcuBackend

        return NcuBackend(**options)
    if name == "rocprofv3":
        from .rocprof import RocprofBackend

        return RocprofBackend(**options)
    if name == "host":
        return HostBackend()
    raise ConfigError(f"counter backend {name!r} is unknown; expected cupti, ncu, rocprofv3 or host")


def backend_for(device: Any, name: str | None = None, **options: Any) -> Any:
    """The backend for ``device`` (``name`` picks one): NVIDIA -> CUPTI in the counting unit's own
    worker where its library is found, else Nsight Compute; AMD -> rocprofv3; else the host's."""
    if name is None:
        name = {"cuda": "cupti", "hip": "rocprofv3"}.get(device.kind, "host")
        if name == "cupti" and backend_named("cupti").available(device):
            name = "ncu"
    return backend_named(name, **options)


def from_description(desc: dict[str, Any]) -> Any:
    """The backend that wrote ``desc`` (a recorded backend.json), able to parse its output again."""
    options = {k: v for k, v in desc.items() if k in ("metrics", "arch", "profiler_range", "replay")}
    if "metrics" in options:
        options["metrics"] = tuple(options["metrics"])
    if desc.get("name") == "ncu" and desc.get("groups"):  # several replay passes, each its own counting unit
        options["groups"] = [tuple(g) for g in desc["groups"]]
    return backend_named(str(desc.get("name", "")), **options)


__all__ = ["backend_for", "backend_named", "from_description"]
