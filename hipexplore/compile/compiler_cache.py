"""The compilers' own caches as explicit, recorded state (issue 45).

Why: a compile cache's saving used to be measured against compilers as they were before they
cached on their own. In 2026 they do:

* **NVRTC** (12.9+; 13.5 here) keeps PTX and cubins in the CUDA driver's compute cache, on by
  default: ``--no-cache`` turns it off for one compile, ``CUDA_CACHE_DISABLE=1`` for the process;
  ``CUDA_CACHE_PATH`` and ``CUDA_CACHE_MAXSIZE`` place and bound it (``strings libnvrtc.so.13``:
  ``[nvrtc cache] ENV: CUDA_CACHE_DISABLE``, ``fail to load driver lib``). It needs a loaded
  driver: on a host without one it is inert, so only a GPU host shows it. Automatic precompiled
  headers (12.8+) are built only with ``-pch`` (checked with NVRTC 13.5 here: no PCH message
  without it, "creating/using precompiled header file" in a per-process temp folder with it);
  ``NVRTC_DISABLE_PCH`` set at NVRTC's start turns them off.
* **COMGR** (hiprtc's compiler library) has a cache of its own in newer ROCm (``AMD_COMGR_CACHE``,
  ``AMD_COMGR_CACHE_DIR``, ``AMD_COMGR_CACHE_POLICY``, read once per process); ROCm 5.2's comgr
  2.4 has none (its library holds no ``AMD_COMGR_CACHE``: that is how it is told apart).
* **Triton** caches in ``TRITON_CACHE_DIR`` (default ``~/.triton/cache``); hipexplore's Triton
  backend keeps it off (``always_compile`` in a private folder) unless asked.
* The host C compiler has none (hipexplore runs no ccache).

``HIPEXPLORE_COMPILER_CACHE`` (``default``: what each compiler does by itself, as above; ``on``;
``off``) chooses, ``HIPEXPLORE_NVRTC_PCH`` adds ``-pch``; a request's own ``--no-cache``/``-pch``
wins and is keyed (it is one of its options). ``OwnCache`` is the resulting state of one compile:
recorded in every cache event (``compiler_cache``), in provenance and in the report. What the
compiler is told (an option, a variable of the compiling process) comes from here too, so the state
recorded and the state used cannot drift apart.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Mapping

from .. import settings
from ..errors import ConfigError

#: NVRTC options that turn its cache off, and that build precompiled headers automatically.
NVRTC_NO_CACHE = ("--no-cache", "-no-cache")
NVRTC_PCH = ("-pch", "--pch")
#: The variables each compiler's own cache reads (recorded with every compile that could use it).
ENV = {
    "nvrtc": ("CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE", "NVRTC_DISABLE_PCH"),
    "hiprtc": ("AMD_COMGR_CACHE", "AMD_COMGR_CACHE_DIR", "AMD_COMGR_CACHE_POLICY"),
    "triton": ("TRITON_CACHE_DIR", "TRITON_HOME"),
    "host": (),
}
#: Where a replay pass points each compiler's cache (below one folder of its own), so passes never
#: write into (or read from) the user's own compiler caches.
PASS_DIRS = {
    "nvrtc": ("CUDA_CACHE_PATH", "nv"),
    "hiprtc": ("AMD_COMGR_CACHE_DIR", "comgr"),
    "triton": ("TRITON_CACHE_DIR", "triton"),
}
#: What the driver finds at ``/proc/driver/nvidia/version`` when the NVIDIA kernel driver is loaded:
#: without it libcuda cannot start, and NVRTC's cache stays inert.
NVIDIA_DRIVER = "/proc/driver/nvidia/version"


@dataclass(frozen=True)
class OwnCache:
    """One compiler's own cache as a compile uses it.

    ``cache``: ``on``, ``off``, ``none`` (the compiler has no cache) or ``unknown`` (a compiler
    hipexplore does not know); ``why``: what decided it; ``live``: False where the cache is on but
    cannot work here (NVRTC without a driver), else True (None: not applicable); ``options`` and
    ``env``: what hipexplore adds to the compiler call and to the compiling process for it."""

    compiler: str
    cache: str
    why: str
    live: bool | None = None
    directory: str = ""
    limit: str = ""
    pch: str = ""
    options: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def label(self) -> str:
        """One line, the ``compiler_cache`` of an event: ``on: NVRTC's default; inert here: no CUDA
        driver; PCH off``."""
        text = self.why if self.cache == "none" else f"{self.cache}: {self.why}"  # a none's why says "none" itself
        if self.cache == "on" and self.live is False:
            text += "; inert here: no CUDA driver"
        return text + (f"; PCH {self.pch}" if self.pch else "")

    def record(self) -> dict:
        return {
            "compiler": self.compiler,
            "cache": self.cache,
            "why": self.why,
            "live": self.live,
            "directory": self.directory,
            "limit": self.limit,
            "pch": self.pch,
            "options": list(self.options),
            "env": dict(self.env),
            "label": self.label(),
        }


def mode() -> str:
    """``HIPEXPLORE_COMPILER_CACHE``: ``default``, ``on`` or ``off``."""
    return settings.COMPILER_CACHE.get()


_driver: list[bool] = []


def driver_present() -> bool:
    """Whether the NVIDIA kernel driver is loaded here (NVRTC's cache needs libcuda to start)."""
    if not _driver:
        _driver.append(os.path.exists(NVIDIA_DRIVER))
    return _driver[0]


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def _nvrtc(options: tuple[str, ...], env: Mapping[str, str], chosen: str, pch_mode: str) -> OwnCache:
    add: list[str] = []
    if any(o in NVRTC_NO_CACHE for o in options):
        cache, why = "off", "--no-cache in the request's options"
    elif chosen == "off":
        cache, why = "off", "HIPEXPLORE_COMPILER_CACHE=off (hipexplore passes --no-cache)"
        add.append("--no-cache")
    elif env.get("CUDA_CACHE_DISABLE", "").strip() == "1":
        cache, why = "off", "CUDA_CACHE_DISABLE=1"
    else:
        cache, why = "on", "NVRTC's default" if chosen == "default" else "HIPEXPLORE_COMPILER_CACHE=on"
    if env.get("NVRTC_DISABLE_PCH", "").strip():
        pch = "off (NVRTC_DISABLE_PCH)"
    elif any(o in NVRTC_PCH for o in options):
        pch = "on (-pch in the request's options)"
    elif pch_mode == "on":
        pch = "on (HIPEXPLORE_NVRTC_PCH=on)"
        add.append("-pch")
    else:
        pch = "off"
    return OwnCache(
        "nvrtc",
        cache,
        why,
        live=driver_present() if cache == "on" else None,
        directory=env.get("CUDA_CACHE_PATH", "").strip() or _home(".nv", "ComputeCache"),
        limit=env.get("CUDA_CACHE_MAXSIZE", "").strip() or "the driver's default",
        pch=pch,
        options=tuple(add),
    )


_scan_lock = threading.Lock()
_scans: dict[tuple, bool] = {}


def comgr_has_cache(path: str) -> bool:
    """Whether the comgr library at ``path`` knows ``AMD_COMGR_CACHE`` (the variable its cache reads):
    ROCm 5.2's comgr 2.4 does not. Read once per file version (path, size, mtime, inode), here
    and on disk (``compile/memo.py``), so a new process does not read 60 MB again."""
    from . import memo

    try:
        st = os.stat(path)
    except OSError:
        return False
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _scan_lock:
        if key in _scans:
            return _scans[key]
    found = memo.load("comgr-cache", key)
    if not isinstance(found, bool):
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                found = m.find(b"AMD_COMGR_CACHE") >= 0
        except (OSError, ValueError):
            return False
        memo.store("comgr-cache", key, found)
    with _scan_lock:
        _scans[key] = found
    return found


def _hiprtc(env: Mapping[str, str], chosen: str, comgr: str, version: str) -> OwnCache:
    if not comgr:
        return OwnCache("hiprtc", "unknown", "its comgr was not inspected (the compiler's own_cache says)")
    if not comgr_has_cache(comgr):
        what = f"comgr {version}" if version else "its comgr"
        return OwnCache("hiprtc", "none", f"none in this ROCm: {what} has no cache of its own")
    directory = env.get("AMD_COMGR_CACHE_DIR", "").strip() or os.path.join(
        env.get("XDG_CACHE_HOME", "").strip() or _home(".cache"), "comgr"
    )
    limit = env.get("AMD_COMGR_CACHE_POLICY", "").strip() or "comgr's default policy (30 GB, pruned at exit)"
    if chosen == "off":
        return OwnCache(
            "hiprtc",
            "off",
            "HIPEXPLORE_COMPILER_CACHE=off (AMD_COMGR_CACHE=0 in the compiling process)",
            directory=directory,
            limit=limit,
            env=(("AMD_COMGR_CACHE", "0"),),
        )
    if env.get("AMD_COMGR_CACHE", "").strip() == "0":
        return OwnCache("hiprtc", "off", "AMD_COMGR_CACHE=0", directory=directory, limit=limit)
    why = "COMGR's default" if chosen == "default" else "HIPEXPLORE_COMPILER_CACHE=on"
    return OwnCache("hiprtc", "on", why, live=True, directory=directory, limit=limit)


def _triton(env: Mapping[str, str], chosen: str) -> OwnCache:
    directory = env.get("TRITON_CACHE_DIR", "").strip() or os.path.join(
        env.get("TRITON_HOME", "").strip() or os.path.expanduser("~"), ".triton", "cache"
    )
    if chosen == "on":
        return OwnCache("triton", "on", "HIPEXPLORE_COMPILER_CACHE=on", live=True, directory=directory)
    return OwnCache(
        "triton",
        "off",
        "hipexplore compiles with always_compile (Triton by itself: on, in TRITON_CACHE_DIR)",
        directory=directory,
    )


def state(
    compiler: str,
    options: tuple[str, ...] = (),
    environ: Mapping[str, str] | None = None,
    comgr: str = "",
    comgr_version: str = "",
) -> OwnCache:
    """The own cache of ``compiler`` for a compile with ``options`` in a process with ``environ``
    (default this one's), as ``HIPEXPLORE_COMPILER_CACHE``/``HIPEXPLORE_NVRTC_PCH`` in ``environ``
    choose. hiprtc: ``comgr`` is the comgr library file (its identity's), ``comgr_version`` its version."""
    env = os.environ if environ is None else environ
    chosen, pch = _modes(env)
    if compiler == "nvrtc":
        return _nvrtc(tuple(options), env, chosen, pch)
    if compiler == "hiprtc":
        return _hiprtc(env, chosen, comgr, comgr_version)
    if compiler == "triton":
        return _triton(env, chosen)
    if compiler == "host":
        return OwnCache("host", "none", "none: the host C compiler has no cache of its own (no ccache is run)")
    return OwnCache(compiler, "unknown", "hipexplore does not know whether this compiler caches on its own")


def label_for(compiler: Any, options: tuple[str, ...] = ()) -> str:
    """The ``OwnCache.label`` of a compile with ``options`` by ``compiler`` (any ``Compiler``; one
    without ``own_cache``, such as a caller's wrapper, gets the state its name has here)."""
    own = getattr(compiler, "own_cache", None)
    found = own(tuple(options), compiler.identity()) if own is not None else state(compiler.name, tuple(options))
    return str(found.label())


def _modes(env: Mapping[str, str]) -> tuple[str, str]:
    """The two settings as ``env`` holds them (this process's: through ``settings``, so a bad value
    is one line naming the variable)."""
    if env is os.environ:
        return settings.COMPILER_CACHE.get(), settings.NVRTC_PCH.get()
    out = []
    for setting in (settings.COMPILER_CACHE, settings.NVRTC_PCH):
        raw = (env.get(setting.name) or "").strip()
        try:
            out.append(setting.parse(raw) if raw else setting.default)
        except ValueError:
            raise ConfigError(
                f"environment variable {setting.name}={raw!r} is invalid: expected {setting.allowed}"
            ) from None
    return out[0], out[1]


def environment(compiler: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of the variables ``compiler``'s own cache reads, as set (recorded with a compile)."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in ENV.get(compiler, ()) if env.get(k) is not None}


def process_environment(compiler: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a compiling process must have in its environment for the chosen state (comgr reads
    ``AMD_COMGR_CACHE`` once per process: hiprtc workers get ``AMD_COMGR_CACHE=0`` when it is off)."""
    env = os.environ if environ is None else environ
    if compiler == "hiprtc" and _modes(env)[0] == "off":
        return {"AMD_COMGR_CACHE": "0"}
    return {}


def _names(compiler: str) -> tuple[str, ...]:
    return (settings.COMPILER_CACHE.name, settings.NVRTC_PCH.name, *ENV.get(compiler, ()))


_ENCODED: dict[str, tuple] = {}


def signature(compiler: str, environ: Mapping[str, str] | None = None) -> tuple:
    """What a compiling process's own cache depends on (a worker started with other values is
    retired: ``isolation``; a cache event's label is remembered per value). This process's: the raw
    values in one pass (every lookup asks, memory hits too)."""
    data = getattr(os.environ, "_data", None) if environ is None else None
    if data is None:
        env = os.environ if environ is None else environ
        return tuple(env.get(n) for n in _names(compiler))
    keys = _ENCODED.get(compiler)
    if keys is None:
        keys = _ENCODED[compiler] = tuple(os.environ.encodekey(n) for n in _names(compiler))
    return tuple(map(data.get, keys))


def pass_environment(compiler: str, chosen: str, folder: str) -> dict[str, str]:
    """The variables a replay pass's compiler processes get: the mode, and the compiler's own cache
    placed below ``folder`` (a run's own folder: passes never touch the user's compiler caches)."""
    env = {settings.COMPILER_CACHE.name: chosen}
    if compiler in PASS_DIRS:
        name, sub = PASS_DIRS[compiler]
        env[name] = os.path.join(folder, sub)
    return env


def backend_kwargs(compiler: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a backend is built with for its own cache: Triton's folder when it is on."""
    if compiler != "triton":
        return {}
    own = _triton(os.environ if environ is None else environ, _modes(os.environ if environ is None else environ)[0])
    return {"triton_cache_dir": own.directory} if own.cache == "on" else {}


_checked: dict[tuple, str] = {}


def check(compiler: str, options: tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> None:
    """Refuse, in one line, a folder the compiler's own cache cannot use (``CUDA_CACHE_PATH`` a
    file or not writable, ``CUDA_CACHE_MAXSIZE`` not a byte count, ``TRITON_CACHE_DIR`` or
    ``AMD_COMGR_CACHE_DIR`` likewise) when that cache is on: before any compile, so nothing runs
    with a cache silently off. Remembered per value."""
    env = os.environ if environ is None else environ
    if compiler == "nvrtc":
        own = _nvrtc(tuple(options), env, *_modes(env))
        if own.cache == "on":
            _check_size("CUDA_CACHE_MAXSIZE", env.get("CUDA_CACHE_MAXSIZE", ""))
            _check_folder("CUDA_CACHE_PATH", env.get("CUDA_CACHE_PATH", ""))
    elif compiler == "triton" and _modes(env)[0] == "on":
        _check_folder("TRITON_CACHE_DIR", env.get("TRITON_CACHE_DIR", ""))
    elif compiler == "hiprtc" and _modes(env)[0] != "off" and env.get("AMD_COMGR_CACHE", "").strip() != "0":
        _check_folder("AMD_COMGR_CACHE_DIR", env.get("AMD_COMGR_CACHE_DIR", ""))


def _check_size(name: str, raw: str) -> None:
    text = raw.strip()
    if text and not (text.isdigit() and len(text) <= 19):
        raise ConfigError(
            f"environment variable {name}={raw!r} is invalid: expected a byte count (a non-negative integer)"
        )


def _check_folder(name: str, raw: str) -> None:
    value = raw.strip()
    if not value:
        return
    why = _checked.get((name, value))
    if why is None:
        why = _checked[(name, value)] = _folder_problem(value)
    if why:
        raise ConfigError(
            f"environment variable {name}={value!r} {why}; expected a folder the compiler's own cache "
            f"can write (or unset it, or HIPEXPLORE_COMPILER_CACHE=off)"
        )


def _folder_problem(value: str) -> str:
    """ "" when the folder (or the nearest existing folder above it) takes a new file, else why not."""
    path = os.path.abspath(os.path.expanduser(value))
    if os.path.lexists(path) and not os.path.isdir(path):
        return "is a file, not a folder"
    here = path
    while not os.path.lexists(here):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if not os.path.isdir(here):
        return f"cannot be made: {here!r} is a file"
    try:  # access() says yes for root on read-only mounts and /proc: make (and remove) a file there
        fd, probe = tempfile.mkstemp(prefix=".hipexplore-", suffix=".check", dir=here)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "" if here == path else f" (the nearest existing folder {here!r})"
        return f"cannot be written{where}: {exc.strerror or exc}"
    return ""


__all__ = [
    "ENV",
    "NVRTC_NO_CACHE",
    "NVRTC_PCH",
    "OwnCache",
    "backend_kwargs",
    "check",
    "comgr_has_cache",
    "driver_present",
    "environment",
    "label_for",
    "mode",
    "pass_environment",
    "process_environment",
    "signature",
    "state",
]
