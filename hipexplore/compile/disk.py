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
  * One compile across processes (``key_lock``, ``disk_locks.py``): a per-key lock file, linked only
    once locked and recorded, taken over at once from a dead holder, waited on for a bounded time
    (another user's for at most ``HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT``). In a private cache lock files
    are ``0600``, so no other user can even open one to hold it. Pruning and ``clear`` remove lock
    files no live process holds. A lock never fails a compile: past a wait, the caller compiles on its own.
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
import os
import re
import secrets
import stat
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .. import settings
from ..errors import CacheError, ConfigError, warn_line
from .base import ObjectCode
from .disk_files import (
    HOST_TAG,
    O_CLOEXEC,
    SUFFIX,
    TEMP_PREFIX,
    DiskEntryInfo,
    RootProblem,
    Untrusted,
    current_umask,
    unusable_root,
    warn_once,
)
from .disk_files import STALE_TEMP_S  # noqa: F401 - by name here too (tests age temp files past it)
from .entry import (
    MAGIC,
    MAX_ENTRY_BYTES,
    Corrupt,
    decode_entry,
    encode_entry,
    object_code,
    read_entry_file,
    read_header,
)
from .request import KEY_SCHEMA, CacheKey
from .disk_locks import DiskKeyLocks
from .disk_maint import DiskMaintenance

__all__ = ["MAGIC", "DiskCache", "DiskEntryInfo", "Corrupt", "Untrusted", "decode_entry", "encode_entry", "read_header"]

#: errno values after which only the one write is skipped (a busy file system, or a bad path:
#: a directory at the entry path, a file or symlink where a shard folder should be).
SKIP_WRITE_ERRORS = frozenset(
    {
        errno.EINTR,
        errno.EAGAIN,
        errno.EBUSY,
        errno.EMFILE,
        errno.ENFILE,
        errno.ESTALE,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ELOOP,
        errno.ENOTEMPTY,
        errno.EEXIST,
    }
)
FULL_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT})

_PRUNE_LOCK = ".prune.lock"
TOUCH_INTERVAL_S = 1.0
DEFAULT_DISK_MAX_BYTES = settings.CACHE_DISK_MAX_BYTES.default

