"""One compile across processes: the disk tier's per-key lock (``DiskCache.key_lock``, its ``Tier`` lock).

Why a module of its own: the lock is a protocol of its own on the shard folders ``compile.disk`` opens
and checks. A lock file is made under a unique name, locked (``flock``), given its owner's record
(host/kernel, pid, its start time, uid, when: ``disk_files.owner_record``) and only then linked to
``.lock-<id>``; its holder unlinks it before letting go, so no lock file outlives its holder's
release. A waiter takes over at once when no process holds the file (a killed holder), or when the
record names a dead process on this host (a lock held on by a forked child), or when the lock is
older than its lifetime (``HIPEXPLORE_COMPILE_TIMEOUT`` + ``LOCK_LIFETIME_MARGIN_S``); it waits on
another user's lock at most ``HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT`` (one warning line then) and on
its own user's at most ``HIPEXPLORE_CACHE_LOCK_TIMEOUT``. In a private cache lock files are ``0600``
(no other user can open one to hold it). A lock never fails a compile: past a wait, the caller
compiles on its own. ``DiskKeyLocks`` relies on ``DiskCache``'s state (``writable``,
``shared``, ``directory``, ``_uid``, ``_lock_mode``) and helpers (``path_for``, ``_shard``,
``_count``); it is not meant to be used without it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Iterator

from .. import settings
from ..errors import CacheError
from .disk_files import (
    LOCK_PREFIX,
    O_CLOEXEC,
    PEEK_FLAGS,
    HeldLock,
    RootProblem,
    foreign_lock_message,
    lock_id,
    lock_state,
    owner_record,
    read_record,
    still_linked,
    try_flock,
    unlink_if_same,
    warn_once,
)
from .request import CacheKey

#: How often a waiter looks at a lock it waits on.
LOCK_POLL_S = 0.05
#: A lock is its holder's for the compile timeout plus this; older, a waiter takes it over.
LOCK_LIFETIME_MARGIN_S = 30.0


class DiskKeyLocks:
    """``key_lock`` (and the ``Tier`` ``lock``) of a ``DiskCache`` (one of its base classes)."""

    @staticmethod
    def lock_lifetime() -> float:
        """Seconds a key lock belongs to its holder: the compile timeout plus a margin."""
        return settings.COMPILE_TIMEOUT.get() + LOCK_LIFETIME_MARGIN_S

    @contextmanager
    def key_lock(self, key: CacheKey | str, timeout: float | None = None) -> Iterator[bool]:
        """Hold the per-key lock while compiling ``key``; yields True if held, False when it was
        not (the wait ran past ``timeout``, default ``HIPEXPLORE_CACHE_LOCK_TIMEOUT``; another
        user's lock was waited on for ``HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT``; a lock not this user's to
        take over; no lock file can be made). The caller compiles anyway: a lock never fails a
        compile. The lock is named by a SHA-256 of the full key, not by the (injectable) index
        digest, so keys that collide on a digest never wait on each other."""
        digest = lock_id(key)
        self.path_for(digest)  # validates a string id
        timeout = settings.CACHE_LOCK_TIMEOUT.get() if timeout is None else timeout
        if not self.writable:  # nothing this process compiles can be shared through this tier
            yield False
            return
        held: HeldLock | None = None
        try:
            held = self._acquire(digest, float(timeout))
        except (OSError, CacheError, RootProblem):
            held = None
        try:
            yield held is not None
        finally:
            if held is not None:
                held.release()

    def lock(self, key: CacheKey) -> AbstractContextManager[bool]:
        """The ``Tier`` lock: ``key_lock`` with its default timeout."""
        return self.key_lock(key)

    def _acquire(self, lid: str, timeout: float) -> HeldLock | None:
        with self._shard(lid, create=True) as shard_fd:
            dfd = os.dup(shard_fd)
        name = f"{LOCK_PREFIX}{lid}"
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        foreign = (start, min(timeout, settings.CACHE_FOREIGN_LOCK_WAIT.get()), self.directory / lid[:2] / name)
        try:
            while True:
                fd = self._try_link(dfd, name)
                if fd is not None:
                    held = HeldLock(dfd, name, fd)
                    dfd = -1
                    return held
                if not self._wait_on(dfd, name, deadline, foreign):
                    return None
        finally:
            if dfd >= 0:
                os.close(dfd)

    def _try_link(self, dfd: int, name: str) -> int | None:
        """Make a lock file under a unique name, lock it, write the owner's record, and only then
        link it as ``name``: a file at ``name`` is always locked by its maker and says who that is.
        The fd when this process now holds ``name``; None when another file is there."""
        while True:
            tmp = f"{name}.{secrets.token_hex(6)}"
            try:
                fd = os.open(
                    tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | O_CLOEXEC, self._lock_mode, dir_fd=dfd
                )
            except FileExistsError:
                continue
            keep = False
            try:
                if try_flock(fd, fcntl.LOCK_EX) is not True:
                    raise OSError(errno.ENOLCK, "cannot lock a new lock file")
                os.write(fd, owner_record())
                try:
                    os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                except FileExistsError:
                    return None
                except FileNotFoundError:  # swept between create and lock: again
                    continue
                keep = True
                return fd
            finally:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                if not keep:
                    os.close(fd)

    def _wait_on(self, dfd: int, name: str, deadline: float, foreign: tuple[float, float, Path]) -> bool:
        """Wait while the file at ``name`` is a live lock; True to try taking it again, False to
        go on without it (timed out, another user's lock waited on long enough, or not usable).
        ``foreign``: when the wait began, its bound on another user's lock, the lock's path."""
        try:
            fd = os.open(name, PEEK_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            return True  # released meanwhile
        except OSError:  # a link or something unreadable planted at the name
            self._count("locks_not_waited")
            return False
        try:
            st = os.fstat(fd)
            own = st.st_uid == self._uid
            if not stat.S_ISREG(st.st_mode) or (not own and self.shared != "group"):
                self._count("locks_not_waited")  # not a lock this user made: never waited on
                return False
            lifetime = self.lock_lifetime()
            while True:
                if not still_linked(dfd, name, st):
                    return True  # released (holders unlink first) or taken over
                free = try_flock(fd, fcntl.LOCK_SH)
                if free:
                    # no process holds a file that is still linked: its holder died (SIGKILL)
                    try:
                        if own and unlink_if_same(dfd, name, st):
                            self._count("locks_taken_over")
                            return True
                    finally:
                        fcntl.flock(fd, fcntl.LOCK_UN)
                    if not own:
                        self._count("locks_not_waited")  # another user's left-over: theirs to remove
                        return False
                    return True
                state = lock_state(read_record(fd), st, lifetime, time.time())
                if state != "live":  # dead holder (a child holds the flock on), or past its lifetime
                    if own and unlink_if_same(dfd, name, st):
                        self._count("locks_taken_over")
                        return True
                    if not own:
                        self._count("locks_not_waited")
                        return False
                    return True
                now = time.monotonic()
                if not own and now >= foreign[0] + foreign[1]:
                    self._count("locks_not_waited")
                    warn_once("foreign-lock", foreign_lock_message(foreign, st, read_record(fd), now))
                    return False
                if now >= deadline:
                    self._count("lock_timeouts")
                    return False
                time.sleep(LOCK_POLL_S)
        finally:
            os.close(fd)
