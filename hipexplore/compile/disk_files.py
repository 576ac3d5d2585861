"""The disk tier's files and lock records, below ``compile.disk``'s folder walking.

What is here works on one opened folder or file at a time: a key's lock name, what a file is
charged, the owner record a lock file holds and whether its holder is alive (pid, process start
time, host), ``flock`` without blocking, unlinking a name only while it is still the file that was
checked, what kind of file a shard entry is, and a held key lock. ``compile.disk.DiskCache`` opens
the folders (descriptor by descriptor, ``O_NOFOLLOW``) and decides; these never follow a path.

Its public names are the API ``disk.py`` and ``disk_maint.py`` use; what starts with an underscore
(the node id, a pid's start time, the warned-once set) is this module's own and is never imported
elsewhere (``tests/compile/test_private_names.py`` keeps it so).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import socket
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import CacheError, warn_line
from .request import CacheKey

SUFFIX = ".hxc"
#: a temp file is ``<TEMP_PREFIX><HOST_TAG>-<pid>-<random><SUFFIX>.part``: who wrote it, so that a dead
#: writer's left-overs can be told from a live one's (public: tests make such files by that name)
TEMP_PREFIX = ".tmp-"
#: a key lock is ``<LOCK_PREFIX><lock_id>`` beside the entries (``classify`` tells it from an entry)
LOCK_PREFIX = ".lock-"
#: ``os.O_CLOEXEC`` where the platform has it: no descriptor here leaks into a compiler's child
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: how a lock file is opened to be looked at: never through a link, never blocking on a planted FIFO
PEEK_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | O_CLOEXEC
#: Temp files older than this are left-overs whoever wrote them (another host's dead writer).
STALE_TEMP_S = 3600.0
PRUNE_TO_FRACTION = 0.9
#: this host in temp-file names (``TEMP_PREFIX``)
HOST_TAG = re.sub(r"[^0-9A-Za-z_]", "_", socket.gethostname())[:40] or "host"
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_once(what: str, message: str) -> None:
    """Warn ``message`` (one line) once per process for each (what, message): a tier that goes on
    without a folder or a lock says so once, not on every lookup."""
    with _warned_lock:
        if (what, message) in _warned:
            return
        _warned.add((what, message))
    warn_line(message)


def unusable_root(root: Path, exc: OSError) -> str:
    """The one line of a cache root that cannot be written: what, why, and what to set. It names
    ``HIPEXPLORE_CACHE_DIR=...`` when the root is the one that variable gives (the value to fix)."""
    import errno

    try:
        env = settings.CACHE_DIR.get()
    except Exception:  # noqa: BLE001 - a bad value is refused where it is read; here it only words a message
        env = None
    named = env is not None and Path(env).expanduser() == root
    what = f"{settings.CACHE_DIR.name}={str(root)!r}" if named else f"the compile cache folder {str(root)!r}"
    reason = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return (
        f"{what} is not usable ({reason}: {exc.strerror or exc}): the disk cache is off for this run (memory cache "
        f"only); set {'it' if named else settings.CACHE_DIR.name} to a writable folder, or HIPEXPLORE_CACHE_DISK=0 "
        f"to silence this."
    )


class Untrusted(CacheError):
    """A cache folder or entry file that users other than this one can change, in private mode."""


class RootProblem(Exception):
    """The root or the version folder cannot be opened or made: the whole tier, not one path."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def lock_id(key: CacheKey | str) -> str:
    """The name of a key's lock (and Redis lease): SHA-256 of the full canonical key."""
    return key if isinstance(key, str) else hashlib.sha256(key.canonical).hexdigest()