_DIGEST_RE = re.compile(r"[0-9A-Za-z_\-]{2,128}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | O_CLOEXEC


class DiskCache(DiskKeyLocks, DiskMaintenance):
    """Entry files under ``root``; thread-safe and safe across processes and users.

    ``get``/``put`` never raise for I/O trouble or hostile files: a read problem is a miss, a bad
    path skips one write, an unwritable root disables writes with one warning. A ``tiers.Tier``:
    its ``lock`` is ``key_lock`` (``disk_locks.DiskKeyLocks``); listing and maintenance are
    ``disk_maint.DiskMaintenance``'s.
    """

    name = "disk"

    def __init__(
        self,
        root: str | os.PathLike,
        max_bytes: int = DEFAULT_DISK_MAX_BYTES,
        shared: str | None = None,
        secret: str | bytes | None = None,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigError(f"disk cache max_bytes must be a non-negative integer number of bytes; got {max_bytes!r}")
        self.shared = settings.CACHE_SHARED.get() if shared is None else shared
        if self.shared not in ("private", "group"):
            raise ConfigError(f"disk cache shared must be 'private' or 'group'; got {self.shared!r}")
        secret = settings.CACHE_SECRET.get() if secret is None else secret
        self.secret: bytes | None = secret.encode("utf-8") if isinstance(secret, str) else (secret or None)
        if self.shared == "group" and not self.secret:
            raise ConfigError(
                f"{settings.CACHE_SHARED.name}=group needs a team secret in {settings.CACHE_SECRET.name} "
                "(entries in a team directory are authenticated with it)"
            )
        self.root = Path(root).expanduser()
        self.directory = self.root / f"v{KEY_SCHEMA}"
        self.max_bytes = max_bytes
        self.writable = True
        self.write_error = ""
        self._lock = threading.Lock()
        self._prune_guard = threading.Lock()
        self._estimated_bytes: int | None = None
        self._umask = current_umask()
        self._uid = os.geteuid()
        team = self.shared == "group"
        #: modes asked of open/mkdir (the umask narrows them): never writable by others than the
        #: owner (private) or the owner and the team's group; private lock files are the owner's alone
        self._file_mode = 0o664 if team else 0o644
        self._lock_mode = 0o644 if team else 0o600
        self._dir_mode = 0o2775 if team else 0o755
        #: each member of a team prunes only its own files, so each has its own prune lock
        self._prune_lock_name = f".prune-{self._uid}.lock" if team else _PRUNE_LOCK
        self.counters = {
            "write_errors": 0,
            "hits": 0,
            "misses": 0,
            "key_mismatches": 0,
            "corrupt": 0,
            "unreadable": 0,
            "untrusted": 0,
            "writes": 0,
            "pruned": 0,
            "full_disk_retries": 0,
            "lock_timeouts": 0,
            "locks_taken_over": 0,
            "locks_not_waited": 0,
            "locks_removed": 0,
        }

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r}, max_bytes={self.max_bytes}, shared={self.shared!r})"

    # -- paths and folders -------------------------------------------------------------------
    def path_for(self, digest: str) -> Path:
        if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
            raise CacheError(
                f"cache digest must be 2-128 characters of [0-9A-Za-z_-] to be a file name; got {digest!r}"
            )
        return self.directory / digest[:2] / f"{digest}{SUFFIX}"

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] += n

    def _refuse(self, what: Path, mode: int, why: str) -> None:
        warn_once(
            "untrusted",
            (
                f"hipexplore compile cache: not using {str(what)!r} (mode {stat.filemode(mode)}, {why}): other users "
                f"could plant code in it. Use a private directory, or set {settings.CACHE_SHARED.name}=group and "
                f"{settings.CACHE_SECRET.name} for a team directory."
            ),
        )
        raise Untrusted(f"{what} is {why}")

    def _check_folder(self, fd: int, path: Path, is_root: bool) -> None:
        """Private mode: a folder on the path from the root down must be this user's and writable
        by no one else. The root alone may instead be a sticky folder of this user or of root
        (like /tmp: others may add names to it, but cannot remove or replace this user's, and a
        version folder another user made first there is theirs, so it is refused)."""
        if self.shared == "group":
            return
        st = os.fstat(fd)
        mode = st.st_mode
        why = ""
        if is_root and mode & stat.S_ISVTX and st.st_uid in (self._uid, 0):
            pass
        elif st.st_uid != self._uid:
            why = f"owned by uid {st.st_uid}, not by this user"
        elif mode & stat.S_IWOTH:
            why = "world-writable without the sticky bit" if is_root else "world-writable"
        elif mode & stat.S_IWGRP:
            why = "group-writable"
        if why:
            self._refuse(path, mode, why)

    def _check_file(self, path: Path):
        """The check an entry file must pass before it is read (``entry.read_entry_file``)."""

        def check(st: os.stat_result) -> None:
            if self.shared == "group":
                return  # any member's entry: the HMAC decides
            if st.st_uid != self._uid:
                self._refuse(path, st.st_mode, f"owned by uid {st.st_uid}, not by this user")
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                self._refuse(path, st.st_mode, "writable by other users")

        return check

    def _open_dir(self, parent_fd: int | None, name: str, path: Path, create: bool) -> int:
        is_root = parent_fd is None
        flags = _DIR_FLAGS & ~os.O_NOFOLLOW if is_root else _DIR_FLAGS  # the root's own path may hold links
        made = False
        try:
            fd = os.open(name, flags, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, self._dir_mode & 0o777, dir_fd=parent_fd)
                made = True
            except FileExistsError:
                pass
            fd = os.open(name, flags, dir_fd=parent_fd)
        try:
            if made and self.shared == "group":  # setgid (the team's group is inherited), on the folder we opened
                st = os.fstat(fd)
                if st.st_uid == self._uid:
                    os.fchmod(fd, self._dir_mode & ~self._umask)
            self._check_folder(fd, path, is_root)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _make_root_parents(self) -> None:
        missing = []
        p = self.root.parent
        while not p.exists() and p != p.parent:
            missing.append(p)
            p = p.parent
        for q in reversed(missing):
            try:
                os.mkdir(q, 0o755)  # never the umask's 0777 for folders above a cache
            except FileExistsError:
                pass

    def _open_top(self, create: bool) -> list[int]:
        """fds of the root and the version folder, each checked. Raises FileNotFoundError,
        Untrusted, or RootProblem (the tier cannot be used at all)."""
        fds: list[int] = []
        try:
            try:
                if create and not os.path.lexists(self.root):
                    self._make_root_parents()
                fds.append(self._open_dir(None, str(self.root), self.root, create))
                fds.append(self._open_dir(fds[-1], self.directory.name, self.directory, create))
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise RootProblem(exc) from None
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    @contextmanager
    def _shard_named(self, shard: str, create: bool) -> Iterator[int]:
        """An fd of the shard folder ``shard``, every level opened relative to the one above and
        checked. Raises Untrusted, RootProblem, or OSError: ENOENT (not there), ENOTDIR/ELOOP (a
        file or link planted)."""
        fds = self._open_top(create)
        try:
            fds.append(self._open_dir(fds[-1], shard, self.directory / shard, create))
            yield fds[-1]
        finally:
            for fd in fds:
                os.close(fd)

    def _shard(self, digest: str, create: bool):
        return self._shard_named(digest[:2], create)

    def _walk(self) -> Iterator[tuple[str, int, list[tuple[str, os.stat_result]]]]:
        """Each shard folder once: (name, fd, [(file name, lstat)]); the fd stays open (and is the
        folder that was checked) while the caller's loop body runs. Links, files and untrusted
        folders among the shards are skipped."""
        try:
            top = self._open_top(create=False)
        except (OSError, Untrusted, RootProblem):
            return
        try:
            with os.scandir(top[-1]) as it:
                shards = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
            for shard in shards:
                try:
                    sfd = self._open_dir(top[-1], shard, self.directory / shard, create=False)
                except (OSError, Untrusted):
                    continue
                try:
                    files = []
                    with os.scandir(sfd) as it:
                        names = [e.name for e in it]
                    for name in names:
                        try:
                            files.append((name, os.stat(name, dir_fd=sfd, follow_symlinks=False)))
                        except OSError:
                            continue
                    yield shard, sfd, files
                finally:
                    os.close(sfd)
        except OSError:
            return
        finally:
            for fd in top:
                os.close(fd)

    def _usable(self) -> str:
        """'' when the root and version folder can be walked (or are absent), else why not."""
        try:
            fds = self._open_top(create=False)
        except FileNotFoundError:
            return ""
        except Untrusted as exc:
            return f"not used: {exc}"
        except RootProblem as exc:
            return f"{self.directory}: {exc.error.strerror or exc.error}"
        for fd in fds:
            os.close(fd)
        return ""

    # -- read --------------------------------------------------------------------------------
    def get(self, key: CacheKey) -> ObjectCode | None:
        """The stored object code for ``key``, or None (absent, corrupt, hostile, other key)."""
        path = self.path_for(key.digest)
        name = path.name
        try:
            with self._shard(key.digest, create=False) as fd:
                data, st = read_entry_file(
                    name, fd, limit=self.max_bytes or MAX_ENTRY_BYTES, check=self._check_file(path)
                )
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
        except RootProblem:
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
            except RootProblem as problem:
                self._disable_writes(problem.error)
                return False
            except OSError as exc:
                if exc.errno in FULL_DISK_ERRORS and attempt == 0:
                    self._count("full_disk_retries")
                    self.make_room(len(data))
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
            estimate = self._sweep(time.time())
            with self._lock:
                self._estimated_bytes = estimate
        if estimate > self.max_bytes > 0:
            self.prune()
        return True

    def _write(self, digest: str, name: str, data: bytes) -> None:
        tmp = f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}.part"
        with self._shard(digest, create=True) as dfd:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | O_CLOEXEC, self._file_mode, dir_fd=dfd
            )
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
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

    def make_room(self, needed: int) -> None:
        """After ENOSPC: drop left-over temp and lock files and prune this user's entries to half
        of what they take (or less). Public: its tests pin this rule without filling a disk."""
        self._sweep(time.time())
        total = sum(e.size for e in self.listing() if e.kind == "entry" and e.own)
        self.prune(target_bytes=max(0, min(total // 2, total - 2 * needed)))

    def _disable_writes(self, exc: OSError) -> None:
        with self._lock:
            if not self.writable:
                return
            self.writable = False
            self.write_error = f"{type(exc).__name__}: {exc}"
        warn_line(unusable_root(self.root, exc))
