"""Leases and locks an outsider can make a victim wait on (the Redis tier's leases, the team
directory's key locks).

Redis, against a real ``redis-server`` on loopback (the ``redis_server`` fixture): the attacker is
anyone who can reach the server (here: a plain redis client, as an outsider's would be) and has no
team secret. It can read every lease and set any value, so it sets a forged lease (no valid HMAC),
replays the victim's own lease read while the victim held it, replays a teammate's lease after the
teammate let go, and replays one captured long ago. The victim's real host compile of that key must
not wait on any of them for its lock timeout: a lease that is not authentic, is this process's own,
or is old is ignored at once; a fresh capture costs at most ``LEASE_STALE_S``. The control: an
honest teammate that holds its lease longer than that (renewing it) is still waited on, and the
victim gets its entry instead of compiling.

Team directory, with REAL users (tests/security/twousers.py): another user of the team holds the
lock of the victim's key forever. The victim's compile waits at most
``HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT`` (its default, and a value given), says so in one warning line
naming the lock and its holder, then compiles and stores a verified entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twousers import users  # noqa: F401  (users: the module's fixture)

REPO = Path(__file__).resolve().parents[2]
SECRET = "team-secret-of-the-lease-tests"
#: the victim's lock timeout here: what a waited-on lease costs it in full
LOCK_TIMEOUT = 12.0


@pytest.fixture
def team(monkeypatch):
    from conftest import require_compiler

    require_compiler("host")
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", SECRET)
    monkeypatch.setenv("HIPEXPLORE_CACHE_LOCK_TIMEOUT", str(LOCK_TIMEOUT))


def req(v: int):
    from hipexplore.compile import CompileRequest, Source

    return CompileRequest(Source("lease.c", f"int leased_{v}(void) {{ return {v}; }}\n"), "host", "host")


def _victim_compiles(url: str, v: int):
    """A fresh cache (memory, Redis) compiles ``req(v)``: (result, wall seconds spent not compiling)."""
    from hipexplore.compile.cache import CompileCache

    cache = CompileCache(disk_dir=False, remote=url)
    start = time.monotonic()
    res = cache.get_or_compile(req(v))
    return cache, res, time.monotonic() - start - (res.compile_seconds if res.outcome == "compiled" else 0.0)


def _names(v: int) -> tuple[str, str]:
    """The lease's and the entry's names of req(v) on the server (what an outsider reads there)."""
    from hipexplore.compile.cache import CompileCache
    from hipexplore.compile.remote import RemoteCache
    from hipexplore.compile.request import KEY_SCHEMA

    key = CompileCache(disk_dir=False, remote=False).key_for(req(v))
    return RemoteCache.lease_name(key), f"hx:v{KEY_SCHEMA}:{key.digest}"


#: A teammate on this host (the team secret, its own process): takes the lease of req(v), says so,
#: holds it ``hold`` seconds (renewing it as any holder does), then, with ``write``, stores the entry.
TEAMMATE = r"""
import sys, time
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
url, v, hold, write = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
r = CompileRequest(Source("lease.c", "int leased_%d(void) { return %d; }\n" % (v, v)), "host", "host")
code = CompileCache(disk_dir=False, remote=False).get_or_compile(r).object_code
cache = CompileCache(disk_dir=False, remote=url)
key = cache.key_for(r)
with cache.remote.lease(key) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(hold)
    if write:
        cache.remote.put(key, code)
