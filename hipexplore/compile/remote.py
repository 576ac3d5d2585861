"""The team tier of the compile cache: entries in a Redis server several hosts share.

Why Redis: a team's build hosts and notebooks already reach one, it evicts on its own under
``maxmemory`` with ``allkeys-lru`` (the size bound is the server's, set once by whoever runs it;
this tier sets no TTL on entries and never scans), and ``SET NX PX`` gives a lease with expiry, so
hosts sharing a server compile a key once and a dead holder's lease runs out by itself.

The values are the disk tier's entry bytes (``entry.py``) with an HMAC under the team secret
(``HIPEXPLORE_CACHE_SECRET``, required): anyone who can write to the server but lacks the secret
cannot plant code, and the full key stored in the entry is compared on every hit.

An unreachable, slow or trickling server never fails a compile and never costs more than its
timeout per request (issue 25, item 6):

* **Every request is bounded as a whole.** ``HIPEXPLORE_CACHE_REMOTE_TIMEOUT`` is a deadline for
  the whole request (connect, send, every read of the reply), not for each socket read: the
  connection's socket is wrapped so each operation gets only the time left until the deadline;
  past it the request raises and the connection is dropped (a half-read reply is never reused).
  redis-py's own retries are off (a retry would start the clock again).
* **The tier switches off** (one ``RuntimeWarning``, local tiers only from then on) at the first
  failed request, and after ``SLOW_LIMIT`` answers in a row slower than ``SLOW_FRACTION`` of the
  timeout: a server that answers just inside the deadline every time would otherwise cost that
  much on every lookup.
* **Leases have an owner and a lifetime.** A lease value names its owner (host, pid, a random
  token), its lifetime and when it was signed, and carries an HMAC under the team secret over the
  lease's name and those fields; it is set with ``PX`` = that lifetime (the compile timeout plus
  ``LEASE_MARGIN_S``). A host waits on another's lease only while it authenticates, has an expiry
  and no more than the longest lifetime this host would give one, and at most for the time it had
  left when first seen: a lease an outsider set without expiry (or with a long one) is not waited
  on at all. A lease is released only by its owner and only while it still holds it
  (compare-and-delete in one Lua script), so a lease that expired and was taken by another host is
  never deleted.
* **A replayed lease is not waited on** (issue 25, item 5). Anyone who can reach the server can
  read a live lease and set the same value again after its holder let go: the HMAC still verifies,
  and every host used to wait on it for the lock timeout, every round. So the holder signs its lease
  again every ``LEASE_RENEW_S`` while it compiles (compare-and-set, the expiry kept), and a waiter
  stops waiting on a value it has seen unchanged for ``LEASE_STALE_S`` (by its own clock: no clocks
  are compared); a value signed more than ``LEASE_STALE_S + LEASE_CLOCK_SKEW_S`` ago by the waiter's
  clock (an old capture) and a lease naming this very process that it does not hold (its own,
  replayed) are not waited on at all. What an outsider can still cost: ``LEASE_STALE_S`` of waiting
  with a value captured in the last minute; compiling the key twice is all it ever changes.

Not bounded by the deadline: resolving the server's host name (``getaddrinfo``) and a TLS
handshake (``rediss://``: Python bounds each of its reads by the timeout, not the handshake).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator, TypeVar

from .. import settings
from ..errors import ConfigError, warn_line
from .base import ObjectCode
from .entry import MAX_ENTRY_BYTES, Corrupt, decode_entry, encode_entry, object_code
from .request import KEY_SCHEMA, CacheKey

#: How often a host waiting on another host's lease looks for the entry.
LEASE_POLL_S = 0.05
#: A lease lives for the compile timeout plus this (the holder writes the tiers after compiling).
LEASE_MARGIN_S = 30.0
#: The holder signs its lease again this often while it compiles (a waiter sees the value change).
LEASE_RENEW_S = 1.0
#: A lease value a waiter has seen unchanged this long is a holder gone or a replay: the wait ends.
LEASE_STALE_S = 5.0
#: How far hosts' clocks may differ: a value signed longer ago than LEASE_STALE_S + this is not waited on.
LEASE_CLOCK_SKEW_S = 60.0
#: An answer slower than this fraction of the timeout is slow; SLOW_LIMIT in a row turn the tier off.
SLOW_FRACTION = 0.5
SLOW_LIMIT = 3
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
#: compare-and-set that keeps the expiry: a renewal never makes a lease live longer than it was set to
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then local t = redis.call('pttl', KEYS[1]) "
    "if t > 0 then redis.call('set', KEYS[1], ARGV[2], 'PX', t) return 1 end end return 0"
)
_LEASE_VERSION = "hx2"
#: tokens of the leases this process holds now (across every RemoteCache in it)
_HELD: set[str] = set()
_HELD_LOCK = threading.Lock()

T = TypeVar("T")


#: the URL without a password, for messages (settings' errors print it the same way)
redacted = settings.redacted_url


def check_url(url: object, what: str = "remote") -> str:
    """``url`` if it is a Redis URL with a host (``redis://``, ``rediss://``) or a socket path
    (``unix://``) and a valid port; else a one-line ``ConfigError`` naming the value."""
    try:
        if not isinstance(url, str):
            raise ValueError(url)
        return settings.CACHE_REMOTE.parse(url)  # the variable's own check, for a URL given in Python too
    except ValueError:
        shown = redacted(url) if isinstance(url, str) else url
        raise ConfigError(
            f"{what} must be a Redis URL with a host and a port in 1-65535, such as "
            f"redis://host:6379/0 (or unix:///path/to/redis.sock); got {shown!r}"
        ) from None


# -- a deadline for a whole request ------------------------------------------------------------
class _Deadline(threading.local):
    at: float | None = None


_DEADLINE = _Deadline()


class DeadlinePassed(socket.timeout):
    """The request's deadline passed before this socket operation could start."""


def _time_left(timeout: float | None) -> float | None:
    """What a socket operation may take now: ``timeout`` (what redis-py asked for; None blocks)
    cut to the time left before the current request's deadline."""
    at = _DEADLINE.at
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the remote request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _BoundedSocket:
    """A connected socket whose every blocking operation ends by the current request's deadline.
    Everything else is the socket's own (``__getattr__``)."""

    def __init__(self, sock: Any, timeout: float | None) -> None:
        self._sock = sock
        self._timeout = timeout

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        self._sock.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self._timeout

    def _arm(self) -> None:
        self._sock.settimeout(_time_left(self._timeout))

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return self._sock.recv(*args)

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return self._sock.recv_into(*args)

    def send(self, *args: Any) -> int:
        self._arm()
        return self._sock.send(*args)

    def sendall(self, *args: Any) -> None:
        self._arm()  # Python bounds a whole sendall by the timeout (3.5+), not each send
        return self._sock.sendall(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


_BOUNDED: dict[type, type] = {}


def _bounded_class(base: type) -> type:
    """``base`` (redis-py's TCP, TLS or Unix socket connection) whose connect and socket honour
    the current request's deadline."""
    if base not in _BOUNDED:

        class Bounded(base):  # type: ignore[misc, valid-type]
            def _connect(self):
                limit = self.socket_connect_timeout  # the configured one: restored below
                self.socket_connect_timeout = _time_left(limit)
                try:
                    sock = super()._connect()
                finally:
                    self.socket_connect_timeout = limit
                return _BoundedSocket(sock, self.socket_timeout)

        Bounded.__name__ = Bounded.__qualname__ = f"Bounded{base.__name__}"
        _BOUNDED[base] = Bounded
    return _BOUNDED[base]


# -- the tier ----------------------------------------------------------------------------------
class RemoteCache:
    """Entries in Redis under ``hx:v<schema>:<digest>``; leases under ``hx:lease:<sha256 of the key>``.
    A ``tiers.Tier``: its ``lock`` is ``lease``, its ``describe`` is ``stats``."""

    name = "remote"

    def __init__(self, url: str, secret: str | bytes | None = None, timeout: float | None = None) -> None:
        url = check_url(url)
        from ..extras import require

        redis = require("redis", f"{settings.CACHE_REMOTE.name}={redacted(url)}", "remote")
        from redis.backoff import NoBackoff
        from redis.connection import parse_url
        from redis.retry import Retry

        secret = settings.CACHE_SECRET.get() if secret is None else secret
        if not secret:
            raise ConfigError(
                f"{settings.CACHE_REMOTE.name} needs a team secret in {settings.CACHE_SECRET.name} "
                "(entries on a shared server are authenticated with it)"
            )
        self.secret = secret.encode("utf-8") if isinstance(secret, str) else secret
        self.url = url
        self.timeout = settings.CACHE_REMOTE_TIMEOUT.get() if timeout is None else float(timeout)
        if not (self.timeout > 0 and self.timeout != float("inf")):
            raise ConfigError(f"the remote timeout must be a positive, finite number of seconds; got {timeout!r}")
        self._errors = (redis.RedisError, OSError)
        options = parse_url(url)
        base = options.pop("connection_class", redis.Connection)
        pool = redis.ConnectionPool(
            connection_class=_bounded_class(base),
            socket_connect_timeout=self.timeout,
            socket_timeout=self.timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            health_check_interval=0,
            **options,
        )
        self.client = redis.Redis(connection_pool=pool)
        self.available = True
        self.error = ""
        self._lock = threading.Lock()
        self._slow_in_a_row = 0
        self.counters = {
            "hits": 0,
            "misses": 0,
            "corrupt": 0,
            "key_mismatches": 0,
            "writes": 0,
            "errors": 0,
            "leases": 0,
            "lease_waits": 0,
            "leases_ignored": 0,
            "lease_waits_ended": 0,
            "slow": 0,
            "requests": 0,
        }

    def __repr__(self) -> str:
        return f"RemoteCache({redacted(self.url)!r}, available={self.available})"

    def _name(self, digest: str) -> str:
        return f"hx:v{KEY_SCHEMA}:{digest}"

    def _count(self, name: str) -> None:
        with self._lock:
            self.counters[name] += 1

    def _off(self, why: str) -> None:
        """Turn the tier off for this process, with one warning (the first reason wins)."""
        with self._lock:
            if not self.available:
                return
            self.available = False
            self.error = why
        try:
            self.client.connection_pool.disconnect()
        except Exception:  # noqa: BLE001 - dropping sockets must never fail a compile
            pass
        warn_line(
            f"hipexplore compile cache: the Redis tier at {redacted(self.url)} {why}; continuing with the local tiers only"
        )

    def _fail(self, exc: BaseException) -> None:
        self._count("errors")
        self._off(f"failed ({type(exc).__name__}: {exc})")

    def _request(self, call: Callable[[], T]) -> T:
        """Run one request (one command or one pipeline) under a deadline ``timeout`` seconds
        away; count it slow when it took more than ``SLOW_FRACTION`` of that. Raises what the
        client raised (the caller turns the tier off)."""
        start = time.monotonic()
        _DEADLINE.at = start + self.timeout
        try:
            result = call()
        except self._errors:
            try:  # the socket may hold half a reply: never reuse it
                self.client.connection_pool.disconnect()
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            _DEADLINE.at = None
        elapsed = time.monotonic() - start
        with self._lock:
            self.counters["requests"] += 1
            if elapsed > SLOW_FRACTION * self.timeout:
                self.counters["slow"] += 1
                self._slow_in_a_row += 1
                slow = self._slow_in_a_row
            else:
                self._slow_in_a_row = 0
                slow = 0
        if slow >= SLOW_LIMIT:
            self._off(
                f"answered {slow} requests in a row in more than {SLOW_FRACTION:g} x its timeout of "
                f"{self.timeout:g} s (the last one {elapsed:.2f} s)"
            )
        return result

    def get(self, key: CacheKey) -> ObjectCode | None:
        if not self.available:
            return None
        try:
            data = self._request(lambda: self.client.get(self._name(key.digest)))
        except self._errors as exc:
            self._fail(exc)
            return None
        if data is None:
            self._count("misses")
            return None
        try:
            if len(data) > MAX_ENTRY_BYTES:
                raise Corrupt("too large")
            header, binary = decode_entry(bytes(data), self.secret)
        except Corrupt:
            self._count("corrupt")
            self._count("misses")
            return None
        if header["key"].encode("utf-8") != key.canonical:
            self._count("key_mismatches")
            self._count("misses")
            return None
        self._count("hits")
        return object_code(header, binary)

    def put(self, key: CacheKey, code: ObjectCode) -> bool:
        if not self.available:
            return False
        data = encode_entry(key, code, secret=self.secret)
        if len(data) > MAX_ENTRY_BYTES:
            return False
        try:  # no TTL: the server's maxmemory + allkeys-lru bound it
            self._request(lambda: self.client.set(self._name(key.digest), data))
        except self._errors as exc:
            self._fail(exc)
            return False
        self._count("writes")
        return True

    # -- leases ----------------------------------------------------------------------------------
    @staticmethod
    def lease_name(key: CacheKey) -> str:
        return f"hx:lease:{hashlib.sha256(key.canonical).hexdigest()}"  # per full key: digest collisions never wait

    @staticmethod
    def lease_lifetime_ms() -> int:
        """How long a lease of this host lives: the compile timeout plus ``LEASE_MARGIN_S``."""
        return int((settings.COMPILE_TIMEOUT.get() + LEASE_MARGIN_S) * 1000)

    def _lease_mac(self, name: str, fields: str) -> str:
        return hmac.new(self.secret, f"{name}\0{fields}".encode("utf-8"), hashlib.sha256).hexdigest()

    def lease_value(self, name: str, ttl_ms: int, token: str | None = None, signed_ms: int | None = None) -> str:
        """A lease value for ``name``: owner (host:pid), token (new unless given: a renewal keeps
        its lease's), lifetime, when it was signed (now unless given) and their HMAC."""
        token = secrets.token_hex(8) if token is None else token
        signed_ms = int(time.time() * 1000) if signed_ms is None else int(signed_ms)
        fields = f"{_LEASE_VERSION}|{_owner()}|{token}|{ttl_ms}|{signed_ms}"
        return f"{fields}|{self._lease_mac(name, fields)}"

    def _parse_lease(self, name: str, value: bytes | None) -> dict | None:
        """The fields of an authentic lease value of ``name``; None for anything else."""
        if value is None:
            return None
        try:
            text = value.decode("ascii")
            fields, mac = text.rsplit("|", 1)
            version, owner, token, ttl, signed = fields.split("|")
            ttl_ms, signed_ms = int(ttl), int(signed)
        except (UnicodeDecodeError, ValueError):
            return None
        if version != _LEASE_VERSION or not hmac.compare_digest(mac, self._lease_mac(name, fields)):
            return None
        return {"owner": owner, "token": token, "ttl_ms": ttl_ms, "signed_ms": signed_ms}

    def declared_lifetime(self, name: str, value: bytes | None) -> int | None:
        """The lifetime (ms) an authentic lease value declares; None for anything else (another key's
        value, another secret's, a forged one). Public: the authentication is tested through it."""
        lease = self._parse_lease(name, value)
        return None if lease is None else lease["ttl_ms"]

    def _worth_waiting(self, name: str, value: bytes | None, pttl: int) -> tuple[bool, str]:
        """Whether another holder's lease is one to wait on, and why not."""
        lease = self._parse_lease(name, value)
        if lease is None:
            return False, "not authenticated under the team secret"
        if pttl < 0:  # -1: no expiry, -2: gone
            return False, "no expiry" if pttl == -1 else "gone"
        declared, longest = lease["ttl_ms"], self.lease_lifetime_ms()
        if pttl > declared or declared > longest:
            return False, f"a lifetime ({max(pttl, declared)} ms) longer than this host allows ({longest} ms)"
        if lease["owner"] == _owner():
            with _HELD_LOCK:
                if lease["token"] not in _HELD:
                    return False, "this process's own lease, which it does not hold (replayed)"
        age_s = time.time() - lease["signed_ms"] / 1000.0
        if age_s > LEASE_STALE_S + LEASE_CLOCK_SKEW_S:
            return False, f"signed {age_s:.0f} s ago and not renewed since (replayed)"
        return True, ""

    @contextmanager
    def lease(self, key: CacheKey, timeout: float | None = None) -> Iterator[bool]:
        """Hold ``key``'s lease while compiling it: yields True when this host holds it (renewed
        every ``LEASE_RENEW_S`` meanwhile); False after waiting for another holder's lease to end
        (the caller then looks again and compiles if still missing). A wait lasts at most
        ``timeout`` (``HIPEXPLORE_CACHE_LOCK_TIMEOUT``), at most the lease's time left when first
        seen, and ends once the value stays unchanged for ``LEASE_STALE_S``; a lease that does not
        authenticate, has no expiry or a longer one than this host would give, is an old capture or
        this process's own replayed is not waited on."""
        timeout = settings.CACHE_LOCK_TIMEOUT.get() if timeout is None else timeout
        if not self.available:
            yield False
            return
        name = self.lease_name(key)
        ttl_ms = self.lease_lifetime_ms()
        token = secrets.token_hex(8)
        value = self.lease_value(name, ttl_ms, token)
        entry = self._name(key.digest)
        renewal: _Renewal | None = None
        with _HELD_LOCK:
            _HELD.add(token)
        try:
            try:
                if self._request(lambda: self.client.set(name, value, nx=True, px=ttl_ms)):
                    self._count("leases")
                    renewal = _Renewal(self, name, ttl_ms, token, value)
                else:
                    self._wait(name, entry, timeout)
            except self._errors as exc:
                self._fail(exc)
            yield renewal is not None
        finally:
            if renewal is not None:
                renewal.release()
            with _HELD_LOCK:
                _HELD.discard(token)

    def lock(self, key: CacheKey) -> AbstractContextManager[bool]:
        """The ``Tier`` lock: ``lease`` with its default timeout."""
        return self.lease(key)

    def _look(self, name: str, entry: str) -> tuple[bytes | None, int, bool]:
        def call():
            pipe = self.client.pipeline(transaction=False)
            pipe.get(name)
            pipe.pttl(name)
            pipe.exists(entry)
            return pipe.execute()

        value, pttl, exists = self._request(call)
        return value, int(pttl), bool(exists)

    def _wait(self, name: str, entry: str, timeout: float) -> None:
        start = time.monotonic()
        value, pttl, exists = self._look(name, entry)
        if exists or pttl == -2:
            return
        ok, why = self._worth_waiting(name, value, pttl)
        if not ok:
            self._count("leases_ignored")
            return
        self._count("lease_waits")
        until = start + min(timeout, pttl / 1000.0 + 2 * LEASE_POLL_S)
        seen, seen_at = value, start  # a holder renews its value: one that stays the same is not held
        while self.available and time.monotonic() < until:
            time.sleep(LEASE_POLL_S)
            value, pttl, exists = self._look(name, entry)
            if exists or pttl == -2 or not self._worth_waiting(name, value, pttl)[0]:
                return
            now = time.monotonic()
            if value != seen:
                seen, seen_at = value, now
            elif now - seen_at > LEASE_STALE_S:
                self._count("lease_waits_ended")
                return

    def stats(self) -> dict:
        with self._lock:
            counters = dict(self.counters)
        return {
            "remote_url": redacted(self.url),
            "remote_available": self.available,
            "remote_error": self.error,
            **{f"remote_{k}": v for k, v in counters.items()},
        }

    describe = stats  # the Tier description: every field already carries the remote_ prefix


def _owner() -> str:
    """Who holds a lease: this host and process (the pid now: a forked child is not its parent)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Renewal:
    """A held lease, signed again every ``LEASE_RENEW_S`` by a daemon thread until ``release``.

    Why: a waiter stops waiting on a value that stays the same for ``LEASE_STALE_S``, so a value an
    outsider captured and set again costs at most that; the holder's own changes every second. The
    renewal is a compare-and-set that keeps the expiry (``_RENEW``): it never revives a lease that
    expired or was taken by another holder, and then it stops."""

    def __init__(self, cache: RemoteCache, name: str, ttl_ms: int, token: str, value: str) -> None:
        self.cache, self.name, self.ttl_ms, self.token, self.value = cache, name, ttl_ms, token, value
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the value the release compares against is the last one set
        self._thread = threading.Thread(target=self._run, name="hipexplore-lease-renewal", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cache = self.cache
        while not self._stop.wait(LEASE_RENEW_S) and cache.available:
            with self._lock:
                if self._stop.is_set():
                    return
                new = cache.lease_value(self.name, self.ttl_ms, self.token)
                try:
                    kept = cache._request(lambda: cache.client.eval(_RENEW, 1, self.name, self.value, new))
                except cache._errors as exc:
                    if cache.available:  # not the request cut short when another thread turned the tier off
                        cache._fail(exc)
                    return
                if not kept:
                    return  # expired, or taken by another holder: theirs now
                self.value = new

    def release(self) -> None:
        """Stop renewing, then delete the lease if it is still the value this holder set last."""
        with self._lock:
            self._stop.set()
        self._thread.join()
        cache = self.cache
        if cache.available:
            try:  # compare-and-delete: a lease that expired and was taken by another host stays theirs
                cache._request(lambda: cache.client.eval(_RELEASE, 1, self.name, self.value))
            except cache._errors as exc:
                cache._fail(exc)


def remote_cache_from_env(remote: str | bool | None = None) -> RemoteCache | None:
    """The Redis tier ``HIPEXPLORE_CACHE_REMOTE`` (or ``remote``, a URL) asks for; None when off."""
    if remote is False:
        return None
    url = settings.CACHE_REMOTE.get() if remote in (None, True) else remote
    if url is None:
        return None
    if not isinstance(url, str):
        raise ConfigError(f"remote must be a redis:// URL, False or None (environment); got {url!r}")
    return RemoteCache(check_url(url, "remote" if isinstance(remote, str) else settings.CACHE_REMOTE.name))
