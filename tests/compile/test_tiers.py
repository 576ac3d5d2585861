"""hipexplore.compile.tiers: the one interface of the compile cache's tiers (issue 48, item 5).

Each real tier (the memory LRU, a ``DiskCache`` folder, a ``RemoteCache`` on a real redis-server)
is held to the same contract: a miss is None, a put is read back whole, an entry stored under
another key with the same digest is a miss, ``lock`` is the tier's real cross-process lock (another
holder of the same key cannot take it meanwhile), and ``describe`` gives the tier's fields of
``CompileCache.stats()``. ``CompileCache`` keeps them as a list, fastest first.

Entries written by the revision before the tiers had one interface (``golden/*-a585d58.hxc``,
written by a585d58's ``DiskCache.put``, private and team) read back identically through the disk and
the Redis tiers, and this revision encodes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from hipexplore.compile import ObjectCode
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.entry import decode_entry, encode_entry
from hipexplore.compile.request import CacheKey
from hipexplore.compile.tiers import MemoryTier, Tier

GOLDEN = Path(__file__).resolve().parent / "golden"
SECRET = "team-secret-for-tests"
GOLDEN_SECRET = b"golden-team-secret"


def key(i: int, digest: str | None = None) -> CacheKey:
    canonical = json.dumps({"tiers": i}).encode()
    return CacheKey(canonical, digest or hashlib.sha256(canonical).hexdigest())


def code(i: int, size: int = 512) -> ObjectCode:
    return ObjectCode(
        bytes([i % 251]) * size,
        "host",
        "host",
        "shared-library",
        log=f"log {i}",
        lowered_names={"k": f"k{i}"},
        compile_seconds=0.1 * (i + 1),
        metadata={"i": i},
    )


@pytest.fixture(params=["memory", "disk", "remote"])
def tiers(request, tmp_path, monkeypatch):
    """(tier, a second tier object over the same storage, the describe() field that counts entries)."""
    if request.param == "memory":
        tier = MemoryTier(8, 1 << 20)
        return tier, tier, "entries"
    if request.param == "disk":
        return DiskCache(tmp_path / "c"), DiskCache(tmp_path / "c"), "disk_entries"
    from hipexplore.compile.remote import RemoteCache

    server = request.getfixturevalue("redis_server")
    return RemoteCache(server.url, secret=SECRET), RemoteCache(server.url, secret=SECRET), "remote_writes"


@pytest.mark.timeout(120)
def test_every_tier_keeps_the_one_contract(tiers):
    tier, other, counted = tiers
    assert isinstance(tier, Tier) and tier.name in ("memory", "disk", "remote")
    assert tier.get(key(1)) is None and tier.describe()[counted] == 0
    assert tier.put(key(1), code(1)) is True
    got = other.get(key(1))  # a second object over the same storage (the same one for memory)
    assert got == code(1) and got.binary == code(1).binary and dict(got.metadata) == {"i": 1}
    assert tier.describe()[counted] == 1
    collision = key(2, digest=key(1).digest)  # another key under the same digest: a miss, not key 1's code
    assert tier.get(collision) is None
    with tier.lock(key(1)) as held:
        assert held is True
        if tier is not other:  # a cross-process lock: the same key is not another holder's meanwhile
            wait = other.key_lock if isinstance(other, DiskCache) else other.lease
            with wait(key(1), timeout=0.2) as second:
                assert second is False
    with other.lock(key(1)) as held:  # released on leaving: the next holder gets it at once
        assert held is True


def test_the_memory_tier_is_an_lru_bounded_by_entries_and_bytes():
    tier = MemoryTier(max_entries=2, max_bytes=1500)
    assert tier.put(key(1), code(1)) and tier.put(key(2), code(2))
    assert tier.get(key(1)) is not None  # key 1 is now the most recently used
    assert tier.put(key(3), code(3))
    assert tier.get(key(2)) is None and tier.get(key(1)) is not None and tier.get(key(3)) is not None
    assert tier.describe() == {"entries": 2, "bytes": 1024, "evictions": 1}
    assert tier.put(key(4), code(4, size=1501)) is False  # larger than the whole tier: never stored
    assert tier.get(key(4)) is None and tier.describe()["entries"] == 2
    assert tier.put(key(5), code(5, size=1000))  # within the bytes: evicts until it fits
    assert tier.describe() == {"entries": 1, "bytes": 1000, "evictions": 3}
    assert tier.clear() == 1 and tier.describe() == {"entries": 0, "bytes": 0, "evictions": 3}


@pytest.mark.timeout(120)
def test_the_cache_holds_its_tiers_as_a_list_fastest_first(tmp_path, redis_server, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", SECRET)
    every = CompileCache(disk_dir=tmp_path / "c", remote=redis_server.url)
    assert [t.name for t in every.tiers] == ["memory", "disk", "remote"]
    assert every.tiers == [every.memory, every.disk, every.remote]
    assert [t.name for t in CompileCache(max_entries=0, disk_dir=tmp_path / "c", remote=False).tiers] == ["disk"]
    none = CompileCache(max_bytes=0, disk_dir=False, remote=False)
    assert none.tiers == [] and none.memory is None and not none.memory_enabled
    stats = every.stats()
    for tier in every.tiers:  # stats() is the counters plus what each tier describes of itself
        assert tier.describe().items() <= stats.items()


def golden(name: str) -> tuple[bytes, CacheKey, ObjectCode, dict]:
    data = (GOLDEN / f"entry-{name}-a585d58.hxc").read_bytes()
    header, _ = decode_entry(data, GOLDEN_SECRET if name == "team" else None)
    canonical = json.dumps({"golden": "entry written by a585d58", "i": 0}, sort_keys=True).encode()
    assert header["key"].encode() == canonical
    k = CacheKey(canonical, hashlib.sha256(canonical).hexdigest())
    expected = ObjectCode(
        bytes(range(256)) * 2,
        "host",
        "host",
        "shared-library",
        log="a log line",
        lowered_names={"poly<1>": "_Z4polyILi1EEvPf"},
        compile_seconds=0.25,
        metadata={"num_warps": 4},
    )
    return data, k, expected, header


@pytest.mark.parametrize("mode", ["private", "team"])
def test_disk_entries_of_the_previous_revision_read_back_identically(tmp_path, mode):
    data, k, expected, header = golden(mode)
    team = {"shared": "group", "secret": GOLDEN_SECRET} if mode == "team" else {}
    disk = DiskCache(tmp_path / "c", **team)
    path = disk.path_for(k.digest)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    got = disk.get(k)
    assert got == expected and got.binary == expected.binary and got.lowered_names == {"poly<1>": "_Z4polyILi1EEvPf"}
    # and this revision writes the same bytes
    assert encode_entry(k, expected, created=header["created"], secret=team.get("secret")) == data
    assert disk.verify()["ok"] == 1


@pytest.mark.timeout(120)
def test_a_team_entry_of_the_previous_revision_reads_back_from_redis(redis_server):
    from hipexplore.compile.remote import RemoteCache

    data, k, expected, _ = golden("team")
    redis_server.client().set(f"hx:v1:{k.digest}", data)  # the Redis tier's values are the team entry's bytes
    got = RemoteCache(redis_server.url, secret=GOLDEN_SECRET).get(k)
    assert got == expected and got.binary == expected.binary
