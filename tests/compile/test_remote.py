"""The Redis team tier (issue 12, deliverable 5) against a real redis-server on a free loopback
port (the ``redis_server`` fixture starts and stops it), with real host compiles in real processes.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.entry import encode_entry
from hipexplore.compile.remote import RemoteCache
from hipexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SECRET = "team-secret-for-tests"


@pytest.fixture(autouse=True)
def _team(monkeypatch):
    from conftest import require_compiler

    require_compiler("host")
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", SECRET)


def req(v: int) -> CompileRequest:
    return CompileRequest(Source("r.c", f"int answer(void) {{ return {v}; }}\n"), "host", "host")


SECOND_PROCESS = r"""
import json, sys
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
cache = CompileCache(disk_dir=sys.argv[1], remote=sys.argv[2])
r = CompileRequest(Source("r.c", "int answer(void) { return %s; }\n" % sys.argv[3]), "host", "host")
res = cache.get_or_compile(r)
again = CompileCache(disk_dir=sys.argv[1], remote=False).get_or_compile(r)
print(json.dumps({"outcome": res.outcome, "stats": cache.stats()["remote_hits"], "disk_after": again.outcome,
                  "events": cache.events()["outcome"].tolist(), "binary": res.binary.hex()}))
"""


def test_a_second_process_with_an_empty_local_directory_gets_a_remote_hit(tmp_path, redis_server):
    first = CompileCache(disk_dir=tmp_path / "host-a", remote=redis_server.url).get_or_compile(req(7))
    assert first.outcome == "compiled"
    out = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(tmp_path / "host-b"), redis_server.url, "7"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["outcome"] == "remote-hit" and report["stats"] == 1 and report["events"] == ["remote-hit"]
    assert bytes.fromhex(report["binary"]) == first.binary
    assert report["disk_after"] == "disk-hit"  # a remote hit is copied to the local disk tier


def test_remote_entries_are_authenticated_and_their_full_key_compared(tmp_path, redis_server):
    client = redis_server.client()
    cache = CompileCache(disk_dir=False, remote=redis_server.url)
    first = cache.get_or_compile(req(8))
    name = f"hx:v1:{first.key.digest}"
    evil = CompileCache(disk_dir=False, remote=False).get_or_compile(req(666)).object_code
    client.set(name, encode_entry(first.key, evil))  # plain checksum: anyone can write that
    assert CompileCache(disk_dir=False, remote=redis_server.url).get_or_compile(req(8)).outcome == "compiled"
    client.set(name, encode_entry(first.key, evil, secret=b"another team"))
    fresh = CompileCache(disk_dir=False, remote=redis_server.url)
    assert (
        fresh.get_or_compile(req(8)).outcome == "compiled" and fresh.remote.counters["corrupt"] == 2
    )  # looked at before and under the lease
    # the right secret but another key under this digest (a collision): a miss
    other = CompileCache(disk_dir=False, remote=False).key_for(req(9))
    client.set(name, encode_entry(other, evil, secret=SECRET.encode()))
    fresh = CompileCache(disk_dir=False, remote=redis_server.url)
    assert fresh.get_or_compile(req(8)).outcome == "compiled" and fresh.remote.counters["key_mismatches"] == 2
    assert CompileCache(disk_dir=False, remote=redis_server.url).get_or_compile(req(8)).outcome == "remote-hit"


def test_the_remote_tier_needs_a_secret_and_a_valid_url(monkeypatch, redis_server):
    monkeypatch.delenv("HIPEXPLORE_CACHE_SECRET")
    with pytest.raises(ConfigError, match="HIPEXPLORE_CACHE_SECRET"):
        CompileCache(disk_dir=False, remote=redis_server.url)
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", SECRET)
    monkeypatch.setenv("HIPEXPLORE_CACHE_REMOTE", "http://example")
    with pytest.raises(ConfigError, match=r"HIPEXPLORE_CACHE_REMOTE='http://example' is invalid: expected a Redis URL"):
        CompileCache(disk_dir=False)
    monkeypatch.setenv("HIPEXPLORE_CACHE_REMOTE", redis_server.url)
    assert CompileCache(disk_dir=False).remote is not None


def test_the_server_bounds_memory_itself(redis_server):
    """The tier sets no TTL and never scans: the server's maxmemory + allkeys-lru bound it."""
    cfg = redis_server.client().config_get("maxmemory*")
    assert cfg["maxmemory-policy"] == "allkeys-lru" and int(cfg["maxmemory"]) > 0
    cache = CompileCache(disk_dir=False, remote=redis_server.url)
    key = cache.get_or_compile(req(10)).key
    assert redis_server.client().ttl(f"hx:v1:{key.digest}") == -1


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
def test_an_unreachable_or_slow_server_never_fails_a_compile(tmp_path, redis_server, outage, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_REMOTE_TIMEOUT", "0.3")
    cache = CompileCache(disk_dir=tmp_path, remote=redis_server.url)
    if outage == "stopped":
        redis_server.stop()
    else:
        os.kill(redis_server.proc.pid, signal.SIGSTOP)  # accepts connections (the kernel does), never answers
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.monotonic()
            results = [cache.get_or_compile(req(v)) for v in (11, 12, 11)]
            seconds = time.monotonic() - start
        outcomes = [r.outcome for r in results]
        assert outcomes == ["compiled", "compiled", "memory-hit"]
        # what the outage cost beyond the compiles themselves: one 0.3 s remote timeout, not one per
        # request (the server is then marked unavailable) and never a hang. Less the compiles' own
        # time, which a loaded machine stretches (issue 26.6: "all three within 5 s" measured it too)
        compiling = sum(r.compile_seconds for r in results if r.outcome == "compiled")
        assert seconds - compiling < 3, (seconds, compiling)
        msgs = [str(w.message) for w in caught if "Redis" in str(w.message)]
        assert len(msgs) == 1 and redis_server.url.split("//")[1].split("/")[0] in msgs[0], msgs
        assert cache.remote.available is False and cache.stats()["remote_available"] is False
        assert CompileCache(disk_dir=tmp_path, remote=False).get_or_compile(req(11)).outcome == "disk-hit"
    finally:
        if outage == "frozen":
            os.kill(redis_server.proc.pid, signal.SIGCONT)


def test_a_redis_password_never_appears_in_messages(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = RemoteCache(f"redis://user:hunter2@127.0.0.1:{port}/0", timeout=0.2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert remote.get(CompileCache(disk_dir=False, remote=False).key_for(req(1))) is None
    assert caught and "hunter2" not in str(caught[0].message) and "***" in str(caught[0].message)
    assert "hunter2" not in repr(remote)


def _host_worker(disk: str, url: str, values: list[int], barrier) -> list[str]:
    os.environ["HIPEXPLORE_CACHE_SECRET"] = SECRET
    cache = CompileCache(disk_dir=disk, remote=url)
    barrier.wait()
    return [cache.get_or_compile(req(v)).outcome for v in values]


def test_hosts_sharing_a_server_compile_each_key_once(tmp_path, redis_server):
    """Four "hosts" (processes with their own local directories: no shared disk lock) share only
    the Redis server; its lease makes one of them compile each key."""
    values = [21, 22, 23, 24]
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(4)
        with ctx.Pool(4) as pool:
            args = [
                (str(tmp_path / f"host-{h}"), redis_server.url, values if h % 2 == 0 else values[::-1], barrier)
                for h in range(4)
            ]
            results = pool.starmap(_host_worker, args, chunksize=1)
    outcomes = [o for host in results for o in host]
    assert outcomes.count("compiled") == 4, results
    assert outcomes.count("remote-hit") == 12


def test_remote_hits_are_counted_in_the_report_tables(tmp_path, redis_server):
    from hipexplore.report.replay import scenario_table

    CompileCache(disk_dir=False, remote=redis_server.url).get_or_compile(req(31))
    cache = CompileCache(disk_dir=False, remote=redis_server.url)
    cache.get_or_compile(req(31))
    cache.get_or_compile(req(31))
    ev = cache.events()
    assert ev["outcome"].tolist() == ["remote-hit", "memory-hit"]
    assert ev["seconds_saved"].iloc[0] > -1.0
    table = scenario_table(ev.assign(scenario="warm"))
    assert (table.loc["warm", "remote_hits"], table.loc["warm", "memory_hits"], table.loc["warm", "compiles"]) == (
        1,
        1,
        0,
    )
