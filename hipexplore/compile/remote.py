"""The team tier of the compile cache: entries in a Redis server several hosts share.

Why Redis: a team's build hosts and notebooks already reach one, it evicts on its own under
``maxmemory`` with ``allkeys-lru`` (the size bound is the server's, set once by whoever runs it;
this tier sets no TTL and never scans), and ``SET NX PX`` gives a lease with expiry, so hosts
sharing a server compile a key once and a dead holder's lease runs out by itself.

The values are the disk tier's entry bytes (``entry.py``) with an HMAC under the team secret
(``HIPEXPLORE_CACHE_SECRET``, required): anyone who can write to the server but lacks the secret
cannot plant code, and the full key stored in the entry is compared on every hit.

An unreachable or slow server never fails a compile: connect and read timeouts are short
(``HIPEXPLORE_CACHE_REMOTE_TIMEOUT``), and the first failure gives ONE ``RuntimeWarning`` and
turns the tier off for the process (local tiers only from then on).
"""
from __future__ import annotations

import hashlib
import secrets
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

from .. import settings
from ..errors import ConfigError
from .base import ObjectCode
from .entry import MAX_ENTRY_BYTES, Corrupt, decode_entry, encode_entry, object_code
from .request import KEY_SCHEMA, CacheKey

#: How often a host waiting on another host's lease looks for the entry.
LEASE_POLL_S = 0.05
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


def redacted(url: str) -> str:
    """The URL without a password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RemoteCache:
    """Entries in Redis under ``hx:v<schema>:<digest>``; leases under ``hx:lease:<digest>``."""

    def __init__(self, url: str, secret: str | bytes | None = None, timeout: float | None = None) -> None:
        try:
            import redis
        except ImportError:
            raise ConfigError(f"{settings.CACHE_REMOTE.name}={redacted(url)} needs redis-py: "
                              "pip install 'hipexplore[remote]'") from None
        secret = settings.CACHE_SECRET.get() if secret is None else secret
        if not secret:
            raise ConfigError(f"{settings.CACHE_REMOTE.name} needs a team secret in {settings.CACHE_SECRET.name} "
                              "(entries on a shared server are authenticated with it)")
        self.secret = secret.encode("utf-8") if isinstance(secret, str) else secret
        self.url = url
        self.timeout = settings.CACHE_REMOTE_TIMEOUT.get() if timeout is None else float(timeout)
        self._errors = (redis.RedisError, OSError)
        self.client = redis.Redis.from_url(url, socket_connect_timeout=self.timeout, socket_timeout=self.timeout,
                                           retry_on_timeout=False, health_check_interval=0)
        self.available = True
        self.error = ""
        self._lock = threading.Lock()
        self.counters = {"hits": 0, "misses": 0, "corrupt": 0, "key_mismatches": 0, "writes": 0, "errors": 0,
                         "leases": 0, "lease_waits": 0}

    def __repr__(self) -> str:
        return f"RemoteCache({redacted(self.url)!r}, available={self.available})"

    def _name(self, digest: str) -> str:
        return f"hx:v{KEY_SCHEMA}:{digest}"

    def _count(self, name: str) -> None:
        with self._lock:
            self.counters[name] += 1

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            self.counters["errors"] += 1
            if not self.available:
                return
            self.available = False
            self.error = f"{type(exc).__name__}: {exc}"
        warnings.warn(f"hipexplore compile cache: the Redis tier at {redacted(self.url)} failed ({type(exc).__name__}: "
                      f"{exc}); continuing with the local tiers only", RuntimeWarning, stacklevel=4)

    def get(self, key: CacheKey) -> ObjectCode | None:
        if not self.available:
            return None
        try:
            data = self.client.get(self._name(key.digest))
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
        try:
            self.client.set(self._name(key.digest), data)  # no TTL: the server's maxmemory + allkeys-lru bound it
        except self._errors as exc:
            self._fail(exc)
            return False
        self._count("writes")
        return True

    @contextmanager
    def lease(self, key: CacheKey, timeout: float | None = None) -> Iterator[bool]:
        """Hold ``key``'s lease while compiling it: yields True when this host holds it; False
        after waiting (bounded by ``timeout``) for another host's lease to end (the caller then
        looks again and compiles if still missing). The lease expires on its own after the
        compile timeout plus a margin, so a holder that died does not block anyone for long."""
        timeout = settings.CACHE_LOCK_TIMEOUT.get() if timeout is None else timeout
        if not self.available:
            yield False
            return
        name = f"hx:lease:{hashlib.sha256(key.canonical).hexdigest()}"  # per full key: digest collisions never wait
        token = secrets.token_hex(8)
        ttl_ms = int((settings.COMPILE_TIMEOUT.get() + 30.0) * 1000)
        held = False
        try:
            held = bool(self.client.set(name, token, nx=True, px=ttl_ms))
            if not held:
                self._count("lease_waits")
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and self.client.exists(name) and not self.client.exists(self._name(key.digest)):
                    time.sleep(LEASE_POLL_S)
            else:
                self._count("leases")
        except self._errors as exc:
            self._fail(exc)
            held = False
        try:
            yield held
        finally:
            if held and self.available:
                try:
                    self.client.eval(_RELEASE, 1, name, token)
                except self._errors as exc:
                    self._fail(exc)

    def stats(self) -> dict:
        with self._lock:
            counters = dict(self.counters)
        return {"remote_url": redacted(self.url), "remote_available": self.available, "remote_error": self.error,
                **{f"remote_{k}": v for k, v in counters.items()}}


def remote_cache_from_env(remote: str | bool | None = None) -> RemoteCache | None:
    """The Redis tier ``HIPEXPLORE_CACHE_REMOTE`` (or ``remote``, a URL) asks for; None when off."""
    if remote is False:
        return None
    url = settings.CACHE_REMOTE.get() if remote in (None, True) else remote
    if url is None:
        return None
    if not isinstance(url, str):
        raise ConfigError(f"remote must be a redis:// URL, False or None (environment); got {url!r}")
    if isinstance(remote, str):
        try:
            settings._redis_url(remote)
        except ValueError:
            raise ConfigError(f"remote must be a Redis URL such as redis://host:6379/0; got {remote!r}") from None
    return RemoteCache(url)