print("done", flush=True)
"""


def _teammate(url: str, v: int, hold: float, write: bool) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", TEAMMATE, url, str(v), str(hold), "1" if write else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    line = proc.stdout.readline().strip()
    if line != "held":
        proc.kill()
        raise AssertionError(f"the teammate did not take the lease: {line!r} {proc.stderr.read()[-2000:]}")
    return proc


# -- Redis leases ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("forged", ["garbage", "fields-without-the-mac", "another-teams-mac"])
def test_a_lease_without_the_team_hmac_is_ignored_at_once(redis_server, team, forged):
    from hipexplore.compile.remote import RemoteCache

    client = redis_server.client()
    name, _entry = _names(1)
    genuine = RemoteCache(redis_server.url, secret="not the team's").lease_value(name, RemoteCache.lease_lifetime_ms())
    value = {
        "garbage": "held-by-an-outsider",
        "fields-without-the-mac": genuine.rsplit("|", 1)[0] + "|" + "0" * 64,
        "another-teams-mac": genuine,
    }[forged]
    client.set(name, value, px=60_000)
    cache, res, waited = _victim_compiles(redis_server.url, 1)
    assert res.outcome == "compiled" and waited < 2.0, waited  # not the lock timeout
    assert cache.remote.counters["leases_ignored"] == 1 and cache.remote.counters["lease_waits"] == 0


def test_the_victims_own_lease_replayed_is_ignored_at_once(redis_server, team):
    """The outsider reads the victim's lease while the victim holds it and sets it again once the
    victim let go (and deletes the entry, which anyone who can write may): the victim's next compile
    of the key, in the same process, used to wait its whole lock timeout on its own old lease."""
    from hipexplore.compile.cache import CompileCache

    client = redis_server.client()
    name, entry = _names(2)
    victim = CompileCache(disk_dir=False, remote=redis_server.url)
    key = victim.key_for(req(2))
    with victim.remote.lease(key) as held:
        assert held
        captured, pttl = client.get(name), client.pttl(name)  # the outsider's read
    assert client.exists(name) == 0  # released
    for _round in range(2):
        client.delete(entry)
        client.set(name, captured, px=pttl)  # the replay
        cache, res, waited = _victim_compiles(redis_server.url, 2)
        assert res.outcome == "compiled" and waited < 2.0, f"waited {waited:.1f} s on its own replayed lease"
        assert cache.remote.counters["leases_ignored"] == 1 and cache.remote.counters["lease_waits"] == 0


def test_a_teammates_lease_replayed_after_it_let_go_costs_at_most_the_stale_bound(redis_server, team):
    """A teammate held the key's lease and let go without storing an entry (its compile failed); the
    outsider read the lease meanwhile and sets it again. It authenticates and is young, so the victim
    waits on it, but a held lease changes every second: this one does not, and the wait ends."""
    from hipexplore.compile import remote

    client = redis_server.client()
    name, _entry = _names(3)
    mate = _teammate(redis_server.url, 3, 0.3, write=False)
    captured, pttl = client.get(name), client.pttl(name)
    assert mate.stdout.readline().strip() == "done" and mate.wait(30) == 0
    client.set(name, captured, px=pttl)
    cache, res, waited = _victim_compiles(redis_server.url, 3)
    assert res.outcome == "compiled"
    assert waited < getattr(remote, "LEASE_STALE_S", 5.0) + 2.0 < LOCK_TIMEOUT, waited
    assert cache.remote.counters["lease_waits_ended"] == 1


def test_a_lease_captured_long_ago_is_ignored_at_once(redis_server, team):
    """A lease signed ten minutes ago (what the outsider kept from a teammate's compile then) and
    set again now: ignored without any wait. (The teammate's process signs it with that date: ten
    real minutes are not waited here.)"""
    client = redis_server.client()
    name, _entry = _names(4)
    signed = int((time.time() - 600) * 1000)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from hipexplore.compile.remote import RemoteCache as R; "
            "print(R(sys.argv[1]).lease_value(sys.argv[2], R.lease_lifetime_ms(), signed_ms=int(sys.argv[3])))",
            redis_server.url,
            name,
            str(signed),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    client.set(name, out.stdout.strip(), px=60_000)
    cache, res, waited = _victim_compiles(redis_server.url, 4)
    assert res.outcome == "compiled" and waited < 2.0, waited
    assert cache.remote.counters["leases_ignored"] == 1 and cache.remote.counters["lease_waits"] == 0


def test_an_honest_holder_is_waited_on_past_the_stale_bound(redis_server, team):
    """The control: a teammate holding the lease longer than ``LEASE_STALE_S`` (a long compile)
    renews it, so the victim keeps waiting and then gets the teammate's entry."""
    from hipexplore.compile import remote

    hold = getattr(remote, "LEASE_STALE_S", 5.0) + 2.5
    mate = _teammate(redis_server.url, 5, hold, write=True)
    try:
        start = time.monotonic()
        cache, res, _ = _victim_compiles(redis_server.url, 5)
        waited = time.monotonic() - start
        assert res.outcome == "remote-hit", (res.outcome, waited)
        assert hold - 1.0 < waited < LOCK_TIMEOUT, waited
        assert cache.remote.counters["lease_waits"] == 1 and cache.remote.counters.get("lease_waits_ended", 0) == 0
    finally:
        mate.kill()
        mate.wait(30)


# -- team directory locks held by another user ----------------------------------------------------------------
VICTIM_LOCK_ID = r"""
import sys
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.disk_files import lock_id
print(lock_id(CompileCache(disk_dir=False, remote=False).key_for(CompileRequest(Source("k.c", sys.argv[1]), "host", "host"))))
"""

#: The other user: holds the lock of the victim's key in the team directory until killed.
HOLD_LOCK = r"""
import os, sys, time
os.umask(0o002)
from hipexplore.compile.disk import DiskCache
with DiskCache(sys.argv[1], shared="group", secret=sys.argv[3]).key_lock(sys.argv[2]) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(600)
"""

VICTIM_COMPILE = r"""
import json, os, sys, time, warnings
os.umask(0o002)
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
r = CompileRequest(Source("k.c", sys.argv[2]), "host", "host")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cache = CompileCache(disk_dir=sys.argv[1], max_entries=0, remote=False)
    start = time.monotonic()
    res = cache.get_or_compile(r)
    wall = time.monotonic() - start
again = CompileCache(disk_dir=sys.argv[1], max_entries=0, remote=False).get_or_compile(r)
print(json.dumps({"outcome": res.outcome, "waited": wall - res.compile_seconds, "again": again.outcome,
                  "warnings": [str(w.message) for w in caught], "disk": cache.disk.counters}))
"""


@pytest.mark.parametrize("bound", [None, "1.5"])
def test_another_users_team_lock_is_waited_on_at_most_the_stated_bound(users, bound):  # noqa: F811
    """With the default (3 s) and with a bound given: the victim's compile of the key another
    user's process holds the lock of waits at most that, says so in one line, then compiles; its
    entry is stored, verified and a hit next time."""
    from hipexplore import settings

    limit = float(bound or 3.0)  # the default: checked against the declaration last
    source = f"int answer(void) {{ return {7 if bound else 8}; }}\n"
    root = users.base / f"team-{'given' if bound else 'default'}"
    root.mkdir()
    os.chown(root, users.uid["victim"], users.team_gid)
    os.chmod(root, 0o2770)
    env = users.env(
        "victim",
        HIPEXPLORE_CACHE_SHARED="group",
        HIPEXPLORE_CACHE_SECRET=SECRET,
        **({"HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT": bound} if bound else {}),
    )
    lid = users.run("victim", VICTIM_LOCK_ID, source, env=env)
    assert lid.returncode == 0, lid.stderr
    holder = users.start("attacker", HOLD_LOCK, str(root), lid.stdout.strip(), SECRET)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = users.run("victim", VICTIM_COMPILE, str(root), source, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
    finally:
        holder.kill()
        holder.wait()
    assert got["outcome"] == "compiled" and got["again"] == "disk-hit", got
    assert limit - 0.2 < got["waited"] < limit + 2.0, got["waited"]  # waited, and not the 10 s of before
    said = [w for w in got["warnings"] if "waited" in w and "lock" in w]
    assert len(said) == 1 and "\n" not in said[0], got["warnings"]
    line = said[0]
    assert f"uid {users.uid['attacker']}" in line and users.names["attacker"] in line and lid.stdout.strip() in line
    assert f"at most {limit:g} s" in line and "HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT" in line
    assert got["disk"]["locks_not_waited"] == 1 and got["disk"]["lock_timeouts"] == 0
    assert bound or settings.CACHE_FOREIGN_LOCK_WAIT.default == limit
