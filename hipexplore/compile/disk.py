"""The persistent tier of the compile cache: one checksummed file per entry.

Why hand-written instead of ``diskcache``: diskcache keeps its index in SQLite, which is not safe
on NFS home directories (where GPU clusters keep ``~/.cache``), answers "database is locked" when
several tuning processes open it at once, and stores pickles that no one can inspect. The GPU
compile caches (MIGraphX #5100, Triton, CuPy, cuda.core) converged on plain files published with
``os.replace`` and a checksum; this module does the same (see shared/notes/anchors.md).

Layout: ``<root>/v<KEY_SCHEMA>/<digest[:2]>/<digest>.hxc``. A file is::

    magic (8 bytes) | header length (u32 LE) | binary length (u64 LE) | header (UTF-8 JSON) |
    binary | SHA-256 of everything before it (32 bytes)

The JSON header holds the full canonical key, so the digest is only a file name: a hit compares
the stored key with the request's, and a different key (a digest collision) is a miss that the
following compile overwrites. The binary is stored raw, so ``tail -c +N`` gives a code object or
cubin that the usual tools read.

Guarantees:
  * Writers publish atomically (temp file in the same directory, flush + fsync, ``os.replace``),
    so readers in other processes see the old entry, the new entry, or nothing, never a torn one.
    Content is determined by the key, so two writers racing on one key need no lock.
  * Every read verifies the checksum and the lengths. Corrupt, truncated, vanished (ENOENT),
    busy (EBUSY) or unreadable (PermissionError) entries are misses, never errors.
  * Size is capped: hits refresh the file's mtime; after a write pushes this process's estimate
    of the total over the cap, the oldest entries are pruned under a file lock that other
    processes skip rather than wait on (one pruner at a time, nobody blocks).
  * A directory that cannot be written (read-only, full disk, path through a regular file) gives
    ONE ``RuntimeWarning``; the cache then stops writing and continues in memory.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import struct
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import settings
from ..errors import CacheError, ConfigError
from .base import ObjectCode
from .request import KEY_SCHEMA, CacheKey

#: errno values after which only the one write is skipped (a busy, interrupted or briefly exhausted
#: file system); anything else (EROFS, ENOSPC, EACCES, ENOTDIR, ...) turns disk writes off for the process.
TRANSIENT_WRITE_ERRORS = frozenset({errno.EINTR, errno.EAGAIN, errno.EBUSY, errno.EMFILE, errno.ENFILE, errno.ESTALE})

MAGIC = b"HXCACHE\x01"
_PREFIX = struct.Struct("<8sIQ")  # magic, header length, binary length
_CHECKSUM_BYTES = 32
SUFFIX = ".hxc"
_TEMP_PREFIX = ".tmp-"
#: File format version inside the header (the key schema versions the directory).
FORMAT_VERSION = 1

DEFAULT_DISK_MAX_BYTES = settings.CACHE_DISK_MAX_BYTES.default
#: After pruning, the total is brought down to this fraction of the cap so that the next few
#: writes do not prune again at once.
PRUNE_TO_FRACTION = 0.9
#: A hit refreshes the mtime (the LRU clock) only if it is older than this, so a hot entry does
#: not cost a metadata write per lookup.
TOUCH_INTERVAL_S = 1.0
#: Temp files older than this are left-overs of a killed writer; the pruner removes them.
STALE_TEMP_S = 3600.0

_DIGEST_RE = re.compile(r"[0-9A-Za-z_\-]{2,128}")


class _Corrupt(Exception):
    pass


@dataclass(frozen=True)
class DiskEntryInfo:
    """One entry file as the directory lists it (nothing read or verified)."""

    path: Path
    digest: str
    size: int
    mtime: float


def encode_entry(key: CacheKey, code: ObjectCode, created: float | None = None) -> bytes:
    """Serialize one entry (header + binary + checksum)."""
    header = {
        "format": FORMAT_VERSION,
        "key": key.canonical.decode("utf-8"),
        "digest": key.digest,
        "compiler": code.compiler,
        "target": code.target,
        "mode": code.mode,
        "compile_seconds": float(code.compile_seconds),
        "created": time.time() if created is None else created,
        "lowered_names": dict(code.lowered_names),
        "metadata": dict(code.metadata),  # launch facts (Triton); {} for the others
        "log": code.log,
        "sizes": {"binary": len(code.binary), "key": len(key.canonical)},
    }
    head = json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    body = b"".join((_PREFIX.pack(MAGIC, len(head), len(code.binary)), head, bytes(code.binary)))
    return body + hashlib.sha256(body).digest()


def decode_entry(data: bytes) -> tuple[dict, bytes]:
    """Verify lengths and checksum, then split into (header, binary). Raises ``_Corrupt``."""
    if len(data) < _PREFIX.size + _CHECKSUM_BYTES:
        raise _Corrupt(f"truncated: {len(data)} bytes")
    magic, head_len, bin_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise _Corrupt(f"bad magic {magic!r}")
    if _PREFIX.size + head_len + bin_len + _CHECKSUM_BYTES != len(data):
        raise _Corrupt(f"length mismatch: header {head_len} + binary {bin_len} vs file {len(data)}")
    view = memoryview(data)
    if hashlib.sha256(view[:-_CHECKSUM_BYTES]).digest() != data[-_CHECKSUM_BYTES:]:
        raise _Corrupt("checksum mismatch")
    try:
        header = json.loads(bytes(view[_PREFIX.size : _PREFIX.size + head_len]))
    except (ValueError, UnicodeDecodeError) as exc:  # checksum passed, so this is a writer bug
        raise _Corrupt(f"bad header: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("key"), str):
        raise _Corrupt("header without key")
    binary = bytes(view[_PREFIX.size + head_len : len(data) - _CHECKSUM_BYTES])
    return header, binary


def read_header(path: str | os.PathLike) -> dict:
    """The JSON header of an entry file, read without verifying the checksum (for listings)."""
    with open(path, "rb") as f:
        prefix = f.read(_PREFIX.size)
        if len(prefix) < _PREFIX.size:
            raise CacheError(f"cache entry {os.fspath(path)!r} is truncated ({len(prefix)} bytes)")
        magic, head_len, _ = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise CacheError(f"{os.fspath(path)!r} is not a hipexplore cache entry (magic {magic!r})")
        try:
            return json.loads(f.read(head_len))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CacheError(f"cache entry {os.fspath(path)!r} has an unreadable header: {exc}") from None


class DiskCache:
    """Checksummed entry files under ``root``; thread-safe and safe across processes.

    ``get``/``put`` never raise for I/O trouble: a read problem is a miss, a write problem
    disables writes with one warning (``writable`` turns False, ``write_error`` says why).
    """

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_DISK_MAX_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigError(f"disk cache max_bytes must be a non-negative integer number of bytes; got {max_bytes!r}")
        self.root = Path(root).expanduser()
        self.directory = self.root / f"v{KEY_SCHEMA}"
        self.max_bytes = max_bytes
        self.writable = True
        self.write_error = ""
        self._lock = threading.Lock()
        self._prune_guard = threading.Lock()
        self._estimated_bytes: int | None = None
        self.counters = {
            "write_errors": 0,
            "hits": 0,
            "misses": 0,
            "key_mismatches": 0,
            "corrupt": 0,
            "unreadable": 0,
            "writes": 0,
            "pruned": 0,
        }

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r}, max_bytes={self.max_bytes})"

    # -- paths -------------------------------------------------------------------------------
    def path_for(self, digest: str) -> Path:
        if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
            raise CacheError(
                f"cache digest must be 2-128 characters of [0-9A-Za-z_-] to be a file name; got {digest!r}"
            )
        return self.directory / digest[:2] / f"{digest}{SUFFIX}"

    def _count(self, name: str) -> None:
        with self._lock:
            self.counters[name] += 1

    # -- read --------------------------------------------------------------------------------
    def get(self, key: CacheKey) -> ObjectCode | None:
        """The stored object code for ``key``, or None (absent, corrupt, unreadable, other key)."""
        path = self.path_for(key.digest)
        try:
            with open(path, "rb") as f:
                mtime = os.fstat(f.fileno()).st_mtime
                data = f.read()
        except FileNotFoundError:
            self._count("misses")
            return None
        except OSError:  # EBUSY, EACCES, EIO, ENOTDIR, stale NFS handle: all a miss
            self._count("unreadable")
            self._count("misses")
            return None
        try:
            header, binary = decode_entry(data)
        except _Corrupt:
            self._count("corrupt")
            self._count("misses")
            return None
        if header["key"].encode("utf-8") != key.canonical:
            self._count("key_mismatches")
            self._count("misses")
            return None
        if time.time() - mtime > TOUCH_INTERVAL_S:
            try:
                os.utime(path)
            except OSError:
                pass
        self._count("hits")
        return ObjectCode(
            binary=binary,
            compiler=str(header.get("compiler", "")),
            target=str(header.get("target", "")),
            mode=str(header.get("mode", "")),
            log=str(header.get("log", "")),
            lowered_names=dict(header.get("lowered_names") or {}),
            compile_seconds=float(header.get("compile_seconds", 0.0)),
            metadata=dict(header.get("metadata") or {}),
        )

    # -- write -------------------------------------------------------------------------------
    def put(self, key: CacheKey, code: ObjectCode) -> bool:
        """Publish an entry atomically; False if not stored (too large, or writes disabled)."""
        path = self.path_for(key.digest)
        if not self.writable:
            return False
        data = encode_entry(key, code)
        if len(data) > self.max_bytes:
            return False
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=SUFFIX + ".part", dir=path.parent)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would hide entries from a shared group
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            if exc.errno in TRANSIENT_WRITE_ERRORS:  # this write is lost; the tier stays on
                with self._lock:
                    self.counters["write_errors"] += 1
                return False
            self._disable_writes(exc)  # read-only, full, not a directory, no permission: once, for good
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        with self._lock:
            self.counters["writes"] += 1
            estimate = self._estimated_bytes
            if estimate is not None:
                estimate = self._estimated_bytes = estimate + len(data)
        if estimate is None:  # first write of this process: one scan, then a running estimate
            estimate = sum(e.size for e in self.entries())
            with self._lock:
                self._estimated_bytes = estimate
        if estimate > self.max_bytes:
            self.prune()
        return True

    def _disable_writes(self, exc: OSError) -> None:
        with self._lock:
            if not self.writable:
                return
            self.writable = False
            self.write_error = f"{type(exc).__name__}: {exc}"
        reason = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        warnings.warn(
            f"hipexplore compile cache: cannot write to {str(self.root)!r} ({reason}: {exc}); "
            "continuing with the memory cache only. Set HIPEXPLORE_CACHE_DIR to a writable "
            "directory, or HIPEXPLORE_CACHE_DISK=0 to silence this.",
            RuntimeWarning,
            stacklevel=4,
        )

    # -- maintenance -------------------------------------------------------------------------
    def _shard_files(self) -> Iterator[os.DirEntry]:
        """Every file in the shard folders; folders that vanish or cannot be read are skipped."""
        try:
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
            yield from files

    def entries(self) -> Iterator[DiskEntryInfo]:
        """Entry files currently present (listing only; vanished files are skipped)."""
        for f in self._shard_files():
            if not f.name.endswith(SUFFIX) or f.name.startswith(_TEMP_PREFIX):
                continue
            try:
                st = f.stat(follow_symlinks=False)
            except OSError:
                continue
            yield DiskEntryInfo(Path(f.path), f.name[: -len(SUFFIX)], st.st_size, st.st_mtime)

    def _temp_files(self) -> Iterator[Path]:
        return (Path(f.path) for f in self._shard_files() if f.name.startswith(_TEMP_PREFIX))

    def stats(self) -> dict:
        infos = list(self.entries())
        with self._lock:
            counters = dict(self.counters)
        return {
            "root": str(self.root),
            "directory": str(self.directory),
            "max_bytes": self.max_bytes,
            "writable": self.writable,
            "write_error": self.write_error,
            "entries": len(infos),
            "bytes": sum(i.size for i in infos),
            **{f"disk_{k}": v for k, v in counters.items()},
        }

    def prune(self, target_bytes: int | None = None) -> int:
        """Remove least-recently-used entries until the total is at most ``target_bytes``
        (default: 90 % of the cap). Skips, returning 0, if another thread or process is pruning."""
        if target_bytes is None:
            target_bytes = int(self.max_bytes * PRUNE_TO_FRACTION)
        if not self._prune_guard.acquire(blocking=False):
            return 0
        try:
            from filelock import FileLock, Timeout

            lock = FileLock(str(self.directory / ".prune.lock"), timeout=0)
            try:
                lock.acquire()
            except Timeout:
                return 0
            except OSError:
                return 0
            try:
                return self._prune_locked(target_bytes)
            finally:
                lock.release()
        finally:
            self._prune_guard.release()

    def _prune_locked(self, target_bytes: int) -> int:
        now = time.time()
        for tmp in self._temp_files():
            try:
                if now - tmp.stat().st_mtime > STALE_TEMP_S:
                    tmp.unlink()
            except OSError:
                pass
        infos = sorted(self.entries(), key=lambda i: i.mtime)
        total = sum(i.size for i in infos)
        removed = 0
        for info in infos:
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
        """Read every entry and check its checksum, lengths and file name; remove the corrupt."""
        ok = corrupt = removed = 0
        for info in self.entries():
            try:
                with open(info.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            except OSError:
                corrupt += 1
                continue
            try:
                header, _ = decode_entry(data)
                if header.get("digest") != info.digest:
                    raise _Corrupt(f"file name {info.digest} does not match stored digest {header.get('digest')}")
            except _Corrupt:
                corrupt += 1
                try:
                    info.path.unlink()
                    removed += 1
                except OSError:
                    pass
                continue
            ok += 1
        with self._lock:
            self._estimated_bytes = None
        return {"checked": ok + corrupt, "ok": ok, "corrupt": corrupt, "removed": removed}

    def clear(self) -> int:
        """Remove every entry (and left-over temp files); returns the number of entries removed."""
        removed = 0
        for info in list(self.entries()):
            try:
                info.path.unlink()
                removed += 1
            except OSError:
                pass
        for tmp in list(self._temp_files()):
            try:
                tmp.unlink()
            except OSError:
                pass
        with self._lock:
            self._estimated_bytes = 0
        return removed
