"""Contracts a mutation run (BENCHMARKS.md "Mutation testing", session 2) found untested: the
provenance inside each result file, the exact keys of ``CompileCache.stats()`` / ``verify()``, and
the default cache directory where platformdirs is absent. Each test here was checked against the
surviving mutant it answers (metadata dropped from the samples file; a renamed stats key; a
verify of no disk tier reporting a removal; ``~`` or ``/`` mangled in the fallback path)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hipexplore as hx
from hipexplore.bench.spec import SweepSpec
from hipexplore.compile.cache import CompileCache, default_cache_dir
from hipexplore.schema import METADATA_KEY


def _meta(path: Path) -> dict:
    raw = (pq.read_schema(str(path)).metadata or {}).get(METADATA_KEY.encode())
    assert raw is not None, f"{path.name} carries no provenance"
    return json.loads(raw)


def test_both_result_files_carry_the_runs_provenance(tmp_path):
    out = tmp_path / "r.parquet"
    res = hx.sweep(
        "triad", ["16KiB"], [1], ["none"], device="host", iterations=8, reference=False, progress=False, out=out
    )
    for path in (out, tmp_path / "r.summary.parquet"):
        meta = _meta(path)
        assert meta["run_id"] == res.metadata["run_id"] == res.summary["run_id"].iloc[0]
        assert meta["sweep.kernels"] == "triad"


def test_stats_name_every_disk_field(tmp_path):
    with_disk = CompileCache(disk_dir=tmp_path / "c").stats()
    assert (with_disk["disk_entries"], with_disk["disk_bytes"], with_disk["disk_corrupt"]) == (0, 0, 0)
    assert with_disk["disk_writable"] is True and Path(with_disk["disk_dir"]).name == "c"
    without = CompileCache(disk_dir=False).stats()
    assert {k: without[k] for k in ("disk_entries", "disk_bytes", "disk_dir", "disk_writable", "disk_corrupt")} == {
        "disk_entries": 0,
        "disk_bytes": 0,
        "disk_dir": "",
        "disk_writable": False,
        "disk_corrupt": 0,
    }


def test_verify_without_a_disk_tier_reports_nothing_done():
    assert CompileCache(disk_dir=False).verify() == {
        "checked": 0,
        "ok": 0,
        "corrupt": 0,
        "removed": 0,
        "failed": 0,
        "unauthenticated": 0,
        "problems": [],
    }


@pytest.mark.parametrize("xdg", [None, "xdg"])
def test_default_cache_dir_without_platformdirs(monkeypatch, tmp_path, xdg):
    monkeypatch.delenv("HIPEXPLORE_CACHE_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # import platformdirs -> ImportError
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        assert default_cache_dir() == tmp_path / "home" / ".cache" / "hipexplore"
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / xdg))
        assert default_cache_dir() == tmp_path / xdg / "hipexplore"


# -- more survivors: bypassed lookups, the compile time recorded, clear(), the disk's own stats --------
from hipexplore.compile.disk import DiskCache  # noqa: E402
from hipexplore.compile.request import CompileRequest, Source  # noqa: E402


def _req(value: int, **kw) -> CompileRequest:
    return CompileRequest(Source("answer.c", f"int answer(void) {{ return {value}; }}\n"), "host", "host", **kw)


def _host():
    from conftest import require_compiler

    return require_compiler("host")


def test_bypassed_lookups_and_failures_are_counted_one_each(tmp_path):
    cache = CompileCache(disk_dir=False)
    host = _host()
    for v in (1, 2):
        assert cache.get_or_compile(_req(v, diagnostics=frozenset({"trace"})), host).outcome == "bypassed"
    bad = CompileRequest(
        Source("bad.c", "int answer(void) { return }\n"), "host", "host", diagnostics=frozenset({"trace"})
    )
    for _ in range(2):
        with pytest.raises(Exception):
            cache.get_or_compile(bad, host)
    s = cache.stats()
    assert (s["lookups"], s["bypassed"], s["failed"]) == (4, 2, 2)
    ev = cache.events()
    failed = ev[ev.outcome == "failed"]
    assert (
        len(failed) == 2
        and set(failed.digest) == {cache.key_for(bad, host).digest}
        and failed.error.str.len().min() > 0
    )


def test_the_backends_own_compile_time_is_kept(tmp_path):
    cache = CompileCache(disk_dir=False)
    res = cache.get_or_compile(_req(7), _host())
    ev = cache.events()
    event = ev[ev.outcome == "compiled"].iloc[-1]
    # the backend's own time, inside the lookup's (a bound in seconds would measure the host's load)
    assert (
        0 < res.object_code.compile_seconds <= event.lookup_seconds
        and event.compile_seconds == res.object_code.compile_seconds
    )


def test_clear_empties_memory_and_leaves_the_disk_unless_asked(tmp_path):
    cache = CompileCache(disk_dir=tmp_path / "c")
    host = _host()
    cache.get_or_compile(_req(3), host)
    assert cache.stats()["bytes"] > 0 and cache.stats()["disk_entries"] == 1
    assert cache.clear(disk=False) == {"memory": 1, "disk": 0}
    assert cache.stats()["bytes"] == 0 and cache.stats()["disk_entries"] == 1
    assert cache.clear() == {"memory": 0, "disk": 1}
    assert cache.stats()["disk_entries"] == 0


def test_disk_clear_counts_temp_files_apart_from_entries(tmp_path):
    disk = DiskCache(tmp_path / "c")
    cache = CompileCache(disk_dir=tmp_path / "c")
    cache.get_or_compile(_req(4), _host())
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    (shard / ".tmp-otherhost-1-abc.hxc.part").write_bytes(b"x" * 10)
    got = disk.clear()
    assert (got["removed"], got["temp_removed"], got["failed"], got["error"]) == (1, 1, 0, "")


def test_disk_stats_name_their_folders_and_cap(tmp_path):
    disk = DiskCache(tmp_path / "c", max_bytes=12345)
    s = disk.stats()
    assert (s["root"], s["max_bytes"]) == (str(tmp_path / "c"), 12345)
    assert Path(s["directory"]).parent == tmp_path / "c"


def test_the_write_warning_names_the_errno(tmp_path):
    import warnings

    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = CompileCache(disk_dir=blocker / "c")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.get_or_compile(_req(5), _host())
    msg = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msg) == 1 and ("(ENOTDIR: " in msg[0] or "(EEXIST: " in msg[0]), msg
    assert msg[0].endswith("or HIPEXPLORE_CACHE_DISK=0 to silence this.")


def test_the_default_cache_is_one_cache():
    from hipexplore.compile.cache import default_cache

    assert isinstance(default_cache(), CompileCache) and default_cache() is default_cache()


def _filled(tmp_path, count=10):
    import hashlib
    import os
    import time as _t

    from hipexplore.compile.base import ObjectCode as OC
    from hipexplore.compile.request import CacheKey

    disk = DiskCache(tmp_path / "c")
    for i in range(count):
        canonical = json.dumps({"generated": i}).encode()
        key = CacheKey(canonical, hashlib.sha256(canonical).hexdigest())
        assert disk.put(key, OC(bytes([i]) * 4096, "host", "host", "shared-library", compile_seconds=0.5))
        path = next(p for p in disk.directory.rglob("*.hxc") if p.stem == key.digest)
        os.utime(path, (_t.time() - 1000 + i, _t.time() - 1000 + i))  # oldest first
    return disk


def _entry_bytes(disk):
    return sum(e.size for e in disk.listing() if e.kind == "entry")


def test_room_after_a_full_disk_is_half_or_twice_the_write(tmp_path):
    disk = _filled(tmp_path / "a")
    total = _entry_bytes(disk)
    disk.make_room(100)  # a small write: prune to half
    left = _entry_bytes(disk)
    assert total // 2 - 5000 < left <= total // 2
    disk = _filled(tmp_path / "b")
    total = _entry_bytes(disk)
    disk.make_room(int(total * 0.4))  # a large write: leave room for twice it
    left = _entry_bytes(disk)
    assert left <= total - 2 * int(total * 0.4) and left > total - 2 * int(total * 0.4) - 5000


# -- the sweep's files (bench.io) and the reference schedule (bench.run) ----------------------------
def test_results_land_in_new_nested_folders_with_readable_sorted_metadata(tmp_path):
    from hipexplore.bench.io import output_paths, read_results, write_results

    paths = output_paths(tmp_path / "a" / "b" / "r.parquet")
    write_results(paths, [], {"z": "1", "a": "2"})
    text = paths[2].read_text()
    assert text == '{\n "a": "2",\n "z": "1"\n}'  # indented and sorted: diffable in review
    samples, summary, meta = read_results(paths)
    assert meta == {"a": "2", "z": "1"} and list(summary.columns)[:3] == ["run_id", "device", "device_name"]
    paths[2].unlink()
    assert read_results(paths)[2] is None  # no metadata file: None, not {}
    paths[2].write_text("{not json")
    assert read_results(paths)[2] == {}  # unreadable metadata: empty, the frames still load
    paths[1].unlink()
    assert read_results(paths) is None  # samples without a summary: no earlier result


def test_cluster_columns_are_written_in_the_given_order(tmp_path):
    import pandas as pd

    from hipexplore.bench.io import output_paths, samples_of, write_results
    from hipexplore.bench.outcome import ConfigurationResult
    from hipexplore.schema import SAMPLE_COLUMNS, SUMMARY_COLUMNS

    paths = output_paths(tmp_path / "r.parquet")
    columns = ([*SAMPLE_COLUMNS, "worker"], [*SUMMARY_COLUMNS, "worker"])
    key = {"kernel": "k", "size_bytes": 4, "rotating_requested": "1", "flush": "none", "timer": "events"}
    frame = pd.DataFrame({c: [0] for c in reversed(SAMPLE_COLUMNS)}).assign(worker=["w"], **key)
    result = ConfigurationResult.of_columns({"run_id": "r", "worker": "w", **key}, samples_of(frame, columns[0]), 0)
    write_results(paths, [result], {}, columns=columns)
    assert list(pd.read_parquet(paths[0]).columns) == [*SAMPLE_COLUMNS, "worker"]
    assert list(pd.read_parquet(paths[1]).columns) == [*SUMMARY_COLUMNS, "worker"]


def test_rows_name_their_device_and_a_sweep_keeping_throttled_samples_runs():
    from hipexplore.devices import device_label, get_device

    dev = get_device("host")
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device=dev,
        iterations=8,
        reference=False,
        progress=False,
        drop_throttled=False,
    )
    assert set(res.samples["device"]) == set(res.summary["device"]) == {device_label(dev)}
    assert res.summary["n"].iloc[0] == 8 and not res.samples["dropped"].any()


# -- the disk tier's own contract (compile/disk.py survivors) --------------------------------------
@pytest.mark.parametrize("bad", [1.5, "10", -1, True])
def test_disk_cap_must_be_a_whole_number_of_bytes(tmp_path, bad):
    from hipexplore.errors import ConfigError

    with pytest.raises(ConfigError, match="max_bytes"):
        DiskCache(tmp_path / "c", max_bytes=bad)


def test_a_fresh_disk_tier_reports_no_error_no_prune_and_its_secret(tmp_path):
    plain = DiskCache(tmp_path / "a")
    assert plain.write_error == "" and plain.counters["pruned"] == 0 and plain.stats()["authenticated"] is False
    assert DiskCache(tmp_path / "b", secret=b"team-secret").stats()["authenticated"] is True
    assert DiskCache(tmp_path / "c", secret="team-secret").secret == b"team-secret"


def test_stray_files_are_listed_as_foreign_and_do_not_hide_later_shards(tmp_path):
    disk = DiskCache(tmp_path / "c")
    cache = CompileCache(disk_dir=tmp_path / "c")
    for v in (11, 12, 13):
        cache.get_or_compile(_req(v), _host())
    for i in range(20):  # files among the shard folders (scandir order is the file system's: many, so some come first)
        (disk.directory / f"stray-{i}").write_text("not a shard")
    shard = next(p.parent for p in disk.directory.rglob("*.hxc"))
    (shard / "notes.txt").write_text("x")
    (shard / ".lock-abc").write_text("")
    listed = [(i.kind, i.digest, i.path.name) for i in disk.listing()]
    assert [x for x in listed if x[0] == "foreign"] == [("foreign", "", "notes.txt")]
    assert ("lock", "abc", ".lock-abc") in listed
    assert len(list(disk.entries())) == 3
    report = disk.verify()
    # the foreign file is reported and removed; the lock file is skipped, the entries are fine
    assert (report["ok"], report["corrupt"], report["removed"]) == (3, 1, 1)
    assert report["problems"] == [(str(shard / "notes.txt"), "not a regular entry file", "removed")]
    assert (shard / ".lock-abc").exists()


def test_a_disk_hit_refreshes_the_entry_time_only_when_it_is_old(tmp_path):
    import os
    import time as _t

    from hipexplore.compile.disk import TOUCH_INTERVAL_S

    cache = CompileCache(disk_dir=tmp_path / "c")
    req = _req(21)
    key = cache.get_or_compile(req, _host()).key
    path = next((tmp_path / "c").rglob(f"{key.digest}.hxc"))
    disk = DiskCache(tmp_path / "c")
    recent = _t.time() - TOUCH_INTERVAL_S / 4
    os.utime(path, (recent, recent))
    assert disk.get(key) is not None and path.stat().st_mtime == pytest.approx(recent, abs=0.01)
    old = _t.time() - 1000 * TOUCH_INTERVAL_S
    os.utime(path, (old, old))
    assert disk.get(key) is not None and path.stat().st_mtime > _t.time() - 60


# -- sweep(): its defaults are the spec's, and every argument reaches the recorded spec --------------
_SPEC_FIELD = {"verify_results": "verify", "flush_factor": "flush_factors"}


def test_sweep_defaults_are_the_specs_defaults():
    import dataclasses
    import inspect

    from hipexplore.bench.sweep import sweep

    fields = {f.name: f for f in dataclasses.fields(SweepSpec)}
    checked = 0
    for name, p in inspect.signature(sweep).parameters.items():
        field = fields.get(_SPEC_FIELD.get(name, name))
        if field is None or name in ("kernels", "sizes", "rotating", "flush", "stop", "flush_factor"):
            continue
        want = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        assert p.default == want, (name, p.default, want)
        checked += 1
    assert checked >= 14


def test_every_sweep_argument_reaches_the_recorded_spec_and_the_run(tmp_path):
    import json as _json

    out = tmp_path / "r.parquet"
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [2],
        ["l2-read"],
        device="host",
        iterations=6,
        reference=True,
        reference_samples=5,
        out=out,
        progress=False,
        mem_fraction=0.3,
        chunk=3,
        warmup_s=0.001,
        verify_results=False,
        flush_factor={"l2-read": 2.5},
        flush_end_event=True,
        run_id="rid-1",
        command=["hipexplore", "bench", "x"],
        timers=("events",),
        reference_parts=2,
        throttle_threshold=0.5,
        drop_throttled=False,
        clock_warmup_s=0.0,
        worker=False,
        interleave_seed=7,
        units=1,
    )
    rec = _json.loads(res.metadata["sweep.spec"])
    assert (rec["reference_samples"], rec["mem_fraction"], rec["chunk"], rec["warmup_s"], rec["verify"]) == (
        5,
        0.3,
        3,
        0.001,
        False,
    )
    assert (rec["flush_factors"], rec["flush_end_event"], rec["reference_parts"]) == ({"l2-read": 2.5}, True, 2)
    assert (rec["throttle_threshold"], rec["drop_throttled"], rec["clock_warmup_s"], rec["interleave_seed"]) == (
        0.5,
        False,
        0.0,
        7,
    )
    assert set(res.summary["run_id"]) == {"rid-1"} and "hipexplore bench x" in _json.dumps(res.metadata)
    assert res.summary.loc[res.summary.flush == "cold-reference", "n"].item() == 5
    assert set(res.samples.loc[res.samples.flush == "l2-read", "chunk"].value_counts()) <= {3}
    assert _meta(out)["run_id"] == "rid-1"
