"""hipexplore.compile.disk_maint: the disk tier's listing, stats, prune, verify and clear, on a real
``DiskCache`` folder. What is pinned here directly: whose temp file is stale (``writer_gone``, with
real dead and live processes), least-recently-used order and the target of a prune, what verify
removes and what it leaves, and clear's counts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from hipexplore.compile import ObjectCode
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.disk_files import HOST_TAG, TEMP_PREFIX, STALE_TEMP_S, SUFFIX
from hipexplore.compile.disk_maint import DiskMaintenance
from hipexplore.compile.request import CacheKey


def key(i: int) -> CacheKey:
    canonical = json.dumps({"disk_maint": i}).encode()
    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def put(disk: DiskCache, i: int, size: int = 8192, age_s: float = 0.0) -> str:
    k = key(i)
    assert disk.put(k, ObjectCode(bytes([i % 251]) * size, "host", "host", "shared-library", compile_seconds=0.1))
    if age_s:
        t = time.time() - age_s
        os.utime(disk.path_for(k.digest), (t, t))
    return k.digest


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.timeout(60)
def test_writer_gone_dead_pid_own_pid_live_pid_other_host_and_age():
    now = time.time()
    gone = DiskMaintenance.writer_gone
    assert issubclass(DiskCache, DiskMaintenance)
    assert gone(f"{TEMP_PREFIX}{HOST_TAG}-{dead_pid()}-abc{SUFFIX}.part", now, now)
    assert not gone(f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-abc{SUFFIX}.part", now, now)  # this process writes it
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as live:
        try:
            assert not gone(f"{TEMP_PREFIX}{HOST_TAG}-{live.pid}-abc{SUFFIX}.part", now, now)
        finally:
            live.kill()
    assert not gone(f"{TEMP_PREFIX}otherhost-{dead_pid()}-abc{SUFFIX}.part", now, now)  # cannot tell: not yet
    assert not gone("unknown-name", now, now)
    assert gone("unknown-name", now - STALE_TEMP_S - 1, now)  # old enough whatever wrote it
    assert gone(f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-abc{SUFFIX}.part", now - STALE_TEMP_S - 1, now)


@pytest.mark.timeout(120)
def test_prune_removes_least_recently_used_down_to_the_target_and_dead_writers_temps(tmp_path):
    disk = DiskCache(tmp_path, max_bytes=1 << 30)
    digests = [put(disk, i, age_s=100 - i) for i in range(6)]  # entry 0 the oldest
    shard = disk.path_for(digests[0]).parent
    stale = shard / f"{TEMP_PREFIX}{HOST_TAG}-{dead_pid()}-x{SUFFIX}.part"
    stale.write_bytes(b"half written")
    mine = shard / f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-y{SUFFIX}.part"
    mine.write_bytes(b"being written")
    sizes = {d: disk.path_for(d).stat().st_size for d in digests}
    keep = sum(sizes[d] for d in digests[3:]) + len(b"being written")
    removed = disk.prune(target_bytes=keep)
    assert removed == 3
    assert [disk.path_for(d).exists() for d in digests] == [False] * 3 + [True] * 3  # the oldest went first
    assert not stale.exists() and mine.exists()  # a live writer's temp file stays
    assert disk.counters["pruned"] == 3
    assert disk.prune(target_bytes=keep) == 0  # already within the target
    st = disk.stats()
    assert (st["entries"], st["temp_files"]) == (3, 1) and st["entry_bytes"] == sum(sizes[d] for d in digests[3:])


@pytest.mark.timeout(120)
def test_listing_and_stats_classify_every_file(tmp_path):
    disk = DiskCache(tmp_path)
    d = put(disk, 1)
    shard = disk.path_for(d).parent
    (shard / "README.txt").write_text("not ours")
    (shard / f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-z{SUFFIX}.part").write_bytes(b"t")
    kinds = sorted(i.kind for i in disk.listing())
    assert kinds == ["entry", "foreign", "temp"]
    assert [i.digest for i in disk.entries()] == [d] and all(i.own for i in disk.listing())
    st = disk.stats()
    assert (st["entries"], st["temp_files"], st["foreign_files"], st["others_files"]) == (1, 1, 1, 0)
    assert st["directory"] == str(disk.directory) and st["usable"] == "yes"


@pytest.mark.timeout(120)
def test_verify_removes_what_is_not_a_valid_entry_and_counts_the_rest(tmp_path):
    disk = DiskCache(tmp_path)
    good, moved, cut = put(disk, 1), put(disk, 2), put(disk, 3)
    # an entry under another digest's name: valid bytes, wrong file name
    wrong = disk.path_for(key(99).digest)
    wrong.parent.mkdir(parents=True, exist_ok=True)
    wrong.write_bytes(disk.path_for(moved).read_bytes())
    data = disk.path_for(cut).read_bytes()
    disk.path_for(cut).write_bytes(data[: len(data) // 2])  # truncated
    report = disk.verify()
    assert (report["checked"], report["ok"], report["corrupt"], report["removed"], report["failed"]) == (4, 2, 2, 2, 0)
    problems = {os.path.basename(p): (what, action) for p, what, action in report["problems"]}
    assert problems[wrong.name][0] == f"file name {key(99).digest} does not match stored digest {moved}"
    assert problems[wrong.name][1] == problems[disk.path_for(cut).name][1] == "removed"
    assert disk.path_for(good).exists() and disk.path_for(moved).exists()
    assert not wrong.exists() and not disk.path_for(cut).exists()
    assert disk.verify()["problems"] == []


@pytest.mark.timeout(120)
def test_clear_removes_this_users_files_and_counts_them(tmp_path):
    disk = DiskCache(tmp_path)
    digests = [put(disk, i) for i in range(3)]
    shard = disk.path_for(digests[0]).parent
    (shard / f"{TEMP_PREFIX}{HOST_TAG}-{os.getpid()}-c{SUFFIX}.part").write_bytes(b"t")
    (shard / "stray").write_text("x")
    out = disk.clear()
    assert out == {"removed": 3, "temp_removed": 1, "locks_removed": 0, "failed": 0, "error": "", "others_left": 0}
    assert list(disk.listing()) == [] and disk.stats()["entries"] == 0
    assert disk.clear()["removed"] == 0
