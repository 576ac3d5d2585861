"""The compiler name -> backend class table, a leaf of ``compile/``.

Why its own module: both the registry (which builds compilers) and the isolation workers (which
build the backend inside a worker process) need it; kept in ``registry.py`` it made an import
circle registry <-> isolation. Each backend's module is imported only when its class is asked for,
so a machine without hip-python can still use nvrtc and host.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import ConfigError
from .request import COMPILERS


@dataclass(frozen=True)
class Backend:
    """Where a compiler backend lives, and whether it runs isolated by default."""

    name: str
    module: str  #: module under hipexplore.compile
    cls: str
    isolated_by_default: bool  #: hiprtc: its comgr aborts the process on unknown targets


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("hiprtc", "hiprtc", "HiprtcCompiler", True),
        Backend("nvrtc", "nvrtc", "NvrtcCompiler", False),
        Backend("host", "host", "HostCompiler", False),
        Backend("triton", "tritonc", "TritonCompiler", True),  # heavy import, process-global LLVM
    )
}
assert tuple(BACKENDS) == tuple(COMPILERS), "compile.request.COMPILERS and BACKENDS must list the same names"


def backend_class(name: str) -> type:
    """The in-process backend class for a compiler name (imports only that backend's module)."""
    backend = BACKENDS.get(name)
    if backend is None:
        raise ConfigError(f"unknown compiler {name!r}; expected one of {', '.join(COMPILERS)}")
    module = importlib.import_module(f"{__package__}.{backend.module}")
    return getattr(module, backend.cls)
