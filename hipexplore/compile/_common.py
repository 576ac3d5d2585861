"""Helpers shared by the compiler backends: file stamps, the dump directory, the API trace.

A *stamp* fingerprints the file a compiler actually loads or runs (size, mtime and a SHA-256 of the
whole file), so a reinstalled toolkit with the same version string, or a ``CC`` wrapper edited past
its first MiB, still changes the cache key. The hash is computed once per (path, size, mtime,
ctime, inode): later calls cost one ``stat``, in this process and (``memo.py``) in later ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .. import settings
from ..errors import ConfigError
from ..files import own_folder, write_below
from .request import CompileRequest, canonical_json

_stamp_cache: dict[tuple[str, int, int, int, int], str] = {}
_stamp_lock = threading.Lock()


def file_stamp(path: str | os.PathLike) -> str:
    """``size=..;sha256=..`` of the whole file ``path`` (after resolving symlinks).

    Cached per (path, size, mtime, ctime, inode) so repeated identity() calls only cost a stat; the
    mtime is not part of the stamp, so a copy with the same content has the same identity.
    """
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)  # ctime: a write with the mtime put back
    with _stamp_lock:
        hit = _stamp_cache.get(key)
    if hit is not None:
        return hit
    from . import memo

    stamp = memo.load("stamp", key)  # a new process: the same file version was hashed before
    if not isinstance(stamp, str):
        h = hashlib.sha256()
        with open(real, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        stamp = f"size={st.st_size};sha256={h.hexdigest()}"
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > 1_000_000_000:  # not a file still being written
            memo.store("stamp", key, stamp)
    with _stamp_lock:
        _stamp_cache[key] = stamp
    return stamp


def directory_stamp(path: str | os.PathLike) -> str:
    """A digest of a directory listing (names, sizes, mtimes): cheap, changes on any reinstall."""
    real = os.path.realpath(path)
    entries = []
    for name in sorted(os.listdir(real)):
        try:
            st = os.stat(os.path.join(real, name))
        except OSError:
            continue
        entries.append([name, st.st_size, st.st_mtime_ns])
    digest = hashlib.sha256(canonical_json(entries)).hexdigest()
    return f"files={len(entries)};listing_sha256={digest}"


def loaded_libraries(pattern: str) -> list[str]:
    """Paths of shared objects mapped into this process whose file name matches ``pattern``."""
    rx = re.compile(pattern)
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if path.startswith("/") and rx.search(os.path.basename(path)) and path not in found:
                        found.append(path)
    except OSError:  # not Linux: callers fall back to other evidence
        pass
    return found


# --------------------------------------------------------------------------- dump directory
_dump_lock = threading.Lock()
_dump_dir: Path | None = None


def dump_dir() -> Path:
    """Where diagnostics write files: ``$HIPEXPLORE_DUMP_DIR`` (made if missing; it may be a shared
    folder: what is written into it goes into this user's own stem folders, ``_stem_folder``),
    else one private temp dir per process."""
    global _dump_dir
    env = settings.DUMP_DIR.get()
    if env is not None:
        try:
            env.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"HIPEXPLORE_DUMP_DIR {str(env)!r}: cannot make the folder ({exc.strerror or exc})"
            ) from None
        return env
    with _dump_lock:
        if _dump_dir is None:
            _dump_dir = Path(tempfile.mkdtemp(prefix="hipexplore-dump-"))
        return _dump_dir


def dump_stem(request: CompileRequest) -> str:
    """A file-name stem that says what was compiled and is unique per request content."""
    digest = hashlib.sha256(canonical_json(request.record())).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.name)[:60].strip("_") or "kernel"
    return f"{request.compiler}-{name}-{request.target}-{digest}"


@contextlib.contextmanager
def _stem_folder(request: CompileRequest) -> Iterator[tuple[int, Path]]:
    """(descriptor, path) of ``<dump_dir>/<stem>``: this user's own folder, made by mkdir (the stem
    is predictable, so in a shared dump folder someone else may have made it first, or planted a
    link: ``files.own_folder`` refuses both in one line). Every write goes through the descriptor."""
    root = dump_dir()
    stem = dump_stem(request)
    try:
        root_fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"cannot open the dump folder {str(root)!r}: {exc.strerror or exc}") from None
    try:
        fd = own_folder(root_fd, stem, what="dump", shown=str(root / stem))
    finally:
        os.close(root_fd)
    try:
        yield fd, root / stem
    finally:
        os.close(fd)


def _dump_name(name: str) -> str:
    """A source or header name as a path inside the stem folder: an absolute name or one with '..'
    (``#include "../common/x.h"``) must not leave it."""
    parts = ["_up_" if p == ".." else p for p in name.split("/") if p not in ("", ".")]
    return "/".join(parts) or "source"


def dump_sources(request: CompileRequest) -> list[Path]:
    """Write the source and its headers into ``<dump_dir>/<stem>/``; return the paths written."""
    written = []
    with _stem_folder(request) as (fd, folder):
        for src in (request.source, *request.headers):
            written.append(write_below(fd, _dump_name(src.name), src.text, what="dump", shown_dir=str(folder)))
        written.append(
            write_below(fd, "options.txt", "\n".join(request.options) + "\n", what="dump", shown_dir=str(folder))
        )
    return written


def dump_text(request: CompileRequest, suffix: str, text: str | bytes) -> Path:
    """Write one diagnostic artefact (assembly, PTX) next to the dumped sources."""
    with _stem_folder(request) as (fd, folder):
        return write_below(fd, f"{dump_stem(request)}{suffix}", text, what="dump", shown_dir=str(folder))


# --------------------------------------------------------------------------- API trace
class Trace:
    """Records compiler API calls (name, arguments, result, seconds) when ``trace`` is requested.

    The lines go into the compile log, never to stdout.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.lines: list[str] = []

    def call(self, name: str, fn: Callable[..., Any], *args: Any, show: Iterable[Any] = ()) -> Any:
        if not self.enabled:
            return fn(*args)
        start = time.perf_counter()
        result = fn(*args)
        seconds = time.perf_counter() - start
        shown = ", ".join(_short(a) for a in show)
        self.lines.append(f"[trace] {name}({shown}) -> {_short(_status(result))} in {seconds * 1e3:.2f} ms")
        return result

    def note(self, line: str) -> None:
        if self.enabled:
            self.lines.append(f"[trace] {line}")

    def text(self) -> str:
        return "\n".join(self.lines)


def _status(result: Any) -> Any:
    if isinstance(result, tuple) and result:
        return result[0]
    return result


def _short(value: Any, limit: int = 120) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def join_log(*parts: str) -> str:
    """Concatenate non-empty log parts with newlines."""
    return "\n".join(p.rstrip("\n") for p in parts if p and p.strip())


# --------------------------------------------------------------------------- diagnostics
_COMGR_SOURCE = re.compile(r"(?:[^\s:'\"()]*/)?comgr-[A-Za-z0-9]+/input/CompileSource")
_COMGR_HEADER = re.compile(r"(?:[^\s:'\"()]*/)?comgr-[A-Za-z0-9]+/include/([^\s:'\"()]+)")
_MISSING_HEADER = re.compile(
    r"""'([^'\n]+)' file not found|cannot open source file "([^"\n]+)"|could not open source file "([^"\n]+)\""""
)


def user_diagnostics(log: str, request: CompileRequest) -> str:
    """The compiler's log in the user's terms: hiprtc (comgr) compiles copies of the texts in a temp
    folder of its own (``.../comgr-xxxx/input/CompileSource``, ``.../include/<header>``), so its
    diagnostics name those; they are rewritten to the source's and headers' names (the lines are
    the user's: comgr adds its runtime header with ``-include``, not into the text). A missing
    header gets a hint: the runtime compilers search no folders of the user's unless told."""
    if not log:
        return log
    out = _COMGR_SOURCE.sub(lambda m: request.source.name, log)
    out = _COMGR_HEADER.sub(lambda m: m.group(1), out)
    missing = sorted({next(g for g in m.groups() if g) for m in _MISSING_HEADER.finditer(out)})
    if missing:
        names = ", ".join(repr(n) for n in missing)
        out = join_log(
            out,
            f"hint: {names} was not found: hipexplore gives the compiler no include folder of yours unless told; give the folder "
            f"that holds it with `-I DIR` / `--include-dir DIR` (Python: include_dirs=[...], which keys every "
            f"file found there) or the file itself with `--header FILE` (headers=[...])",
        )
    return out
