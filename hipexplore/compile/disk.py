"""The persistent tier of the compile cache: one authenticated file per entry.

Why hand-written instead of ``diskcache``: its SQLite index is not safe on NFS homes, answers
"database is locked" to concurrent tuning processes, and stores pickles no one can inspect. The
GPU compile caches (MIGraphX #5100, Triton, CuPy, cuda.core) converged on plain files published
with ``os.replace`` and a checksum, as here. The entry format is in ``entry.py``.

Layout: ``<root>/v<KEY_SCHEMA>/<digest[:2]>/<digest>.hxc``; temp files ``.tmp-<host>-<pid>-*``
and per-key locks ``.lock-<id>`` live beside the entries.

Trust (issue 25): nothing is done by path below the root. The root is opened (its own path may
be a link), every level below it with ``O_DIRECTORY | O_NOFOLLOW`` relative to the opened level
above, and each opened folder is checked on its descriptor (``fstat``) before the next is opened.
Entries are read, written, listed and removed relative to the shard folder's descriptor, so a
folder swapped for a symlink mid-walk is never followed (the walk keeps the folder it checked).

  * Private (default): the root must be this user's and writable by no one else, or a sticky
    folder of this user or of root (like ``/tmp``: others may add names to it, but cannot remove
    or replace this user's); the version and shard folders must be this user's and writable by no
    one else (no sticky exception); entry files must be this user's and writable by no one else.
    Anything else is not used (one warning naming it and its mode). Entries then carry a SHA-256,
    which only detects damage: the folder checks are what keep others' code out.
  * Team (``HIPEXPLORE_CACHE_SHARED=group``): folders others can write are fine because every
    entry must carry an HMAC under ``HIPEXPLORE_CACHE_SECRET``: code from a folder another user
    can write is loaded only when it verifies under the team's secret.
  * Files and folders this process makes are never writable by others than the owner (private)
    or the owner and group (team); the umask can only narrow that.
  * Other users' files are never counted against the cap, never pruned and never deleted.

Guarantees:
  * Writers publish atomically (temp file in the same folder, fsync, ``os.replace``); readers see
    the old entry, the new one, or nothing.
  * One compile across processes (``key_lock``): a lock file is made under a unique name, locked
    (``flock``), given its owner's record (host/kernel, pid, its start time, uid, when) and only
    then linked to ``.lock-<id>``; its holder unlinks it before letting go, so no lock file
    outlives its holder's release. A waiter takes over at once when no process holds the file
    (a killed holder), or when the record names a dead process on this host (a lock held on by a
    forked child), or when the lock is older than its lifetime (``HIPEXPLORE_COMPILE_TIMEOUT`` +
    30 s); it waits on another user's lock at most ``FOREIGN_LOCK_WAIT_S`` and on its own user's at
    most ``HIPEXPLORE_CACHE_LOCK_TIMEOUT``. In a private cache lock files are ``0600``, so no
    other user can even open one to hold it. Pruning and ``clear`` remove lock files no live
    process holds. A lock never fails a compile: past a wait, the caller compiles on its own.
  * Every read is hostile-safe (``entry.read_entry_file``): FIFOs and devices are misses, reads
    are bounded by the declared size, every header field is type-checked.
  * One bad path never turns the tier off: a directory at an entry path, a file or symlink where
    a shard folder should be, skips that one read or write. Only a root that cannot be written
    (read-only, no permission, a file) turns writes off, with ONE ``RuntimeWarning``; a full disk
    first prunes and retries.
  * Size is capped (this user's entries + temp files, each counted by the blocks it occupies, at
    most its length: a sparse file costs what it holds): hits refresh the mtime; the pruner
    removes the oldest of this user's entries, the temp files of this user's writers that are
    gone (dead pid on this host, or an hour old) and lock files no process holds.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import socket
import stat
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import settings
from ..errors import CacheError, ConfigError
from .base import ObjectCode
from .entry import (MAGIC, MAX_ENTRY_BYTES, Corrupt, Unauthenticated, decode_entry, encode_entry, object_code, read_entry_file,
                    read_entry_path, read_header)
from .request import KEY_SCHEMA, CacheKey

__all__ = ["MAGIC", "DiskCache", "DiskEntryInfo", "Corrupt", "decode_entry", "encode_entry", "read_header"]

#: errno values after which only the one write is skipped (a busy file system, or a bad path:
#: a directory at the entry path, a file or symlink where a shard folder should be).
SKIP_WRITE_ERRORS = frozenset({errno.EINTR, errno.EAGAIN, errno.EBUSY, errno.EMFILE, errno.ENFILE, errno.ESTALE,
                               errno.EISDIR, errno.ENOTDIR, errno.ELOOP, errno.ENOTEMPTY, errno.EEXIST})
FULL_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT})

SUFFIX = ".hxc"
_TEMP_PREFIX = ".tmp-"
_LOCK_PREFIX = ".lock-"
PRUNE_TO_FRACTION = 0.9
TOUCH_INTERVAL_S = 1.0
#: Temp files older than this are left-overs whoever wrote them (another host's dead writer).
STALE_TEMP_S = 3600.0
DEFAULT_DISK_MAX_BYTES = settings.CACHE_DISK_MAX_BYTES.default

_DIGEST_RE = re.compile(r"[0-9A-Za-z_\-]{2,128}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_HOST = re.sub(r"[^0-9A-Za-z_]", "_", socket.gethostname())[:40] or "host"
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(what: str, message: str) -> None:
    with _warned_lock:
        if (what, message) in _warned:
            return
        _warned.add((what, message))
    warnings.warn(message, RuntimeWarning, stacklevel=4)


class Untrusted(CacheError):
    """A cache folder other users can write to, in private mode."""


class _RootProblem(Exception):
    """The root or the version folder cannot be opened or made: the whole tier, not one path."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def lock_id(key: CacheKey | str) -> str:
    """The name of a key's lock (and Redis lease): SHA-256 of the full canonical key."""
    return key if isinstance(key, str) else hashlib.sha256(key.canonical).hexdigest()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@dataclass(frozen=True)
