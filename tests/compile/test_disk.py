"""The disk tier: entry format, checksums, corruption handling, pruning, unwritable directories.

Compiles use the real host compiler; volume tests write generated payloads straight through
DiskCache.put/get (named as such).
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
import warnings
from pathlib import Path

import pytest

from hipexplore.compile import CompileRequest, ObjectCode, Source
from hipexplore.compile.cache import CompileCache, default_cache_dir
from hipexplore.compile.disk import MAGIC, DiskCache, decode_entry, encode_entry, read_header
from hipexplore.compile.request import KEY_SCHEMA, CacheKey
from hipexplore.errors import CacheError


def _host():
    from conftest import require_compiler

    return require_compiler("host")


class Counting:
    """Counts calls into the real compiler."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def available(self):
        return True

    def unavailable_reason(self):
        return ""

    def identity(self):
        return self.inner.identity()

    def targets(self):
        return self.inner.targets()

    def compile(self, request):
        self.calls += 1
        return self.inner.compile(request)


def request(value: int) -> CompileRequest:
    return CompileRequest(Source("answer.c", f"int answer(void) {{ return {value}; }}\n"), "host", "host")


def call_answer(binary: bytes, tmp_path: Path) -> int:
    path = tmp_path / f"lib{time.perf_counter_ns()}.so"
    path.write_bytes(binary)
    lib = ctypes.CDLL(str(path))
    return int(lib.answer())


def fake_key(i: int, payload_tag: str = "") -> CacheKey:
    canonical = json.dumps({"generated": i, "tag": payload_tag}, sort_keys=True).encode()
    import hashlib

    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def generated(i: int, size: int = 4096) -> ObjectCode:
    """A generated payload (not a compiler output) for volume tests of the file layer."""
    return ObjectCode(bytes([i % 251]) * size, "host", "host", "shared-library", compile_seconds=0.5)


def memory_off(tmp_path: Path, **kw) -> CompileCache:
    """Memory tier disabled, so every lookup goes to disk."""
    return CompileCache(max_entries=0, disk_dir=tmp_path / "cache", **kw)


def entry_path(cache: CompileCache, digest: str) -> Path:
    return cache.disk.path_for(digest)


# -- format and hits -------------------------------------------------------------------------------
def test_disk_hit_in_a_new_cache_object_keeps_the_original_compile_time(tmp_path):
    host = Counting(_host())
    first = CompileCache(disk_dir=tmp_path / "cache").get_or_compile(request(5), host)
    cache = CompileCache(disk_dir=tmp_path / "cache")
    second = cache.get_or_compile(request(5), host)
    third = cache.get_or_compile(request(5), host)  # the disk hit was promoted to memory
    assert (first.outcome, second.outcome, third.outcome) == ("compiled", "disk-hit", "memory-hit")
    stats = cache.stats()
    assert stats["disk_hits"] == 1 and stats["memory_hits"] == 1 and stats["compiled"] == 0
    assert stats["seconds_saved"] == pytest.approx(second.seconds_saved + third.seconds_saved)
    assert host.calls == 1
    assert second.object_code.binary == first.object_code.binary
    assert second.compile_seconds == pytest.approx(first.compile_seconds)
    assert second.seconds_saved == pytest.approx(first.compile_seconds - second.lookup_seconds)
    assert call_answer(second.object_code.binary, tmp_path) == 5


def test_a_disk_hit_is_not_written_back(tmp_path):
    """Only a compile writes an entry: a hit leaves the file as it is (same inode, no write)."""
    host = Counting(_host())
    writer = CompileCache(disk_dir=tmp_path / "cache")
    writer.get_or_compile(request(6), host)
    assert writer.disk.counters["writes"] == 1
    path = entry_path(writer, writer.key_for(request(6), host).digest)
    before = os.stat(path)
    reader = CompileCache(disk_dir=tmp_path / "cache")
    assert reader.get_or_compile(request(6), host).outcome == "disk-hit"
    assert reader.disk.counters["writes"] == 0 and reader.disk.counters["hits"] == 1
    assert os.stat(path).st_ino == before.st_ino