def current_umask() -> int:
    """The process's umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def charged_bytes(st: os.stat_result) -> int:
    """What a file costs against the cap: the bytes its blocks occupy, at most its length (a
    sparse file costs what it holds, not what it claims; block rounding is not charged)."""
    blocks = getattr(st, "st_blocks", None)
    if blocks is None:
        return st.st_size
    return min(st.st_size, blocks * 512)


# -- lock owners -----------------------------------------------------------------------------------
_node_id: str | None = None


def _node() -> str:
    """Where a pid means something: host name, kernel boot and pid namespace (two containers on
    one host, or two hosts with one name, do not read each other's pids)."""
    global _node_id
    if _node_id is None:
        parts = [socket.gethostname()]
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                parts.append(f.read().strip())
        except OSError:
            pass
        try:
            parts.append(os.readlink("/proc/self/ns/pid"))
        except OSError:
            pass
        _node_id = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return _node_id


def _proc_start(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc), "" for a zombie, None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields and fields[0] in (b"Z", b"X"):
        return ""
    return fields[19].decode() if len(fields) > 19 else None


def _pid_alive(pid: int, start: str | None) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        pass
    except OSError:
        return True
    now_start = _proc_start(pid)
    if now_start == "":  # a zombie holds nothing
        return False
    return not (start and now_start and start != now_start)  # a new process under a reused pid


def owner_record() -> bytes:
    """What a lock file says about its holder: node, host, pid, its start time, uid, since when."""
    pid = os.getpid()
    return json.dumps(
        {
            "node": _node(),
            "host": socket.gethostname(),
            "pid": pid,
            "start": _proc_start(pid) or "",
            "uid": os.geteuid(),
            "since": time.time(),
        },
        sort_keys=True,
    ).encode()


def read_record(fd: int) -> dict | None:
    """The owner record of an opened lock file; None when it is absent or not a valid record
    (an older hipexplore's lock, or a forged one: every field used is type-checked)."""
    try:
        raw = os.pread(fd, 4096, 0)
        record = json.loads(raw)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    pid, since = record.get("pid"), record.get("since")
    if (
        not isinstance(pid, int)
        or isinstance(pid, bool)
        or not isinstance(since, (int, float))
        or isinstance(since, bool)
        or not math.isfinite(since)
    ):
        return None
    return record


def foreign_lock_message(
    foreign: tuple[float, float, Path], st: os.stat_result, record: dict | None, now: float
) -> str:
    """The one line a waiter warns after giving up on another user's lock (``foreign``: when the
    wait began, its bound, the lock's path): how long, on whose lock, and what happens now."""
    start, bound, path = foreign
    try:
        import pwd

        user = f" ({pwd.getpwuid(st.st_uid).pw_name})"
    except (ImportError, KeyError):
        user = ""
    host = (
        re.sub(r"[^\x20-\x7e]", "?", str(record.get("host", "?"))[:64]) if record else ""
    )  # one line, whatever it holds
    holder = f"pid {record['pid']} on {host}" if record else "no owner record"
    return (
        f"hipexplore compile cache: waited {now - start:.1f} s on the lock {str(path)!r} that uid {st.st_uid}{user} "
        f"holds ({holder}); compiling without it (a wait on another user's lock lasts at most {bound:g} s, "
        f"{settings.CACHE_FOREIGN_LOCK_WAIT.name}; the entry is still verified before use)"
    )


def lock_state(record: dict | None, st: os.stat_result, lifetime: float, now: float) -> str:
    """``live``, ``dead`` (its holder is gone: a dead pid on this node) or ``expired``. Without a
    record (an older hipexplore's lock), the file's mtime is its start."""
    since = st.st_mtime if record is None else float(record["since"])
    if since > now + 60.0:  # a start in the future (a forged record): the file's own time instead
        since = min(since, st.st_mtime)
    if now - since > lifetime:
        return "expired"
    if record is not None and record.get("node") == _node():
        start = record.get("start")
        if not _pid_alive(record["pid"], start if isinstance(start, str) else None):
            return "dead"
    return "live"


def try_flock(fd: int, how: int) -> bool | None:
    """True when taken, False when someone holds it, None when this file system cannot say."""
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return None


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    """Whether two stats are of one file (device and inode): a name re-checked before it is removed."""
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def still_linked(dfd: int, name: str, st: os.stat_result) -> bool:
    """Whether ``name`` in the folder is still the file ``st`` describes."""
    try:
        return same_file(os.stat(name, dir_fd=dfd, follow_symlinks=False), st)
    except OSError:
        return False


def unlink_if_same(dfd: int, name: str, st: os.stat_result) -> bool:
    """Remove ``name`` from the folder if it is still the file ``st`` describes (relative to the
    folder's descriptor: nothing is followed). False when it changed, vanished or cannot go."""
    if not still_linked(dfd, name, st):
        return False
    try:
        os.unlink(name, dir_fd=dfd)
        return True
    except OSError:
        return False


def classify(name: str, st: os.stat_result) -> tuple[str, str]:
    """(kind, digest) of a file in a shard folder by its name and lstat: ``entry``, ``temp``,
    ``lock`` or ``foreign`` (anything that is not a regular file counts as foreign)."""
    if name.startswith(TEMP_PREFIX):
        kind, digest = "temp", ""
    elif name.startswith(LOCK_PREFIX):
        kind, digest = "lock", name[len(LOCK_PREFIX) :]
    elif name.endswith(SUFFIX):
        kind, digest = "entry", name[: -len(SUFFIX)]
    else:
        kind, digest = "foreign", ""
    if not stat.S_ISREG(st.st_mode):
        kind = "foreign"
    return kind, digest


@dataclass(frozen=True)
class DiskEntryInfo:
    """One file in a shard folder as the listing sees it (nothing read or verified).
    ``kind``: ``entry``, ``temp``, ``lock``, or ``foreign`` (not a regular file, or a stray name).
    ``size`` is what it is charged (``charged_bytes``); ``own``: this user's file (others' files
    are never counted, pruned or removed)."""

    path: Path
    digest: str
    size: int
    mtime: float
    kind: str = "entry"
    uid: int = -1
    own: bool = True
    length: int = 0


class HeldLock:
    """A key lock this process holds: the shard folder's fd, the lock file's fd and its identity."""

    def __init__(self, dfd: int, name: str, fd: int) -> None:
        self.dfd, self.name, self.fd = dfd, name, fd
        self.st = os.fstat(fd)

    def release(self) -> None:
        try:
            unlink_if_same(self.dfd, self.name, self.st)  # before unlocking: a waiter never takes a released file
        finally:
            os.close(self.fd)
            os.close(self.dfd)
