"""hip-python's two layouts, chosen by what is installed: 6.x-7.x (``hip.hip``/``hip.hiprtc`` with
``hip.chip.DLL``/``hip.chiprtc.DLL``) and 10.x (``rocm.bindings.hip``/``rocm.bindings.hiprtc``).

Why a module: the hiprtc backend and the HIP device both have to point hip-python at a library it
would not find itself (ROCm 5.2's ``libamdhip64.so.5``, which holds hiprtc too) *before* its first
call, and the two layouts do that differently. 6.x-7.x expose a settable ``DLL`` on the Cython
loader module. 10.x resolves each library lazily, on its first call, through
``rocm.bindings.util.paths.get_library_path(shortname)`` (imported at call time), so wrapping that
function is the override; once a library is loaded the choice is final, which ``point()`` reports
instead of pretending. 6.x-7.x is used whenever its ``hip.chiprtc`` is importable (what CI pins);
hip-python 10's ``hip`` package is a compatibility shim without it, so then 10.x is used.
"""

from __future__ import annotations

import threading
from importlib import import_module
from typing import Any

from ..errors import CompilerUnavailable

CLASSIC, ROCM_BINDINGS = "hip-python 6.x-7.x (hip.chiprtc)", "hip-python >= 10 (rocm.bindings)"
#: our short names -> (6.x-7.x loader module, 10.x shortname for get_library_path)
_LIBS = {"hiprtc": ("hip.chiprtc", "hiprtc"), "hip": ("hip.chip", "amdhip64")}
_lock = threading.Lock()
_chosen: dict[str, str] = {}  # 10.x: shortname -> the library we made get_library_path return


def layout() -> str:
    """Which layout is installed (CLASSIC first), or "" when neither imports."""
    try:
        chiprtc = import_module("hip.chiprtc")
        if hasattr(chiprtc, "DLL"):
            return CLASSIC
    except ImportError:
        pass
    try:
        import_module("rocm.bindings.util.paths")
        return ROCM_BINDINGS
    except ImportError:
        return ""


def point(kind: str, library: str) -> None:
    """Make hip-python load ``library`` for ``kind`` ("hiprtc" or "hip"); raises CompilerUnavailable
    when that is no longer possible (10.x already chose another one for this process)."""
    legacy, short = _LIBS[kind]
    which = layout()
    with _lock:
        if which == CLASSIC:
            mod = import_module(legacy)
            if mod.DLL != library.encode():
                mod.DLL = library.encode()
            return
        if which != ROCM_BINDINGS:
            from ..extras import message

            raise CompilerUnavailable(
                message(
                    "hip-python's " + kind,
                    "hip",
                    detail="hip-python is not importable: looked for hip.chiprtc (6.x-7.x) and rocm.bindings (>= 10)",
                )
            )
        previous = _chosen.get(short)
        if previous is not None:
            if previous != library:
                raise CompilerUnavailable(
                    f"hip-python 10 already loads {previous!r} for {short} in this process; "
                    f"cannot switch to {library!r}"
                )
            return
        paths = import_module("rocm.bindings.util.paths")
        original = getattr(paths.get_library_path, "__wrapped__", paths.get_library_path)
        _chosen[short] = library

        def get_library_path(shortname: str, bundled_location: Any = None) -> bytes:
            if shortname in _chosen:
                return _chosen[shortname].encode()
            return original(shortname, bundled_location)

        get_library_path.__wrapped__ = original  # type: ignore[attr-defined]
        paths.get_library_path = get_library_path


def module(kind: str) -> Any:
    """The Python binding module for ``kind``: ``hip.hiprtc``/``hip.hip`` or ``rocm.bindings.*``."""
    name = {"hiprtc": "hiprtc", "hip": "hip"}[kind]
    if layout() == ROCM_BINDINGS:
        return import_module(f"rocm.bindings.{name}")
    return import_module(f"hip.{name}")


def version() -> str:
    """The installed hip-python (or rocm-bindings-hip) distribution version."""
    from importlib.metadata import PackageNotFoundError, version as _v

    for dist in ("hip-python", "rocm-bindings-hip"):
        try:
            return _v(dist)
        except PackageNotFoundError:
            continue
    return "unknown"