def test_layout_and_inspectable_header(tmp_path):
    cache = CompileCache(disk_dir=tmp_path / "cache")
    result = cache.get_or_compile(request(6), _host())
    digest = result.key.digest
    path = tmp_path / "cache" / f"v{KEY_SCHEMA}" / digest[:2] / f"{digest}.hxc"
    assert path.is_file() and cache.disk.path_for(digest) == path
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    header = read_header(path)
    assert header["key"].encode() == result.key.canonical
    assert header["digest"] == digest and header["compiler"] == "host" and header["target"] == "host"
    assert header["sizes"]["binary"] == len(result.object_code.binary)
    assert header["compile_seconds"] == pytest.approx(result.compile_seconds)
    assert result.object_code.binary in data  # stored raw, so the usual tools can read it
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_default_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "envdir"))
    assert default_cache_dir() == tmp_path / "envdir"
    assert CompileCache().disk_dir == tmp_path / "envdir"
    monkeypatch.setenv("HIPEXPLORE_CACHE_DISK", "0")
    assert CompileCache().disk is None
    assert CompileCache(disk_dir=tmp_path / "explicit").disk_dir == tmp_path / "explicit"
    monkeypatch.delenv("HIPEXPLORE_CACHE_DISK")
    monkeypatch.delenv("HIPEXPLORE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    try:
        import platformdirs  # noqa: F401
    except ImportError:
        assert default_cache_dir() == tmp_path / "xdg" / "hipexplore"
    else:
        assert default_cache_dir().name == "hipexplore"
    assert CompileCache(disk_dir=False).disk is None


def test_bad_digest_for_a_file_name_is_a_cache_error(tmp_path):
    cache = CompileCache(disk_dir=tmp_path, digest=lambda b: "../escape")
    with pytest.raises(CacheError, match="escape"):
        cache.get_or_compile(request(1), _host())
    assert cache.events()["outcome"].tolist() == ["failed"]


# -- collisions --------------------------------------------------------------------------------------
def test_forced_digest_collision_on_disk_never_returns_the_wrong_binary(tmp_path):
    host = Counting(_host())
    const = lambda b: "c0" * 32  # noqa: E731
    a = memory_off(tmp_path, digest=const).get_or_compile(request(11), host)
    b = memory_off(tmp_path, digest=const).get_or_compile(request(22), host)  # same file name, other key
    assert (a.outcome, b.outcome) == ("compiled", "compiled")
    fresh = memory_off(tmp_path, digest=const)
    again_b = fresh.get_or_compile(request(22), host)  # B overwrote A's file
    again_a = fresh.get_or_compile(request(11), host)  # stored key differs -> miss -> compile
    assert again_b.outcome == "disk-hit" and call_answer(again_b.object_code.binary, tmp_path) == 22
    assert again_a.outcome == "compiled" and call_answer(again_a.object_code.binary, tmp_path) == 11
    assert fresh.disk.counters["key_mismatches"] == 2  # looked before and again under the per-key lock
    assert host.calls == 3


# -- corruption ----------------------------------------------------------------------------------------
def _corrupt_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_flip_binary(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01  # inside the binary, before the checksum
    path.write_bytes(bytes(data))


def _corrupt_flip_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[40] ^= 0x20  # inside the JSON header
    path.write_bytes(bytes(data))


def _remove(path: Path) -> None:
    path.unlink()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [_corrupt_truncate, _corrupt_flip_binary, _corrupt_flip_header, _remove, _empty])
def test_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    host = Counting(_host())
    first = memory_off(tmp_path).get_or_compile(request(31), host)
    path = memory_off(tmp_path).disk.path_for(first.key.digest)
    damage(path)
    cache = memory_off(tmp_path)
    again = cache.get_or_compile(request(31), host)
    assert again.outcome == "compiled" and host.calls == 2
    assert call_answer(again.object_code.binary, tmp_path) == 31
    header, binary = decode_entry(path.read_bytes())  # rewritten and valid again
    assert binary == first.object_code.binary and header["key"].encode() == first.key.canonical
    assert memory_off(tmp_path).get_or_compile(request(31), host).outcome == "disk-hit"
    if damage not in (_remove,):
        assert cache.disk.counters["corrupt"] == 2  # before and again under the per-key lock


def test_directory_in_place_of_entry_is_a_miss(tmp_path):
    disk = DiskCache(tmp_path)
    key = fake_key(1)
    disk.path_for(key.digest).mkdir(parents=True)  # opens (O_RDONLY), but fstat says not a regular file
    assert disk.get(key) is None and disk.counters["corrupt"] == 1


def test_entries_removed_and_replaced_while_reading_never_give_a_torn_or_wrong_payload(tmp_path):
    """One thread keeps deleting and re-publishing entries while others read them."""
    disk = DiskCache(tmp_path)
    keys = [fake_key(i) for i in range(8)]
    payloads = {k.digest: generated(i, 64 * 1024) for i, k in enumerate(keys)}
    for k in keys:
        disk.put(k, payloads[k.digest])
    stop = threading.Event()
    bad: list[str] = []
    counts = {"hit": 0, "miss": 0}

    def churn():
        while not stop.is_set():
            for k in keys:
                try:
                    disk.path_for(k.digest).unlink()
                except FileNotFoundError:
                    pass
                disk.put(k, payloads[k.digest])

    def read():
        while not stop.is_set():
            for k in keys:
                got = disk.get(k)
                if got is None:
                    counts["miss"] += 1
                elif got.binary != payloads[k.digest].binary:
                    bad.append(k.digest)
                else:
                    counts["hit"] += 1

    threads = [threading.Thread(target=churn)] + [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    # run for 1.5 s and until both paths were exercised (a fixed 1.5 s could end before a loaded
    # machine gave the readers a miss: issue 26.6); 120 s is a hang guard
    start = time.monotonic()
    while time.monotonic() - start < 1.5 or not (counts["hit"] and counts["miss"]):
        assert time.monotonic() - start < 120, counts
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(30)
    assert not bad
    assert counts["hit"] > 0 and counts["miss"] > 0  # both paths were exercised
    assert disk.counters["corrupt"] == 0


def test_verify_counts_and_removes_corrupt_entries(tmp_path):
    cache = CompileCache(disk_dir=tmp_path)
    keys = [fake_key(i) for i in range(5)]
    for i, k in enumerate(keys):
        assert cache.disk.put(k, generated(i))
    _corrupt_flip_binary(cache.disk.path_for(keys[0].digest))
    _corrupt_truncate(cache.disk.path_for(keys[1].digest))
    report = cache.verify()
    assert {k: report[k] for k in ("checked", "ok", "corrupt", "removed", "failed")} == {
        "checked": 5,
        "ok": 3,
        "corrupt": 2,
        "removed": 2,
        "failed": 0,
    }
    assert sorted((Path(p[0]).name, p[2]) for p in report["problems"]) == sorted(
        [(f"{keys[0].digest}.hxc", "removed"), (f"{keys[1].digest}.hxc", "removed")]
    )
    assert not cache.disk.path_for(keys[0].digest).exists()
    assert cache.verify()["ok"] == 3 and cache.verify()["corrupt"] == 0
    removed = cache.clear()
    assert removed == {"memory": 0, "disk": 3} and cache.stats()["disk_entries"] == 0


def test_encode_decode_roundtrip_and_key_mismatch(tmp_path):
    disk = DiskCache(tmp_path)
    key, other = fake_key(1), fake_key(1, "other")
    code = ObjectCode(
        b"\x7fELF" + bytes(range(256)),
        "hiprtc",
        "gfx90a",
        "code-object",
        log="warning: x",
        lowered_names={"k<1>": "_Z1kILi1EEvv"},
        compile_seconds=0.7,
    )
    header, binary = decode_entry(encode_entry(key, code))
    assert binary == code.binary and header["lowered_names"] == code.lowered_names
    assert disk.put(key, code)
    got = disk.get(key)
    assert got == code
    same_name = CacheKey(other.canonical, key.digest)  # same digest, different canonical key
    assert disk.get(same_name) is None and disk.counters["key_mismatches"] == 1


def _resealed(data: bytes, edit) -> bytes:
    """An entry changed by ``edit(body) -> body`` with its checksum recomputed: the change is
    then caught by the format checks themselves, not by the checksum."""
    import hashlib

    return (lambda body: body + hashlib.sha256(body).digest())(edit(data[:-32]))


@pytest.mark.parametrize("what", ["magic", "trailing bytes"])
def test_a_resealed_entry_with_a_bad_format_is_a_miss(tmp_path, what):
    disk = DiskCache(tmp_path)
    key = fake_key(3)
    assert disk.put(key, generated(3))
    path = disk.path_for(key.digest)
    data = path.read_bytes()
    if what == "magic":  # another format version, checksum intact
        bad = _resealed(data, lambda body: b"HXCACHE\x02" + body[len(MAGIC) :])
    else:  # lengths that do not add up to the file: extra bytes before the checksum
        bad = _resealed(data, lambda body: body + b"extra")
    path.write_bytes(bad)
    assert disk.get(key) is None and disk.counters["corrupt"] == 1
    assert disk.verify()["corrupt"] == 1 and not path.exists()


def test_entry_files_are_readable_by_the_group_and_others(tmp_path):
    """A shared cache directory: entries are 0644 (mkstemp alone gives 0600)."""
    old = os.umask(0o022)
    try:
        disk = DiskCache(tmp_path)
        assert disk.put(fake_key(4), generated(4))
    finally:
        os.umask(old)
    assert os.stat(disk.path_for(fake_key(4).digest)).st_mode & 0o777 == 0o644


def test_verify_removes_an_entry_stored_under_another_name(tmp_path):
    disk = DiskCache(tmp_path)
    key = fake_key(5)
    assert disk.put(key, generated(5))
    moved = disk.path_for("ab" + key.digest[2:])
    moved.parent.mkdir(parents=True, exist_ok=True)
    os.replace(disk.path_for(key.digest), moved)
    report = disk.verify()
    assert (report["checked"], report["ok"], report["corrupt"], report["removed"]) == (1, 0, 1, 1)
    assert "does not match stored digest" in report["problems"][0][1]
    assert not moved.exists()


# -- size cap and pruning ------------------------------------------------------------------------------
def test_byte_cap_prunes_least_recently_used_generated_payloads(tmp_path):
    entry_bytes = len(encode_entry(fake_key(0), generated(0)))
    disk = DiskCache(tmp_path, max_bytes=entry_bytes * 10 + 200)  # slack: header floats vary by a few bytes
    keys = [fake_key(i) for i in range(15)]
    for i, k in enumerate(keys[:10]):
        assert disk.put(k, generated(i))
        os.utime(disk.path_for(k.digest), (1000 + i, 1000 + i))  # deterministic ages
    assert disk.get(keys[0]) is not None  # a hit refreshes the oldest entry's mtime
    for i, k in enumerate(keys[10:15], start=10):  # 5 more: prunes about 6 of the 9 old ones
        pruned_before = disk.counters["pruned"]
        assert disk.put(k, generated(i))
        assert disk.stats()["bytes"] <= disk.max_bytes
        if disk.counters["pruned"] > pruned_before:  # a prune goes down to 90 % of the cap, not to the cap
            assert disk.stats()["bytes"] <= int(disk.max_bytes * 0.9)
    present = {info.digest for info in disk.entries()}
    assert keys[0].digest in present  # recently used survived
    assert keys[1].digest not in present and keys[2].digest not in present  # least recently used went first
    assert all(k.digest in present for k in keys[10:15])
    assert disk.counters["pruned"] >= 4


def test_entry_larger_than_disk_cap_is_not_written(tmp_path):
    disk = DiskCache(tmp_path, max_bytes=1000)
    assert disk.put(fake_key(1), generated(1, 5000)) is False
    assert list(disk.entries()) == []


def test_stale_temp_files_are_removed_by_the_pruner(tmp_path):
    disk = DiskCache(tmp_path, max_bytes=10**6)
    disk.put(fake_key(1), generated(1))
    shard = disk.path_for(fake_key(1).digest).parent
    stale = shard / ".tmp-dead.hxc.part"
    stale.write_bytes(b"half")
    os.utime(stale, (1, 1))
    live = shard / ".tmp-writing.hxc.part"  # another process is writing this one right now
    live.write_bytes(b"in progress")
    disk.prune(target_bytes=10**6)
    assert not stale.exists() and disk.get(fake_key(1)) is not None
    assert live.exists()


# -- unwritable directories ----------------------------------------------------------------------------
def test_unwritable_directory_warns_once_and_memory_continues(tmp_path):
    """Tests run as root, which ignores chmod 0o555, so the unwritable location is a path whose
    parent is a regular file: mkdir fails with NotADirectoryError/FileExistsError, as on a
    read-only mount."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file")
    host = Counting(_host())
    cache = CompileCache(disk_dir=blocker / "cache")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = [cache.get_or_compile(request(v), host).outcome for v in (1, 2, 1, 3)]
    assert outcomes == ["compiled", "compiled", "memory-hit", "compiled"]
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(runtime) == 1, [str(w.message) for w in caught]
    assert str(blocker / "cache") in str(runtime[0].message)
    assert cache.disk.writable is False and cache.stats()["disk_writable"] is False
    assert host.calls == 3


def test_cache_root_that_is_a_file_warns_once(tmp_path):
    blocker = tmp_path / "cachefile"
    blocker.write_text("x")
    disk = DiskCache(blocker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert disk.put(fake_key(1), generated(1)) is False
        assert disk.put(fake_key(2), generated(2)) is False
    assert len(caught) == 1 and disk.get(fake_key(1)) is None
    # writes stay off for the process even once the location becomes usable
    blocker.unlink()
    blocker.mkdir()
    assert disk.put(fake_key(3), generated(3)) is False
    assert list(disk.entries()) == [] and disk.writable is False


FULL_DISK_SCRIPT = r"""
import json, resource, sys, warnings
from pathlib import Path
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
root = Path(sys.argv[1])
def req(v):
    return CompileRequest(Source("answer.c", "int answer(void) { return %d; }\n" % v), "host", "host")
size = len(CompileCache(disk_dir=False).get_or_compile(req(1)).object_code.binary)
# Files may now grow to the library's size plus a little: cc can still write its output, but the
# cache entry (binary + header + checksum) fails mid-write with EFBIG.
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 64, size + 64))
cache = CompileCache(disk_dir=root)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    outcomes = [cache.get_or_compile(req(v)).outcome for v in (2, 3, 2)]
print(json.dumps({"warnings": [str(w.message) for w in caught], "outcomes": outcomes,
                  "writable": cache.disk.writable, "error": cache.disk.write_error}))
