"""The disk tier's maintenance: listing, stats, prune, verify, clear (``DiskCache`` inherits these).

Why a module of its own: ``compile.disk`` opens the folders and serves ``get``/``put``/``key_lock``;
what is here walks every shard through ``DiskCache._walk`` (opened descriptors, ``O_NOFOLLOW``, each
folder checked before use) and removes only this user's files, each by name relative to the checked
shard's descriptor and only while the name still is the file that was checked (``unlink_if_same``,
``still_linked``). Other users' files are reported, never counted, pruned or deleted. The methods rely on
``DiskCache``'s state (``_uid``, ``_lock``, ``counters``, ``secret``, ``directory``) and helpers
(``_walk``, ``_open_top``, ``_shard_named``, ``_check_file``, ``_usable``, ``lock_lifetime``); they are
not meant to be used without it. ``_stale_lock`` (removing this user's lock files no live holder has)
is here with its callers, the sweep and ``clear``; ``key_lock`` takes a dead holder's lock over itself.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import time
from typing import Iterator

from .disk_files import (
    HOST_TAG,
    LOCK_PREFIX,
    O_CLOEXEC,
    PEEK_FLAGS,
    PRUNE_TO_FRACTION,
    STALE_TEMP_S,
    TEMP_PREFIX,
    DiskEntryInfo,
    RootProblem,
    Untrusted,
    charged_bytes,
    classify,
    lock_state,
    owner_record,
    read_record,
    same_file,
    still_linked,
    try_flock,
    unlink_if_same,
    warn_once,
)
from .entry import Corrupt, Unauthenticated, decode_entry, read_entry_file

#: A lock file under its unique name this young may be a holder's between create and link.
FRESH_LOCK_S = 60.0


class DiskMaintenance:
    """Listing, stats, prune, verify and clear of a ``DiskCache`` (its base class)."""

    def _info(self, shard: str, name: str, st: os.stat_result) -> DiskEntryInfo:
        kind, digest = classify(name, st)
        return DiskEntryInfo(
            self.directory / shard / name,
            digest,
            charged_bytes(st),
            st.st_mtime,
            kind,
            st.st_uid,
            st.st_uid == self._uid,
            st.st_size,
        )

    def listing(self) -> Iterator[DiskEntryInfo]:
        """Every file in the shard folders, classified; vanished files and unreadable, untrusted
        or linked folders are skipped (nothing is followed or opened)."""
        for shard, _, files in self._walk():
            for name, st in files:
                yield self._info(shard, name, st)

    def entries(self) -> Iterator[DiskEntryInfo]:
        """Regular entry files currently present (listing only)."""
        return (i for i in self.listing() if i.kind == "entry")

    @staticmethod
    def writer_gone(name: str, mtime: float, now: float) -> bool:
        """True when the temp file's writer cannot still be writing it: its pid is dead on this
        host, or the file is older than ``STALE_TEMP_S`` (another host, or an unknown name)."""
        if now - mtime > STALE_TEMP_S:
            return True
        m = re.match(rf"{re.escape(TEMP_PREFIX)}(\w+?)-(\d+)-", name)
        if not m or m.group(1) != HOST_TAG:
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

    def _sweep(self, now: float) -> int:
        """Remove this user's temp files whose writer is gone and lock files no one holds; returns
        the bytes this user's entries and remaining temp files are charged."""
        total = 0
        for _, sfd, files in self._walk():
            for name, st in files:
                if st.st_uid != self._uid:
                    continue  # another user's: not counted, not touched
                kind, _ = classify(name, st)
                if kind == "temp" and self.writer_gone(name, st.st_mtime, now):
                    if unlink_if_same(sfd, name, st):
                        continue
                elif kind == "lock":
                    if self._stale_lock(sfd, name, st, now):
                        self._count("locks_removed")
                    continue
                if kind in ("entry", "temp"):
                    total += charged_bytes(st)
        return total

    def _stale_lock(self, sfd: int, name: str, st: os.stat_result, now: float) -> bool:
        """Remove this user's lock file ``name`` if no live holder has it (a holder unlinks its
        own on release; what is left is a killed holder's). True when removed."""
        if st.st_uid != self._uid or not stat.S_ISREG(st.st_mode):
            return False
        if "." in name[len(LOCK_PREFIX) :] and now - st.st_mtime < FRESH_LOCK_S:
            return False  # a maker's unique name between create and link
        try:
            fd = os.open(name, PEEK_FLAGS, dir_fd=sfd)
        except OSError:
            return False
        try:
            held = os.fstat(fd)
            if not same_file(held, st):
                return False
            free = try_flock(fd, fcntl.LOCK_EX)
            if free is None:
                free = try_flock(fd, fcntl.LOCK_SH)
            if not free and lock_state(read_record(fd), held, self.lock_lifetime(), now) == "live":
                return False
            return unlink_if_same(sfd, name, held)
        finally:
            os.close(fd)

    def stats(self) -> dict:
        infos = list(self.listing())
        with self._lock:
            counters = dict(self.counters)
        entries = [i for i in infos if i.kind == "entry" and i.own]
        temps = [i for i in infos if i.kind == "temp" and i.own]
        others = [i for i in infos if not i.own]
        return {
            "root": str(self.root),
            "directory": str(self.directory),
            "max_bytes": self.max_bytes,
            "shared": self.shared,
            "authenticated": self.secret is not None,
            "writable": self.writable,
            "write_error": self.write_error,
            "entries": len(entries),
            "bytes": sum(i.size for i in entries) + sum(i.size for i in temps),
            "entry_bytes": sum(i.size for i in entries),
            "temp_files": len(temps),
            "temp_bytes": sum(i.size for i in temps),
            "foreign_files": sum(1 for i in infos if i.kind == "foreign" and i.own),
            "lock_files": sum(1 for i in infos if i.kind == "lock" and i.own),
            "others_files": len(others),
            "others_entries": sum(1 for i in others if i.kind == "entry"),
            "usable": self._usable() or "yes",
            **{f"disk_{k}": v for k, v in counters.items()},
        }

    def describe(self) -> dict:
        """The ``Tier`` description: this tier's fields in ``CompileCache.stats()``."""
        stats = self.stats()
        return {
            "disk_entries": stats["entries"],
            "disk_bytes": stats["bytes"],
            "disk_dir": stats["root"],
            "disk_writable": stats["writable"],
            "disk_corrupt": stats["disk_corrupt"],
        }

    def _prune_lock(self, vfd: int) -> tuple[int | None, str]:
        """(fd, '') holding this user's prune lock; (None, '') when another of this user's live
        processes prunes now; (None, why) when the file cannot serve (prune without it)."""
        try:
            fd = os.open(
                self._prune_lock_name,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | O_CLOEXEC,
                self._lock_mode,
                dir_fd=vfd,
            )
        except OSError as exc:
            return None, str(exc)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != self._uid:
                os.close(fd)
                return None, f"not this user's regular file (uid {st.st_uid}, mode {stat.filemode(st.st_mode)})"
            got = try_flock(fd, fcntl.LOCK_EX)
            if got is None:
                os.close(fd)
                return None, "cannot be locked on this file system"
            if not got:
                alive = lock_state(read_record(fd), st, self.lock_lifetime(), time.time()) == "live"
                os.close(fd)
                return None, ("" if alive else "held by a process that is gone")
            os.ftruncate(fd, 0)
            os.pwrite(fd, owner_record(), 0)
            return fd, ""
        except BaseException:
            os.close(fd)
            raise

    def prune(self, target_bytes: int | None = None) -> int:
        """Remove this user's least-recently-used entries until this user's entries + temp files
        are at most ``target_bytes`` (default: 90 % of the cap), temp files of writers that are
        gone, and lock files no one holds. Skips, returning 0, while another thread or live
        process of this user holds the prune lock. A prune lock that cannot serve (planted, a
        link, another user's, its holder gone) does not stop pruning: one warning, prune anyway."""
        if target_bytes is None:
            target_bytes = int(self.max_bytes * PRUNE_TO_FRACTION)
        if not self._prune_guard.acquire(blocking=False):
            return 0
        try:
            try:
                top = self._open_top(create=False)
            except (OSError, Untrusted, RootProblem):
                return 0
            try:
                fd, why = self._prune_lock(top[-1])
                if fd is None and not why:
                    return 0
                if fd is None:
                    path = self.directory / self._prune_lock_name
                    warn_once(
                        str(path),
                        f"hipexplore compile cache: cannot use the prune lock {str(path)!r} ({why}); "
                        "pruning without it (remove that file)",
                    )
                try:
                    return self._prune_locked(target_bytes)
                finally:
                    if fd is not None:
                        os.ftruncate(fd, 0)
                        os.close(fd)
            finally:
                for f in top:
                    os.close(f)
        finally:
            self._prune_guard.release()

    def _prune_locked(self, target_bytes: int) -> int:
        now = time.time()
        self._sweep(now)
        entries: list[tuple[float, str, str, os.stat_result]] = []
        total = 0
        for shard, _, files in self._walk():
            for name, st in files:
                if st.st_uid != self._uid:
                    continue
                kind, _ = classify(name, st)
                if kind in ("entry", "temp"):
                    total += charged_bytes(st)
                if kind == "entry":
                    entries.append((st.st_mtime, shard, name, st))
        entries.sort(key=lambda e: e[0])
        doomed: dict[str, list[tuple[str, os.stat_result]]] = {}
        planned = total
        for _, shard, name, st in entries:
            if planned <= target_bytes:
                break
            doomed.setdefault(shard, []).append((name, st))
            planned -= charged_bytes(st)
        removed = 0
        for shard, files in doomed.items():
            try:
                with self._shard_named(shard, create=False) as sfd:
                    for name, st in files:
                        if unlink_if_same(sfd, name, st):
                            removed += 1
                            total -= charged_bytes(st)
                        elif not still_linked(sfd, name, st):
                            total -= charged_bytes(st)  # gone (another pruner) or replaced: recounted next scan
            except (OSError, Untrusted, RootProblem):
                continue
        with self._lock:
            self._estimated_bytes = total
            self.counters["pruned"] += removed
        return removed

    def verify(self) -> dict:
        """Read every entry safely and check it (tag, lengths, header types, file name); remove
        what is not a valid entry, if it is this user's (others' files are reported, left in
        place). ``problems`` lists (path, what, action); ``failed`` counts files that could not
        be read or removed, or a cache that cannot be used (the command line exits non-zero)."""
        ok = corrupt = removed = failed = unauthenticated = untrusted = 0
        problems: list[tuple[str, str, str]] = []
        usable = self._usable()
        if usable:
            failed += 1
            problems.append((str(self.directory), usable, "nothing checked"))
        for shard, sfd, files in self._walk():
            for name, st in files:
                kind, digest = classify(name, st)
                if kind in ("temp", "lock"):
                    continue
                path = self.directory / shard / name
                why = ""
                if kind == "foreign":
                    why = "not a regular entry file"
                else:
                    try:
                        data, st = read_entry_file(name, sfd, check=self._check_file(path))
                        header, _ = decode_entry(data, self.secret)
                        if header["digest"] != digest:
                            why = f"file name {digest} does not match stored digest {header['digest']}"
                    except FileNotFoundError:
                        continue
                    except Untrusted as exc:
                        untrusted += 1
                        problems.append((str(path), f"not trusted: {exc}", "left in place"))
                        continue
                    except Unauthenticated as exc:  # a teammate's under another secret, or forged: a miss, kept
                        unauthenticated += 1
                        problems.append((str(path), str(exc), "left in place"))
                        continue
                    except Corrupt as exc:
                        why = str(exc)
                    except OSError as exc:
                        why = f"unreadable ({exc.strerror or exc})"
                if not why:
                    ok += 1
                    continue
                corrupt += 1
                if st.st_uid != self._uid:
                    problems.append((str(path), why, f"left in place (owned by uid {st.st_uid})"))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    failed += 1
                    problems.append((str(path), why, "NOT removed: a directory (left in place)"))
                    continue
                try:
                    if not still_linked(sfd, name, st):
                        continue  # replaced or gone meanwhile
                    os.unlink(name, dir_fd=sfd)
                    removed += 1
                    problems.append((str(path), why, "removed"))
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed += 1
                    problems.append((str(path), why, f"NOT removed: {exc.strerror or exc}"))
        with self._lock:
            self._estimated_bytes = None
        return {
            "checked": ok + corrupt + unauthenticated + untrusted,
            "ok": ok,
            "corrupt": corrupt,
            "removed": removed,
            "failed": failed,
            "unauthenticated": unauthenticated,
            "untrusted": untrusted,
            "problems": problems,
        }

    def clear(self) -> dict:
        """Remove this user's entries, temp files, stray files and lock files no one holds (a live
        holder's stays; it removes its own on release); other users' files stay (``others_left``).
        Returns counts ``removed`` (entries), ``temp_removed``, ``locks_removed``, ``failed`` and
        the first ``error`` (e.g. a read-only mount, or a cache that is not used)."""
        removed = temp_removed = locks_removed = failed = others = 0
        error = self._usable()
        if error:
            failed += 1
        now = time.time()
        for shard, sfd, files in self._walk():
            for name, st in files:
                if st.st_uid != self._uid:
                    others += 1
                    continue
                kind, _ = classify(name, st)
                if stat.S_ISDIR(st.st_mode):
                    continue
                if kind == "lock":
                    if self._stale_lock(sfd, name, st, now):
                        locks_removed += 1
                    continue
                if not still_linked(sfd, name, st):
                    continue
                try:
                    os.unlink(name, dir_fd=sfd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed += 1
                    error = error or f"{self.directory / shard / name}: {exc.strerror or exc}"
                    continue
                if kind == "entry":
                    removed += 1
                elif kind == "temp":
                    temp_removed += 1
        with self._lock:
            self._estimated_bytes = None
        return {
            "removed": removed,
            "temp_removed": temp_removed,
            "locks_removed": locks_removed,
            "failed": failed,
            "error": error,
            "others_left": others,
        }
