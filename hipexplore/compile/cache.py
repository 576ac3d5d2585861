"""The compile cache: a bounded in-memory LRU in front of a checksummed disk tier and an optional
Redis team tier (``remote.py``).

Requirements taken from the MIGraphX #5270 review (shared/seeds): the digest is only an index, the
full canonical key is compared on every hit; concurrent identical requests share one compile; an
entry in flight is not in the LRU, so trimming never counts or evicts it, and it becomes evictable
only after its result has been published to the requests waiting on it; failures are not cached;
diagnostics bypass the cache; limits of 0 disable the memory tier.

The tiers are one list of ``tiers.Tier`` objects, fastest first (memory, disk, Redis): a lookup
walks it and a lower tier's hit is copied into the tiers above it. Across processes and hosts a
miss is compiled once: the owner of a miss takes every lower tier's ``lock`` (the disk tier's
per-key lock, then the Redis lease), looks again (another process may have finished meanwhile),
and only then compiles and writes every tier before letting go. Waits are bounded; a lock that
cannot be had in time never fails a compile (it compiles on its own).

Every lookup appends one ``CacheEvent``; ``events()`` returns them as a tidy DataFrame.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from contextlib import ExitStack, contextmanager
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .. import settings
from ..errors import CacheError, ConfigError
from . import compiler_cache
from .base import Compiler, ObjectCode
from .disk import DiskCache
from .events import HIT_OUTCOMES, CacheEvent, events_frame
from .remote import RemoteCache, remote_cache_from_env
from .request import CacheKey, CompileRequest, DigestFn, make_key, sha256_digest
from .tiers import MemoryTier, Tier

if TYPE_CHECKING:
    import pandas as pd  # events() builds its frame on demand (compile.events.events_frame)

DEFAULT_MAX_ENTRIES = settings.CACHE_MAX_ENTRIES.default
DEFAULT_MAX_BYTES = settings.CACHE_MAX_BYTES.default

ENV_MAX_ENTRIES = settings.CACHE_MAX_ENTRIES.name
ENV_MAX_BYTES = settings.CACHE_MAX_BYTES.name
ENV_DIR = settings.CACHE_DIR.name
ENV_DISK = settings.CACHE_DISK.name
ENV_DISK_MAX_BYTES = settings.CACHE_DISK_MAX_BYTES.name
ENV_MAX_EVENTS = settings.CACHE_MAX_EVENTS.name
#: Events kept per cache object (the oldest are dropped past this; counters keep counting).
DEFAULT_MAX_EVENTS = settings.CACHE_MAX_EVENTS.default

#: Bounds of the request -> key memo (see CompileCache._key).
_KEY_MEMO_ENTRIES = 1024
_KEY_MEMO_BYTES = 32 * 1024**2


# -- configuration ---------------------------------------------------------------------------
def _limit(name: str, value: int | None, setting: settings.Setting[int]) -> int:
    if value is None:
        return setting.get()
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"{name} must be a non-negative integer (0 disables) or None for ${setting.name}; got {value!r}"
        )
    return value


def default_cache_dir() -> Path:
    """``$HIPEXPLORE_CACHE_DIR``, else the platform user cache dir (platformdirs), else
    ``$XDG_CACHE_HOME/hipexplore`` or ``~/.cache/hipexplore`` where platformdirs is absent."""
    env = settings.CACHE_DIR.get()
    if env is not None:
        return env
    try:
        import platformdirs
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "hipexplore"
    return Path(platformdirs.user_cache_dir("hipexplore", appauthor=False))


def disk_cache_from_env(
    disk_dir: str | os.PathLike | None | bool = None, disk_max_bytes: int | None = None
) -> DiskCache | None:
    """The disk tier the settings ask for, or None when it is disabled."""
    if disk_dir is False:
        return None
    if disk_dir is True:
        disk_dir = None
    if disk_dir is None:
        if not settings.CACHE_DISK.get():
            return None
        disk_dir = default_cache_dir()
    if not isinstance(disk_dir, (str, os.PathLike)):
        raise ConfigError(f"disk_dir must be a path, False (memory only) or None (environment); got {disk_dir!r}")
    cap = _limit("disk_max_bytes", disk_max_bytes, settings.CACHE_DISK_MAX_BYTES)
    if cap == 0:  # like the memory limits, a zero cap disables the tier (reads included)
        return None
    return DiskCache(disk_dir, max_bytes=cap)


# -- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheResult:
    """What a lookup returned and what it cost. ``compile_seconds`` is the entry's recorded
    compile time; ``seconds_saved`` = compile_seconds - lookup_seconds on hits/joins, else 0.

    ``setup_seconds``: what the first lookup through a compiler object paid to get that compiler
    loaded and ready (building the backend, loading its library or starting its worker, its
    identity); 0 afterwards. It is not in ``lookup_seconds`` (nor, so, in the saving): a compile
    needs the same loaded compiler, so a hit does not add that cost and a hit does not save it
    (issue 26, item 4: the first disk hit of a process reported ``saved=-0.214 s``)."""

    object_code: ObjectCode
    outcome: str
    key: CacheKey
    lookup_seconds: float
    compile_seconds: float
    seconds_saved: float
    setup_seconds: float = 0.0

    @property
    def binary(self) -> bytes:
        return self.object_code.binary

    @property
    def digest(self) -> str:
        return self.key.digest


@dataclass
class _InFlight:
    canonical: bytes
    future: Future


# -- the cache -------------------------------------------------------------------------------
#: ``stats()`` fields of the tiers that are off (a tier that is on overwrites them with its ``describe()``)
_MEMORY_OFF = {"entries": 0, "bytes": 0, "evictions": 0}
_DISK_OFF = {"disk_entries": 0, "disk_bytes": 0, "disk_dir": "", "disk_writable": False, "disk_corrupt": 0}


class CompileCache:
    """Memory LRU (entries and bytes) + optional disk and Redis tiers + in-flight sharing + events.

    Thread-safe. ``max_entries``/``max_bytes`` of 0 disable the memory tier (no sharing of
    in-flight compiles either: every request compiles unless the disk tier has it). ``tiers``
    lists the tiers that are on, fastest first; ``memory``, ``disk`` and ``remote`` name each
    (None when off) for what only that tier does (``verify``, ``clear``, its counters).
    """

    def __init__(
        self,
        max_entries: int | None = None,
        max_bytes: int | None = None,
        disk_dir: str | os.PathLike | None | bool = None,
        disk_max_bytes: int | None = None,
        digest: DigestFn = sha256_digest,
        events: bool = True,
        remote: str | bool | None = None,
    ) -> None:
        self.max_entries = _limit("max_entries", max_entries, settings.CACHE_MAX_ENTRIES)
        self.max_bytes = _limit("max_bytes", max_bytes, settings.CACHE_MAX_BYTES)
        if not callable(digest):
            raise ConfigError(f"digest must be a function bytes -> hex string; got {digest!r}")
        self.disk: DiskCache | None = disk_cache_from_env(disk_dir, disk_max_bytes)
        self.remote: RemoteCache | None = remote_cache_from_env(remote)
        on = self.max_entries > 0 and self.max_bytes > 0
        self.memory: MemoryTier | None = MemoryTier(self.max_entries, self.max_bytes) if on else None
        self.tiers: list[Tier] = [t for t in (self.memory, self.disk, self.remote) if t is not None]
        #: the tiers below memory: shared with other processes, so locked on a miss and looked at again
        self._lower: list[Tier] = [t for t in self.tiers if t is not self.memory]
        self._digest = digest
        self._record_events = bool(events)
        self._lock = threading.Lock()
        self._inflight: dict[str, _InFlight] = {}
        max_events = settings.CACHE_MAX_EVENTS.get()
        # a long-lived process (a notebook, a tuning service) must not grow without bound
        self._events: deque[CacheEvent] = deque(maxlen=max_events or None)
        self._seq = 0
        self._compilers: dict[str, Compiler] = {}
        self._ready: weakref.WeakSet = weakref.WeakSet()  # compilers whose set-up a lookup has already timed
        self._key_memo: OrderedDict[tuple, tuple[Any, CacheKey]] = OrderedDict()
        self._own_labels: dict[tuple, CacheKey] = {}  # (key, compiler, its cache variables) -> the labelled key
        self._key_memo_bytes = 0
        self._counters = {
            "lookups": 0,
            "memory_hits": 0,
            "disk_hits": 0,
            "remote_hits": 0,
            "compiled": 0,
            "joined": 0,
            "failed": 0,
            "bypassed": 0,
            "events_dropped": 0,
            "seconds_saved": 0.0,
            "compile_seconds": 0.0,
            "setup_seconds": 0.0,
        }

    def __repr__(self) -> str:
        return (
            f"CompileCache(max_entries={self.max_entries}, max_bytes={self.max_bytes}, disk={self.disk!r}, "
            f"remote={self.remote!r})"
        )

    @property
    def disk_dir(self) -> Path | None:
        """Root of the disk tier, None when it is off."""
        return self.disk.root if self.disk is not None else None

    @property
    def disk_max_bytes(self) -> int | None:
        return self.disk.max_bytes if self.disk is not None else None

    @property
    def memory_enabled(self) -> bool:
        return self.memory is not None

    # -- lookups -----------------------------------------------------------------------------
    def _compiler_for(self, request: CompileRequest, compiler: Compiler | None) -> Compiler:
        if compiler is None:
            compiler = self._compilers.get(request.compiler)
            if compiler is None or compiler.closed:  # a closed one is replaced, not reused
                from .registry import get_compiler

                compiler = get_compiler(request.compiler)
                with self._lock:
                    held = self._compilers.get(request.compiler)
                    if held is None or held.closed:
                        self._compilers[request.compiler] = compiler
                    compiler = self._compilers[request.compiler]
        if getattr(compiler, "name", None) != request.compiler:
            raise ConfigError(
                f"request is for compiler {request.compiler!r} but the compiler given is {getattr(compiler, 'name', compiler)!r}"
            )
        return compiler

    def _set_up(self, compiler: Compiler, since: float) -> float:
        """Seconds from ``since`` until ``compiler`` is ready to key a request: the first lookup
        through a compiler object pays its loading (backend, library, worker) and its identity
        here; later ones return 0 without timing anything (the identity is then memoized, and a
        re-check of it, such as the host compiler's periodic one, is the lookup's own cost)."""
        try:
            if compiler in self._ready:
                return 0.0
        except TypeError:  # not weak-referenceable: nothing to tell first from later lookups by
            return 0.0
        compiler.identity()  # memoized by the compiler: the key below reuses it
        with self._lock:
            self._ready.add(compiler)
        return time.perf_counter() - since

    def key_for(self, request: CompileRequest, compiler: Compiler | None = None) -> CacheKey:
        """The key ``get_or_compile`` would use (loads the compiler to learn its identity)."""
        return self._key(request, self._compiler_for(request, compiler))

    def _key(self, request: CompileRequest, compiler: Compiler) -> CacheKey:
        """make_key, memoized on (request, identity) and valid only for the implicit inputs it
        was built from: the compiler's ``implicit_inputs`` re-stats the files the compile reads
        outside the request (and resolves them again on a change, compile/implicit.py), so a
        memoized key never outlives an edited header. Equal requests have equal records, so the
        memo only skips re-serializing the source (most of a memory hit's cost). It is bounded
        by count and by the size of the keys it holds."""
        identity = compiler.identity()
        finder = getattr(compiler, "implicit_inputs", None)
        implicit = finder(request, identity) if finder is not None else None
        if request.clock:  # the key holds the clock: never memoized
            return make_key(request, identity, self._digest, implicit)
        memo_key = (request, identity)
        with self._lock:
            held = self._key_memo.get(memo_key)
            if held is not None and (held[0] is implicit or held[0] == implicit):
                self._key_memo.move_to_end(memo_key)
                return held[1]
        key = make_key(request, identity, self._digest, implicit)
        with self._lock:
            old = self._key_memo.pop(memo_key, None)
            if old is not None:
                self._key_memo_bytes -= len(old[1].canonical)
            self._key_memo[memo_key] = (implicit, key)
            self._key_memo_bytes += len(key.canonical)
            while self._key_memo and (
                len(self._key_memo) > _KEY_MEMO_ENTRIES or self._key_memo_bytes > _KEY_MEMO_BYTES
            ):
                _, (_, dropped) = self._key_memo.popitem(last=False)
                self._key_memo_bytes -= len(dropped.canonical)
        return key

    def _labelled(self, key: CacheKey, request: CompileRequest, compiler: Compiler) -> CacheKey:
        """``key`` carrying the label of the compiler's own cache for this request (``compiler_cache``,
        recorded in its event): remembered per key, compiler, and the raw values of the variables its
        cache reads, so a memory hit pays one dict lookup for it."""
        memo_key = (key, compiler, compiler_cache.signature(request.compiler))
        found = self._own_labels.get(memo_key)
        if found is None:
            found = replace(key, compiler_cache=compiler_cache.label_for(compiler, request.options))
            with self._lock:
                if len(self._own_labels) > _KEY_MEMO_ENTRIES:
                    self._own_labels.clear()
                self._own_labels[memo_key] = found
        return found

    def get_or_compile(self, request: CompileRequest, compiler: Compiler | None = None) -> CacheResult:
        """Return the object code for ``request``: from memory, from disk, by joining an identical
        compile in flight, or by compiling. Compile errors propagate and are not cached."""
        if not isinstance(request, CompileRequest):
            raise ConfigError(f"get_or_compile needs a CompileRequest; got {type(request).__name__}")
        began = time.perf_counter()
        compiler = self._compiler_for(request, compiler)
        setup = self._set_up(compiler, began)
        start = began + setup  # the lookup's own time starts once the compiler is ready
        key = self._key(request, compiler)
        key = self._labelled(key, request, compiler)

        # diagnostics: side effects a hit would skip; not cacheable: the files it reads could not be
        # listed (cc -M failed, e.g. a missing header). Either way: always compile, store nothing
        if request.diagnostics or not key.cacheable:
            return self._compile_uncached(request, compiler, key, start, "bypassed", setup)

        flight: _InFlight | None = None
        owner = False
        with self._lock:
            self._counters["lookups"] += 1
            if self.memory is not None:
                code = self.memory.get(key)
                if code is not None:
                    return self._finish_locked(request, key, code, "memory-hit", start, setup)
                flight = self._inflight.get(key.digest)
                if flight is not None and flight.canonical != key.canonical:
                    flight = None  # a digest collision in flight: compile on our own, share nothing
                    owner = False
                elif flight is None:
                    flight = _InFlight(key.canonical, Future())
                    self._inflight[key.digest] = flight
                    owner = True
        if flight is not None and not owner:
            try:
                code = flight.future.result()
            except BaseException as exc:
                self._record_failure(request, key, start, exc)
                raise
            with self._lock:
                return self._finish_locked(request, key, code, "joined", start, setup)
        return self._lookup_as_owner(request, compiler, key, start, flight, setup)

    def _from_tiers(self, key: CacheKey) -> tuple[ObjectCode | None, str]:
        """The first lower tier that has ``key`` (disk, then Redis); its hit is copied into the lower
        tiers above it (a Redis hit to disk). Memory gets it when it is published."""
        for i, tier in enumerate(self._lower):
            code = tier.get(key)
            if code is not None:
                for above in self._lower[:i]:
                    above.put(key, code)
                return code, f"{tier.name}-hit"
        return None, "compiled"

    @contextmanager
    def _across_processes(self, key: CacheKey) -> Iterator[None]:
        """Every lower tier's lock, in order: the disk tier's per-key lock, then the Redis lease
        (each bounded; never raises)."""
        with ExitStack() as stack:
            for tier in self._lower:
                stack.enter_context(tier.lock(key))
            yield

    def _lookup_as_owner(
        self,
        request: CompileRequest,
        compiler: Compiler,
        key: CacheKey,
        start: float,
        flight: _InFlight | None,
        setup: float = 0.0,
    ) -> CacheResult:
        with ExitStack() as held:
            try:
                code, outcome = self._from_tiers(key)
                if code is None and self._lower:
                    held.enter_context(self._across_processes(key))
                    code, outcome = self._from_tiers(key)  # the holder we waited on may have stored it
                if code is None:
                    code = self._run_compiler(request, compiler)
                    outcome = "compiled"
            except BaseException as exc:
                with self._lock:
                    if flight is not None and self._inflight.get(key.digest) is flight:
                        del self._inflight[key.digest]
                if flight is not None:
                    shared = exc
                    if not isinstance(
                        exc, Exception
                    ):  # Ctrl-C in the owner: joiners get an error, not a KeyboardInterrupt
                        shared = CacheError(
                            f"the identical compile this lookup joined was interrupted ({type(exc).__name__})"
                        )
                    flight.future.set_exception(shared)
                self._record_failure(request, key, start, exc)
                raise
            with self._lock:
                # publish to the joiners first; only then may the entry enter the LRU and be evicted
                if flight is not None:
                    flight.future.set_result(code)
                    if self._inflight.get(key.digest) is flight:
                        del self._inflight[key.digest]
                if self.memory is not None:
                    self.memory.put(key, code)
            if outcome == "compiled":  # after publishing (joiners do not wait for the fsync), before unlocking
                for tier in self._lower:
                    tier.put(key, code)
        with self._lock:
            return self._finish_locked(request, key, code, outcome, start, setup)

    def _compile_uncached(
        self, request: CompileRequest, compiler: Compiler, key: CacheKey, start: float, outcome: str, setup: float = 0.0
    ) -> CacheResult:
        with self._lock:
            self._counters["lookups"] += 1
        try:
            code = self._run_compiler(request, compiler)
        except BaseException as exc:
            self._record_failure(request, key, start, exc)
            raise
        with self._lock:
            return self._finish_locked(request, key, code, outcome, start, setup)

    @staticmethod
    def _run_compiler(request: CompileRequest, compiler: Compiler) -> ObjectCode:
        t0 = time.perf_counter()
        code = compiler.compile(request)
        elapsed = time.perf_counter() - t0
        if not isinstance(code, ObjectCode):
            raise ConfigError(f"compiler {compiler.name!r} returned {type(code).__name__}, expected ObjectCode")
        if code.compile_seconds <= 0.0:  # the backend did not time itself: record our wall time
            code = replace(code, compile_seconds=elapsed)
        return code

    # -- bookkeeping (callers hold the lock) --------------------------------------------------
    def _finish_locked(
        self, request: CompileRequest, key: CacheKey, code: ObjectCode, outcome: str, start: float, setup: float = 0.0
    ) -> CacheResult:
        lookup = time.perf_counter() - start
        recorded = float(code.compile_seconds)
        saved = recorded - lookup if outcome in HIT_OUTCOMES else 0.0
        counter = {"memory-hit": "memory_hits", "disk-hit": "disk_hits", "remote-hit": "remote_hits"}.get(
            outcome, outcome
        )
        self._counters[counter] += 1
        self._counters["seconds_saved"] += saved
        self._counters["setup_seconds"] += setup
        if outcome in ("compiled", "bypassed"):
            self._counters["compile_seconds"] += recorded
        self._append_event_locked(request, key, outcome, lookup, recorded, saved, code.nbytes, "")
        return CacheResult(code, outcome, key, lookup, recorded, saved, setup)

    def _record_failure(self, request: CompileRequest, key: CacheKey, start: float, exc: BaseException) -> None:
        lookup = time.perf_counter() - start
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        with self._lock:
            self._counters["failed"] += 1
            self._append_event_locked(request, key, "failed", lookup, 0.0, 0.0, 0, f"{type(exc).__name__}: {message}")

    def _append_event_locked(
        self,
        request: CompileRequest,
        key: CacheKey,
        outcome: str,
        lookup: float,
        compile_s: float,
        saved: float,
        nbytes: int,
        error: str,
    ) -> None:
        seq = self._seq
        self._seq += 1
        if not self._record_events:
            return
        if self._events.maxlen is not None and len(self._events) == self._events.maxlen:
            self._counters["events_dropped"] += 1
        self._events.append(
            CacheEvent(
                seq=seq,
                time=time.time(),
                digest=key.digest,
                kernel=request.name,
                compiler=request.compiler,
                target=request.target,
                mode=request.mode,
                outcome=outcome,
                lookup_seconds=lookup,
                compile_seconds=compile_s,
                seconds_saved=saved,
                bytes=nbytes,
                error=error,
                compiler_cache=key.compiler_cache,
            )
        )

    # -- reporting and maintenance ------------------------------------------------------------
    def events(self) -> pd.DataFrame:
        """One row per lookup with ``EVENT_COLUMNS`` (also when empty)."""
        with self._lock:
            events = list(self._events)
        return events_frame(events)

    def stats(self) -> dict[str, Any]:
        """Counters of this cache object plus what each tier describes of itself (its size; the
        disk fields read 0 when that tier is off; Redis adds its ``remote_*`` fields when on)."""
        with self._lock:
            stats: dict[str, Any] = dict(self._counters)
            stats.update(_MEMORY_OFF, in_flight=len(self._inflight), **_DISK_OFF)
        for tier in self.tiers:
            stats.update(tier.describe())
        return stats

    def clear(self, disk: bool = True) -> dict[str, int]:
        """Drop stored entries (memory, and disk unless ``disk=False``); events and counters stay.
        Compiles in flight are unaffected."""
        memory = self.memory.clear() if self.memory is not None else 0
        disk_removed = self.disk.clear()["removed"] if (disk and self.disk is not None) else 0
        return {"memory": memory, "disk": disk_removed}

    def verify(self) -> dict[str, int]:
        """Check every disk entry's checksum and lengths; corrupt ones are removed (the next
        compile of that key rewrites them). Returns counts: checked, ok, corrupt, removed."""
        if self.disk is None:
            return {
                "checked": 0,
                "ok": 0,
                "corrupt": 0,
                "removed": 0,
                "failed": 0,
                "unauthenticated": 0,
                "problems": [],
            }
        return self.disk.verify()


_default: CompileCache | None = None
_default_lock = threading.Lock()


def default_cache() -> CompileCache:
    """The process-wide cache, configured from the environment on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = CompileCache()
        return _default


def compile(request: CompileRequest, cache: CompileCache | None = None, compiler: Compiler | None = None) -> ObjectCode:
    """Compile through a cache (the process-wide one by default) and return the object code."""
    return (cache or default_cache()).get_or_compile(request, compiler).object_code