"""


def test_write_failing_mid_file_warns_once_and_leaves_no_partial_entry(tmp_path):
    """A full-disk stand-in (no mounts in this container): RLIMIT_FSIZE makes write() fail with
    EFBIG part-way through the entry (Python ignores SIGXFSZ). Runs in a subprocess so the limit
    stays there."""
    import subprocess
    import sys

    root = tmp_path / "cache"
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK_SCRIPT, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["outcomes"] == ["compiled", "compiled", "memory-hit"]
    assert len(report["warnings"]) == 1 and "EFBIG" in report["warnings"][0]
    assert report["writable"] is False and "File too large" in report["error"]
    assert not list(root.rglob("*.hxc")) and not list(root.rglob(".tmp-*"))  # no partial entry left


def test_a_zero_disk_cap_disables_the_disk_tier(tmp_path, monkeypatch):
    assert CompileCache(disk_dir=tmp_path, disk_max_bytes=0).disk is None
    monkeypatch.setenv("HIPEXPLORE_CACHE_DISK_MAX_BYTES", "0")
    assert CompileCache(disk_dir=tmp_path).disk is None
    monkeypatch.setenv("HIPEXPLORE_CACHE_DISK_MAX_BYTES", "4096")
    assert CompileCache(disk_dir=tmp_path).disk is not None


def test_a_transient_write_error_skips_one_write_and_keeps_the_tier(tmp_path, monkeypatch):
    """EBUSY/EINTR/EMFILE… lose one entry; a read-only or full disk (tested above) turns writes off.
    The OSError is injected at os.replace: a busy file system cannot be produced here on demand."""
    import errno as _errno

    import hipexplore.compile.disk as disk_mod

    disk = DiskCache(tmp_path)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src, dst, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(_errno.EBUSY, "Device or resource busy")
        return real_replace(src, dst, **kw)

    monkeypatch.setattr(disk_mod.os, "replace", flaky_replace)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a transient error
        assert disk.put(fake_key(1), generated(1)) is False
    assert disk.writable and disk.counters["write_errors"] == 1
    assert not list(tmp_path.rglob("*.part"))  # the temp file was removed
    assert disk.put(fake_key(2), generated(2)) is True and disk.get(fake_key(2)) is not None


def test_room_after_a_full_disk_first_drops_abandoned_temp_files(tmp_path):
    """Why: after ENOSPC the first room to win back is temp files whose writer is gone (here: older
    than ``STALE_TEMP_S``); a live writer's fresh temp file stays."""
    import hashlib
    import os
    import time

    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.disk import STALE_TEMP_S, DiskCache
    from hipexplore.compile.request import CacheKey

    disk = DiskCache(tmp_path / "c")
    canonical = json.dumps({"generated": 1}).encode()
    assert disk.put(
        CacheKey(canonical, hashlib.sha256(canonical).hexdigest()),
        ObjectCode(b"x" * 4096, "host", "host", "shared-library", compile_seconds=0.5),
    )
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    old, fresh = shard / ".tmp-otherhost-1-abc.hxc.part", shard / ".tmp-otherhost-2-def.hxc.part"
    old.write_bytes(b"x" * 10)
    fresh.write_bytes(b"y" * 10)
    then = time.time() - STALE_TEMP_S - 60
    os.utime(old, (then, then))
    disk.make_room(100)
    assert not old.exists() and fresh.exists()


