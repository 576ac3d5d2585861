"""The disk tier's per-key lock (``compile.disk_locks``: ``DiskCache.key_lock``): one compile of a key
across processes, a bounded wait on a live holder, a dead holder's lock taken over at once, and no
lock file left behind its holder's release. Real processes and real files (tests/security/ has the
cases with other users: a foreign lock, a planted link, a victim's left-over)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hipexplore.compile import disk_locks
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.request import CacheKey

REPO = Path(__file__).resolve().parents[2]

HOLD_SCRIPT = r"""
import sys, time
from hipexplore.compile.disk import DiskCache
disk = DiskCache(sys.argv[1])
with disk.key_lock(sys.argv[2]) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(600)
"""


def hold(root: Path, digest: str) -> subprocess.Popen:
    """Another process holding ``digest``'s lock in the disk tier at ``root`` (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_SCRIPT, str(root), digest],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def fake_key(i: int) -> CacheKey:
    canonical = json.dumps({"generated": i}, sort_keys=True).encode()
    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def lock_files(root: Path) -> list[Path]:
    return sorted(root.rglob(".lock-*"))


def test_the_lock_of_a_holder_that_died_is_taken_over_at_once(tmp_path):
    disk = DiskCache(tmp_path)
    digest = fake_key(1).digest
    holder = hold(tmp_path, digest)
    try:
        start = time.monotonic()
        with disk.key_lock(digest, timeout=0.3) as held:
            assert not held  # alive and holding: the wait is bounded
        # it waited its timeout (exact on this clock), then gave up (60 s: a hang guard, not a speed test)
        assert 0.3 <= time.monotonic() - start < 60 and disk.counters["lock_timeouts"] == 1
        holder.kill()
        holder.wait()
        # at once: one try, no wait (timeout 0), succeeds: the kernel released the dead holder's flock
        # (was "within 2 s" on the clock, which measured the machine: issue 26.6)
        with disk.key_lock(digest, timeout=0) as held:
            assert held and disk.counters["lock_timeouts"] == 1
    finally:
        holder.kill()
        holder.wait()


def test_a_held_lock_names_its_holder_and_is_gone_with_its_release(tmp_path):
    """The file at ``.lock-<id>`` is linked only once locked and recorded: whoever finds it can tell
    who holds it (pid, uid); the holder unlinks it before letting go. The id is the SHA-256 of the full
    key (``disk_files.lock_id``), not of its digest, so keys colliding on a digest never wait on each other."""
    disk = DiskCache(tmp_path)
    key = fake_key(2)
    with disk.key_lock(key, timeout=0) as held:
        assert held
        (path,) = lock_files(tmp_path)
        assert path.name == ".lock-" + hashlib.sha256(key.canonical).hexdigest()
        record = json.loads(path.read_bytes())
        assert record["pid"] == os.getpid() and record["uid"] == os.geteuid()
        assert oct(path.stat().st_mode & 0o777) == oct(0o600)  # private: no other user can open it to hold it
        other = DiskCache(tmp_path)  # another holder in this process (its own open file)
        with other.key_lock(key, timeout=0) as second:
            assert not second and other.counters["lock_timeouts"] == 1
    assert lock_files(tmp_path) == []
    with DiskCache(tmp_path).key_lock(key, timeout=0) as again:
        assert again


def test_a_tier_that_cannot_write_holds_no_lock_and_the_tier_lock_is_key_lock(tmp_path):
    disk = DiskCache(tmp_path)
    disk.writable = False  # as after an unwritable root: nothing compiled here could be shared
    with disk.key_lock(fake_key(3), timeout=0) as held:
        assert not held
    assert lock_files(tmp_path) == []
    with DiskCache(tmp_path).lock(fake_key(3)) as held:
        assert held


def test_the_lifetime_of_a_lock_is_the_compile_timeout_and_a_margin(monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "7")
    assert DiskCache.lock_lifetime() == 7 + disk_locks.LOCK_LIFETIME_MARGIN_S
    monkeypatch.setattr(disk_locks, "LOCK_LIFETIME_MARGIN_S", 1.0)
    assert DiskCache.lock_lifetime() == 8.0