class DiskEntryInfo:
    """One file in a shard folder as the listing sees it (nothing read or verified).
    ``kind``: ``entry``, ``temp``, ``lock``, or ``foreign`` (not a regular file, or a stray name)."""

    path: Path
    digest: str
    size: int
    mtime: float
    kind: str = "entry"


class DiskCache:
    """Entry files under ``root``; thread-safe and safe across processes and users.

    ``get``/``put`` never raise for I/O trouble or hostile files: a read problem is a miss, a bad
    path skips one write, an unwritable root disables writes with one warning.
    """

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_DISK_MAX_BYTES,
                 shared: str | None = None, secret: str | bytes | None = None) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigError(f"disk cache max_bytes must be a non-negative integer number of bytes; got {max_bytes!r}")
        self.shared = settings.CACHE_SHARED.get() if shared is None else shared
        if self.shared not in ("private", "group"):
            raise ConfigError(f"disk cache shared must be 'private' or 'group'; got {self.shared!r}")
        secret = settings.CACHE_SECRET.get() if secret is None else secret
        self.secret: bytes | None = secret.encode("utf-8") if isinstance(secret, str) else (secret or None)
        if self.shared == "group" and not self.secret:
            raise ConfigError(f"{settings.CACHE_SHARED.name}=group needs a team secret in {settings.CACHE_SECRET.name} "
                              "(entries in a team directory are authenticated with it)")
        self.root = Path(root).expanduser()
        self.directory = self.root / f"v{KEY_SCHEMA}"
        self.max_bytes = max_bytes
        self.writable = True
        self.write_error = ""
        self._lock = threading.Lock()
        self._prune_guard = threading.Lock()
        self._estimated_bytes: int | None = None
        self._umask = _umask()
        self.counters = {"write_errors": 0, "hits": 0, "misses": 0, "key_mismatches": 0, "corrupt": 0,
                         "unreadable": 0, "untrusted": 0, "writes": 0, "pruned": 0, "full_disk_retries": 0,
                         "lock_timeouts": 0}

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r}, max_bytes={self.max_bytes}, shared={self.shared!r})"

    # -- paths and folders -------------------------------------------------------------------
    def path_for(self, digest: str) -> Path:
        if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
            raise CacheError(f"cache digest must be 2-128 characters of [0-9A-Za-z_-] to be a file name; got {digest!r}")
        return self.directory / digest[:2] / f"{digest}{SUFFIX}"

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] += n

    def _check_folder(self, fd: int, path: Path) -> None:
        """Private mode: the folder must be ours (below the root) and writable by us alone; sticky
        folders like /tmp are fine (others cannot remove or replace what we put in them, and a
        version folder they made first is theirs, so it is refused)."""
        if self.shared == "group":
            return
        st = os.fstat(fd)
        mode = st.st_mode
        why = ""
        if mode & stat.S_ISVTX:
            pass  # like /tmp: others cannot remove or replace what this user puts there
        elif mode & stat.S_IWOTH:
            why = "world-writable without the sticky bit"
        elif mode & stat.S_IWGRP:
            why = "group-writable"
        elif st.st_uid != os.geteuid() and path != self.root:
            why = f"owned by uid {st.st_uid}, not by this user"
        if why:
            _warn_once("untrusted", (
                f"hipexplore compile cache: not using {str(path)!r} (mode {stat.filemode(mode)}, {why}): other users "
                f"could plant code in it. Use a private directory, or set {settings.CACHE_SHARED.name}=group and "
                f"{settings.CACHE_SECRET.name} for a team directory."))
            raise Untrusted(f"{path} is {why}")

    def _folder_mode(self) -> int:
        if self.shared == "group":
            return 0o2777  # setgid: the team's group is inherited; the umask decides the rest
        return 0o755  # never group/other-writable, or the check above would refuse our own folder

    def _open_dir(self, parent_fd: int | None, name: str, path: Path, create: bool) -> int:
        flags = _DIR_FLAGS if parent_fd is not None else (_DIR_FLAGS & ~os.O_NOFOLLOW)  # the root may be a link
        try:
            fd = os.open(name, flags, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, self._folder_mode(), dir_fd=parent_fd)
                if self.shared == "group" and parent_fd is not None:
                    os.chmod(name, 0o2777 & ~self._umask, dir_fd=parent_fd)  # mkdir drops setgid on some systems
            except FileExistsError:
                pass
            fd = os.open(name, flags, dir_fd=parent_fd)
        try:
            self._check_folder(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextmanager
    def _shard(self, digest: str, create: bool) -> Iterator[int]:
        """An fd of the digest's shard folder, reached without following a symlink below the root.
        Raises Untrusted, or OSError: ENOENT (not there), ENOTDIR/ELOOP (a file or link planted)."""
        fds: list[int] = []
        try:
            try:
                if create and not self.root.exists():
                    os.makedirs(self.root, self._folder_mode() & 0o777, exist_ok=True)
                fds.append(self._open_dir(None, str(self.root), self.root, create))
                fds.append(self._open_dir(fds[-1], self.directory.name, self.directory, create))
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise _RootProblem(exc) from None
            fds.append(self._open_dir(fds[-1], digest[:2], self.directory / digest[:2], create))
            yield fds[-1]
        finally:
            for fd in fds:
                os.close(fd)

    # -- read --------------------------------------------------------------------------------
    def get(self, key: CacheKey) -> ObjectCode | None:
        """The stored object code for ``key``, or None (absent, corrupt, hostile, other key)."""
        name = self.path_for(key.digest).name
        try:
            with self._shard(key.digest, create=False) as fd:
                data, st = read_entry_file(name, fd, limit=self.max_bytes or MAX_ENTRY_BYTES)
                header, binary = decode_entry(data, self.secret)
                if header["key"].encode("utf-8") != key.canonical:
                    self._count("key_mismatches")
                    self._count("misses")
                    return None
                if time.time() - st.st_mtime > TOUCH_INTERVAL_S:
                    try:
                        os.utime(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        pass
        except FileNotFoundError:
            self._count("misses")
            return None
        except Untrusted:
            self._count("untrusted")
            self._count("misses")
            return None
        except _RootProblem:
            self._count("unreadable")
            self._count("misses")
            return None
        except Corrupt:
            self._count("corrupt")
            self._count("misses")
            return None
        except OSError:  # ELOOP (a link), ENOTDIR, EACCES, EIO, stale NFS handle: all a miss
            self._count("unreadable")
            self._count("misses")
            return None
        self._count("hits")
        return object_code(header, binary)

    # -- write -------------------------------------------------------------------------------
    def put(self, key: CacheKey, code: ObjectCode) -> bool:
        """Publish an entry atomically; False if not stored (too large, a bad path, writes off)."""
        if not self.writable:
            return False
        name = self.path_for(key.digest).name
        data = encode_entry(key, code, secret=self.secret)
        if len(data) > min(self.max_bytes or MAX_ENTRY_BYTES, MAX_ENTRY_BYTES):
            return False
        for attempt in (0, 1):
            try:
                self._write(key.digest, name, data)
                break
            except Untrusted:
                self._count("untrusted")
                return False
            except _RootProblem as problem:
                self._disable_writes(problem.error)
                return False
            except OSError as exc:
                if exc.errno in FULL_DISK_ERRORS and attempt == 0:
                    self._count("full_disk_retries")
                    self._make_room(len(data))
                    continue
                if exc.errno in SKIP_WRITE_ERRORS:  # this write is lost; the tier stays on
                    self._count("write_errors")
                    return False
                self._disable_writes(exc)
                return False
        with self._lock:
            self.counters["writes"] += 1
            estimate = self._estimated_bytes
            if estimate is not None:
                estimate = self._estimated_bytes = estimate + len(data)
        if estimate is None:  # first write of this process: one scan (left-overs cleaned), then a running estimate
            self._clean_temps(time.time())
            estimate = sum(e.size for e in self.listing() if e.kind in ("entry", "temp"))
            with self._lock:
                self._estimated_bytes = estimate
        if estimate > self.max_bytes > 0:
            self.prune()
        return True

    def _write(self, digest: str, name: str, data: bytes) -> None:
        tmp = f"{_TEMP_PREFIX}{_HOST}-{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}.part"
        with self._shard(digest, create=True) as dfd:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o666, dir_fd=dfd)  # the umask applies, as to any file the user creates
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                tmp = ""
            finally:
                if tmp:
                    try:
                        os.unlink(tmp, dir_fd=dfd)
                    except OSError:
                        pass

    def _make_room(self, needed: int) -> None:
        """After ENOSPC: drop left-over temp files and prune to half of what is there (or less)."""
        self._clean_temps(time.time())
        total = sum(e.size for e in self.listing() if e.kind == "entry")
        self.prune(target_bytes=max(0, min(total // 2, total - 2 * needed)))

    def _disable_writes(self, exc: OSError) -> None:
        with self._lock:
            if not self.writable:
                return
            self.writable = False
            self.write_error = f"{type(exc).__name__}: {exc}"
        reason = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        warnings.warn(f"hipexplore compile cache: cannot write to {str(self.root)!r} ({reason}: {exc}); continuing with the "
                      "memory cache only. Set HIPEXPLORE_CACHE_DIR to a writable directory, or HIPEXPLORE_CACHE_DISK=0 to "
                      "silence this.", RuntimeWarning, stacklevel=4)

    # -- one compile across processes ------------------------------------------------------------
    @contextmanager
    def key_lock(self, key: CacheKey | str, timeout: float | None = None) -> Iterator[bool]:
        """Hold the per-key lock while compiling ``key``; yields True if held, False when the
        wait ran past ``timeout`` (default ``HIPEXPLORE_CACHE_LOCK_TIMEOUT``) or the lock file
        cannot be made (the caller compiles anyway: a lock never fails a compile). The lock is
        named by a SHA-256 of the full key, not by the (injectable) index digest, so keys that
        collide on a digest never wait on each other."""
        from filelock import FileLock, Timeout

        digest = lock_id(key)
        self.path_for(digest)  # validates a string id
        timeout = settings.CACHE_LOCK_TIMEOUT.get() if timeout is None else timeout
        if not self.writable:  # nothing this process compiles can be shared through this tier
            yield False
            return
        lock = None
        try:
            with self._shard(digest, create=True):
                pass
            lock = FileLock(str(self.directory / digest[:2] / f"{_LOCK_PREFIX}{digest}"), timeout=timeout,
                            mode=0o666 & ~self._umask)
            lock.acquire()
        except Timeout:
            self._count("lock_timeouts")
            lock = None
        except (OSError, CacheError, _RootProblem):
            lock = None
        try:
            yield lock is not None
        finally:
            if lock is not None:
                lock.release()

    # -- maintenance -------------------------------------------------------------------------
    def listing(self) -> Iterator[DiskEntryInfo]:
        """Every file in the shard folders, classified; vanished files and unreadable or linked
        folders are skipped (nothing is followed or opened)."""
        try:
            if self.directory.is_symlink():
                return
            shards = list(os.scandir(self.directory))
        except OSError:
            return
        for shard in shards:
            try:
                if not shard.is_dir(follow_symlinks=False):
                    continue
                files = list(os.scandir(shard.path))
            except OSError:
                continue
            for f in files:
                try:
                    st = f.stat(follow_symlinks=False)
                except OSError:
                    continue
                name = f.name
                if name.startswith(_TEMP_PREFIX):
                    kind, digest = "temp", ""
                elif name.startswith(_LOCK_PREFIX):
                    kind, digest = "lock", name[len(_LOCK_PREFIX):]
                elif name.endswith(SUFFIX):
                    kind, digest = "entry", name[: -len(SUFFIX)]
                else:
                    kind, digest = "foreign", ""
                if not stat.S_ISREG(st.st_mode):
                    kind = "foreign"
                yield DiskEntryInfo(Path(f.path), digest, st.st_size, st.st_mtime, kind)

    def entries(self) -> Iterator[DiskEntryInfo]:
        """Regular entry files currently present (listing only)."""
        return (i for i in self.listing() if i.kind == "entry")


    @staticmethod
    def writer_gone(name: str, mtime: float, now: float) -> bool:
        """True when the temp file's writer cannot still be writing it: its pid is dead on this
        host, or the file is older than ``STALE_TEMP_S`` (another host, or an unknown name)."""
        if now - mtime > STALE_TEMP_S:
            return True
        m = re.match(rf"{re.escape(_TEMP_PREFIX)}(\w+?)-(\d+)-", name)
        if not m or m.group(1) != _HOST:
            return False
        pid = int(m.group(2))
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def _clean_temps(self, now: float) -> int:
        removed = 0
        for info in [i for i in self.listing() if i.kind == "temp"]:
            if self.writer_gone(info.path.name, info.mtime, now):
                try:
                    info.path.unlink()
                    removed += 1
                except OSError:
                    pass
        return removed

    def stats(self) -> dict:
        infos = list(self.listing())
        with self._lock:
            counters = dict(self.counters)
        entries = [i for i in infos if i.kind == "entry"]
        temps = [i for i in infos if i.kind == "temp"]
        return {
            "root": str(self.root), "directory": str(self.directory), "max_bytes": self.max_bytes,
            "shared": self.shared, "authenticated": self.secret is not None,
            "writable": self.writable, "write_error": self.write_error,
            "entries": len(entries), "bytes": sum(i.size for i in entries) + sum(i.size for i in temps),
            "entry_bytes": sum(i.size for i in entries), "temp_files": len(temps), "temp_bytes": sum(i.size for i in temps),
            "foreign_files": sum(1 for i in infos if i.kind == "foreign"),
            **{f"disk_{k}": v for k, v in counters.items()},
        }

    def prune(self, target_bytes: int | None = None) -> int:
        """Remove least-recently-used entries until entries + temp files are at most
        ``target_bytes`` (default: 90 % of the cap), and the temp files of writers that are gone.
        Skips, returning 0, while another thread or process holds the prune lock. A lock file
        that cannot be opened (planted, a link) does not stop pruning: one warning, prune anyway."""
        from filelock import FileLock, Timeout

        if target_bytes is None:
            target_bytes = int(self.max_bytes * PRUNE_TO_FRACTION)
        if not self._prune_guard.acquire(blocking=False):
            return 0
        try:
            path = self.directory / ".prune.lock"
            lock = FileLock(str(path), timeout=0, mode=0o666 & ~self._umask)
            try:
                lock.acquire()
            except Timeout:
                return 0
            except OSError as exc:
                _warn_once(str(path), f"hipexplore compile cache: cannot use the prune lock {str(path)!r} ({exc}); "
                                      "pruning without it (remove that file)")
                return self._prune_locked(target_bytes)
            try:
                return self._prune_locked(target_bytes)
            finally:
                lock.release()
        finally:
            self._prune_guard.release()

    def _prune_locked(self, target_bytes: int) -> int:
        self._clean_temps(time.time())
        infos = list(self.listing())
        entries = sorted((i for i in infos if i.kind == "entry"), key=lambda i: i.mtime)
        total = sum(i.size for i in infos if i.kind in ("entry", "temp"))
        removed = 0
        for info in entries:
            if total <= target_bytes:
                break
            try:
                info.path.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            total -= info.size
            removed += 1
        with self._lock:
            self._estimated_bytes = total
            self.counters["pruned"] += removed
        return removed

    def verify(self) -> dict:
        """Read every entry safely and check it (tag, lengths, header types, file name); remove
        what is not a valid entry. ``problems`` lists (path, what, action); ``failed`` counts
        files that could not be read or removed (the command line exits non-zero then)."""
        ok = corrupt = removed = failed = unauthenticated = 0
        problems: list[tuple[str, str, str]] = []
        for info in self.listing():
            if info.kind in ("temp", "lock"):
                continue
            why = ""
            if info.kind == "foreign":
                why = "not a regular entry file"
            else:
                try:
                    data, _ = read_entry_path(info.path)
                    header, _ = decode_entry(data, self.secret)
                    if header["digest"] != info.digest:
                        why = f"file name {info.digest} does not match stored digest {header['digest']}"
                except FileNotFoundError:
                    continue
                except Unauthenticated as exc:  # a teammate's under another secret, or forged: a miss, kept
                    unauthenticated += 1
                    problems.append((str(info.path), str(exc), "left in place"))
                    continue
                except Corrupt as exc:
                    why = str(exc)
                except OSError as exc:
                    why = f"unreadable ({exc.strerror or exc})"
            if not why:
                ok += 1
                continue
            corrupt += 1
            try:
                if info.path.is_dir() and not info.path.is_symlink():
                    raise IsADirectoryError(errno.EISDIR, "a directory (left in place)")
                info.path.unlink()
                removed += 1
                problems.append((str(info.path), why, "removed"))
            except OSError as exc:
                failed += 1
                problems.append((str(info.path), why, f"NOT removed: {exc.strerror or exc}"))
        with self._lock:
            self._estimated_bytes = None
        return {"checked": ok + corrupt + unauthenticated, "ok": ok, "corrupt": corrupt, "removed": removed,
                "failed": failed, "unauthenticated": unauthenticated, "problems": problems}

    def clear(self) -> dict:
        """Remove every entry, temp file and lock file; returns counts ``removed`` (entries),
        ``temp_removed``, ``failed`` and the first ``error`` (e.g. a read-only mount)."""
        removed = temp_removed = failed = 0
        error = ""
        for info in list(self.listing()):
            if info.kind == "foreign" and info.path.is_dir() and not info.path.is_symlink():
                continue
            try:
                info.path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed += 1
                error = error or f"{info.path}: {exc.strerror or exc}"
                continue
            if info.kind == "entry":
                removed += 1
            elif info.kind == "temp":
                temp_removed += 1
        with self._lock:
            self._estimated_bytes = None
        return {"removed": removed, "temp_removed": temp_removed, "failed": failed, "error": error}