def test_a_disk_tiers_stats_name_every_field(tmp_path):
    """Why: ``DiskCache.stats()`` is what ``hipexplore cache stats`` and the notebooks print: every
    key, with one entry, one temp file and one foreign file in a shard."""
    import hashlib

    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.disk import DiskCache
    from hipexplore.compile.request import CacheKey

    disk = DiskCache(tmp_path / "c")
    canonical = json.dumps({"generated": 2}).encode()
    assert disk.put(
        CacheKey(canonical, hashlib.sha256(canonical).hexdigest()),
        ObjectCode(b"x" * 4096, "host", "host", "shared-library", compile_seconds=0.5),
    )
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    (shard / ".tmp-otherhost-1-abc.hxc.part").write_bytes(b"t" * 10)
    (shard / "notes.txt").write_text("x")
    s = disk.stats()
    entry = sum(i.size for i in disk.listing() if i.kind == "entry")
    assert {
        k: s[k]
        for k in (
            "shared",
            "authenticated",
            "writable",
            "write_error",
            "entries",
            "bytes",
            "entry_bytes",
            "temp_files",
            "temp_bytes",
            "foreign_files",
        )
    } == {
        "shared": disk.shared,
        "authenticated": False,
        "writable": True,
        "write_error": "",
        "entries": 1,
        "bytes": entry + 10,
        "entry_bytes": entry,
        "temp_files": 1,
        "temp_bytes": 10,
        "foreign_files": 1,
    }
    assert s["disk_writes"] == 1
