"""Small facts about the compilers, remembered on disk across processes and re-verified cheaply.

Why (issue 49, item 6): the first cache hit of a new process was slower than the compile it
replaced (a CLI miss 6.4 s, its first hit 9.8 s at load 19): every process found its compiler
again, loaded it (hiprtc: a worker process) and hashed its library files (NVRTC: 100 MB) only to
build the key, and a hit needs no compiler at all. Each of those facts depends only on files whose
(path, size, mtime, ctime, inode) say whether they changed, so it is stored here once, under a key
that holds those stat signatures, and a later process re-``stat``s instead of recomputing.

What is remembered (by its callers): a file's content stamp (``_common.file_stamp``), a compiler's
identity (``identity``: each file it names and the folders they sit in are re-``stat``ed on every
use), whether a comgr library has a cache of its own.

Trust: a memo decides cache keys, so it is read only from this user's own folder
(``$XDG_CACHE_HOME/hipexplore-memo`` or ``~/.cache/hipexplore-memo``, made by ``files.own_folder``:
this user's, writable by nobody else, no link followed), each file opened without following a link,
a regular file of this user's that nobody else can write, at most 1 MiB, its key compared in full
(the file name is only a digest). Anything else is a miss. A memo never fails a compile: every
error is a miss (reading) or nothing stored (writing).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from typing import Any, Callable

FORMAT = 1
MAX_BYTES = 1 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_lock = threading.Lock()
_seen: dict[str, Any] = {}


def folder() -> str:
    """Where the memos live (this user's cache folder, beside hipexplore's own cache default)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hipexplore-memo")


def _name(kind: str, key: Any) -> tuple[str, str]:
    canonical = json.dumps([FORMAT, kind, key], sort_keys=True, separators=(",", ":"), default=str)
    return f"{kind}-{hashlib.sha256(canonical.encode()).hexdigest()[:40]}.json", canonical


def _open_folder(create: bool) -> int | None:
    from ..files import own_folder

    base = os.path.dirname(folder())
    try:
        if create:
            os.makedirs(base, mode=0o700, exist_ok=True)
        parent = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return None
    try:
        if not create:
            try:
                fd = os.open(
                    os.path.basename(folder()),
                    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC,
                    dir_fd=parent,
                )
            except OSError:
                return None
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                os.close(fd)
                return None
            return fd
        return own_folder(parent, os.path.basename(folder()), what="memo", shown=folder())
    except Exception:  # noqa: BLE001 - a memo folder we may not use is a miss, never an error
        return None
    finally:
        os.close(parent)


def load(kind: str, key: Any) -> Any:
    """The value stored under (``kind``, ``key``), or None."""
    name, canonical = _name(kind, key)
    with _lock:
        if name in _seen:
            return _seen[name]
    fd = _open_folder(create=False)
    if fd is None:
        return None
    try:
        f = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    except OSError:
        os.close(fd)
        return None
    try:
        st = os.fstat(f)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > MAX_BYTES:
            return None
        data = json.loads(os.read(f, MAX_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    finally:
        os.close(f)
        os.close(fd)
    if not isinstance(data, dict) or data.get("key") != canonical:
        return None
    value = data.get("value")
    with _lock:
        _seen[name] = value
    return value


def store(kind: str, key: Any, value: Any) -> None:
    """Remember ``value`` (JSON) under (``kind``, ``key``); silently nothing when it cannot be written."""
    from ..files import write_file

    name, canonical = _name(kind, key)
    with _lock:
        _seen[name] = value
    fd = _open_folder(create=True)
    if fd is None:
        return
    try:
        write_file(
            name,
            json.dumps({"key": canonical, "value": value}),
            what="memo",
            dir_fd=fd,
            durable=False,
            shown=os.path.join(folder(), name),
        )
    except Exception:  # noqa: BLE001 - a memo that cannot be written is only slower next time
        pass
    finally:
        os.close(fd)


def signature(path: str) -> list | None:
    """(size, mtime, ctime, inode, device) of ``path`` (a link's target), None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def remembered(kind: str, key: Any, paths: Callable[[Any], list[str]], compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered under (``kind``, ``key``) together with the signatures of the paths
    ``paths(value)`` names: a later call re-``stat``s them and recomputes on any difference."""
    held = load(kind, key)
    if isinstance(held, dict) and "value" in held and isinstance(held.get("checks"), list):
        if all(isinstance(c, list) and len(c) == 2 and signature(str(c[0])) == c[1] for c in held["checks"]):
            return held["value"]
    value = compute()
    watched = sorted({p for p in paths(value) if isinstance(p, str) and os.path.isabs(p)})
    store(kind, key, {"value": value, "checks": [[p, signature(p)] for p in watched]})
    return value


#: Variables that change which compiler library a process finds (besides each backend's own inputs).
SEARCH_ENV = ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH", "PATH")


def _code_signatures(*modules: str) -> list:
    here = os.path.dirname(os.path.abspath(__file__))
    return [[m, signature(os.path.join(here, f"{m}.py"))] for m in modules]


def identity(
    compiler: str, context: Any, compute: Callable[[], Any], watch: Callable[[dict], list[str]] | None = None
) -> Any:
    """A compiler's identity (``request.CompilerIdentity``), remembered across processes.

    ``context``: what besides files decides it (the backend's arguments and the variables it
    reads); ``watch(record)``: files it was computed from that it does not name (the backend's
    ``identity_files``). The key adds the interpreter and its path, the variables that steer library searches,
    and the signatures of hipexplore's own code that builds identities (an upgrade of it recomputes).
    Re-verified on every use: each file the identity names and its folder (each entry of a named
    folder: device libraries), the interpreter's site-packages folders (a package installed or
    upgraded changes them) and ``/etc/ld.so.cache``."""
    import sys

    from .request import CompilerIdentity

    key = [
        compiler,
        context,
        sys.executable,
        list(sys.path),
        [[k, os.environ.get(k)] for k in SEARCH_ENV],
        _code_signatures(compiler if compiler != "triton" else "tritonc", "_common", "inputs", "request", "memo"),
    ]

    def paths(record: Any) -> list[str]:
        found = [
            p for p in (record.get("library", ""), *(v for _k, v in record.get("extra", ()))) if isinstance(p, str)
        ]
        found = [p for p in found if os.path.isabs(p) and os.path.exists(p)]
        around = [os.path.dirname(p) for p in found]  # a new library appearing beside one changes its folder
        inside = []
        for p in found:
            if os.path.isdir(p):
                try:
                    inside += [os.path.join(p, n) for n in sorted(os.listdir(p))[:512]]
                except OSError:
                    pass
        packages = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]  # pip installs
        return [*found, *around, *inside, *packages, "/etc/ld.so.cache", *(watch(record) if watch else ())]

    record = remembered("identity", key, paths, lambda: compute().record())
    if not isinstance(record, dict):  # pragma: no cover - remembered returns what compute made or a stored dict
        return compute()
    try:
        return CompilerIdentity(
            name=record["name"],
            version=record["version"],
            library=record["library"],
            stamp=record["stamp"],
            extra=tuple((str(k), str(v)) for k, v in record["extra"]),
        )
    except (KeyError, TypeError, ValueError):
        return compute()


__all__ = ["folder", "identity", "load", "remembered", "signature", "store"]
