"""The compile cache's tiers behind one small interface, and the in-process memory tier.

Why an interface: ``CompileCache`` used to name each tier (an LRU of its own, ``DiskCache`` with
``key_lock``, ``RemoteCache`` with ``lease``) and wire them by hand in three places: the lookup,
the lock taken on a miss and the writes after a compile. Triton's ``runtime/cache.py`` puts its
file, remote and user-supplied caches behind one ``CacheManager`` of a few methods; here the same
four calls let ``CompileCache`` keep its tiers as a list, fastest first, and walk it:

* ``get(key)``: the entry, only when the full canonical key stored with it equals ``key``'s (the
  digest is only an index); None for a miss, a corrupt, hostile or foreign entry, or a tier that is
  off. Never raises for I/O trouble.
* ``put(key, code)``: store it; False when not stored (too large, writes off, the tier off).
* ``lock(key)``: a context manager held while the owner of a miss looks again and compiles, so a
  key is compiled once across processes and hosts; it yields True when held, False when it went
  on without (bounded waits; a lock never fails a compile).
* ``describe()``: the tier's fields in ``CompileCache.stats()`` (``entries``/``bytes`` for memory,
  ``disk_*``, ``remote_*``).

and a ``name``: a hit in the tier is the lookup outcome ``<name>-hit``, counted as ``<name>_hits``
(``memory``, ``disk`` and ``remote``; a new tier adds its outcome to ``events.OUTCOMES``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .base import ObjectCode
from .request import CacheKey


@runtime_checkable
class Tier(Protocol):
    """One level of the compile cache (see the module's docstring for what each call promises)."""

    name: str

    def get(self, key: CacheKey) -> ObjectCode | None: ...

    def put(self, key: CacheKey, code: ObjectCode) -> bool: ...

    def lock(self, key: CacheKey) -> AbstractContextManager[bool]: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass
class _Entry:
    canonical: bytes
    code: ObjectCode
    nbytes: int


class MemoryTier:
    """An LRU of object codes in this process, bounded by entry count and by bytes.

    ``CompileCache`` calls ``get`` and ``put`` while it holds its own lock, so that a memory miss
    and the registration of the compile in flight are one step (a request that misses memory
    either joins the compile in flight or becomes its owner); the tier's own lock keeps it
    consistent for anyone else (``describe``, ``clear``). A code larger than ``max_bytes`` is not
    stored: it would evict everything else."""

    name = "memory"

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.evictions = 0
        self._lru: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryTier(max_entries={self.max_entries}, max_bytes={self.max_bytes})"

    def get(self, key: CacheKey) -> ObjectCode | None:
        with self._lock:
            entry = self._lru.get(key.digest)
            if entry is None or entry.canonical != key.canonical:
                return None
            self._lru.move_to_end(key.digest)
            return entry.code

    def put(self, key: CacheKey, code: ObjectCode) -> bool:
        nbytes = code.nbytes
        if nbytes > self.max_bytes:
            return False  # returned to the caller, never stored
        with self._lock:
            old = self._lru.pop(key.digest, None)
            if old is not None:  # a digest collision (or a re-store): the newer entry replaces it
                self._bytes -= old.nbytes
            self._lru[key.digest] = _Entry(key.canonical, code, nbytes)
            self._bytes += nbytes
            while self._lru and (len(self._lru) > self.max_entries or self._bytes > self.max_bytes):
                _, evicted = self._lru.popitem(last=False)
                self._bytes -= evicted.nbytes
                self.evictions += 1
        return True

    def lock(self, key: CacheKey) -> AbstractContextManager[bool]:
        """Nothing to take: within a process, ``CompileCache`` shares a compile in flight through a
        future (which also hands its joiners the owner's error), not through a lock."""
        return nullcontext(True)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"entries": len(self._lru), "bytes": self._bytes, "evictions": self.evictions}

    def clear(self) -> int:
        """Drop every entry; returns how many there were."""
        with self._lock:
            count = len(self._lru)
            self._lru.clear()
            self._bytes = 0
        return count
