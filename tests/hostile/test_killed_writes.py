"""Writes killed half-way: a real process SIGKILLed while its bytes are going into a file.

``files.write_file`` promises that a file is replaced whole or not at all (the content goes into an
unnamed ``O_TMPFILE`` inode, or a random hidden name where there is none, and is renamed over the
final name only when complete); the sweep's files (``bench.io``: samples, rows per unit, summary
as the commit record, meta.json), the shared input files of a sweep's units (``bench.inputs``) and
the compile cache's entries (``compile.disk``: a ``.part`` temp file, then ``os.replace``) build
on that. Elsewhere the kills fall between two writes (tests/test_resume_kills.py); here each child
writes the first half of a file's bytes, makes them reach the file system (flush, fsync) and
SIGKILLs itself before the rest: the old file must be intact, nothing torn may sit under a final
name or be read as valid, and the next run must carry on from what was committed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

#: a child's helper: write the first half of ``data`` into ``fh``, push it to the file system, die
DIE_HALF_WAY = textwrap.dedent("""
    import os, signal, sys
    def die_half_way(fh, data, label=""):
        half = len(data) // 2
        if isinstance(fh, (str, bytes, os.PathLike)):
            fh = open(fh, "wb")
        fh.write(data[:half])
        fh.flush()
        os.fsync(fh.fileno())
        print(f"torn {label} {half} of {len(data)}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
""")


def run_child(code: str, *args: str) -> subprocess.CompletedProcess:
    """``code`` (after ``DIE_HALF_WAY``) in a fresh interpreter; it must have died by SIGKILL half-way."""
    proc = subprocess.run(
        [sys.executable, "-c", DIE_HALF_WAY + textwrap.dedent(code), *args], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "torn" in proc.stdout, proc.stdout
    return proc


# -- files.write_file ----------------------------------------------------------------------------------
WRITER = """
    import hipexplore.files as files
    path, tmpfile = sys.argv[1], sys.argv[2] == "tmpfile"
    if not tmpfile:
        files._TMPFILE = 0  # the fallback every file system without O_TMPFILE takes: a random hidden name
    data = bytes(range(256)) * (64 << 10)  # 16 MiB
    files.write_file(path, lambda fh: die_half_way(fh, data))
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tmpfile", ["tmpfile", "hidden-name"])
@pytest.mark.parametrize("existing", [True, False])
def test_a_file_write_killed_half_way_leaves_the_old_file_whole(tmp_path, tmpfile, existing) -> None:
    """The old content (or no file) stays under the name; the half-written bytes never do. Without
    O_TMPFILE the killed writer's temp file stays behind under its hidden random name, never the final one."""
    target = tmp_path / "result.bin"
    old = b"the committed content\n" * 1000
    if existing:
        target.write_bytes(old)
    proc = run_child(WRITER, str(target), tmpfile)
    half = int(proc.stdout.split()[-3])
    assert half == 8 << 20
    if existing:
        assert target.read_bytes() == old
    else:
        assert not target.exists()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "result.bin")
    if tmpfile == "tmpfile" and _has_tmpfile(tmp_path):
        assert left == []  # the unnamed inode went with the process
    else:
        assert len(left) == 1 and left[0].startswith(".result.bin.") and left[0].endswith(".tmp"), left
        assert (tmp_path / left[0]).stat().st_size == half  # the torn bytes: only ever under the hidden name
    from hipexplore.files import write_file

    write_file(target, b"next")  # the next writer is not hindered by what the dead one left
    assert target.read_bytes() == b"next"


def _has_tmpfile(folder: Path) -> bool:
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except (OSError, AttributeError):
        return False
    os.close(fd)
    return True


# -- a sweep's files ---------------------------------------------------------------------------------
SWEEPER = """
    import io, json
    import pyarrow.parquet as pq
    out, tag, nth, units = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    real = pq.write_table
    seen = {}

    def dying(table, where, *a, **k):
        kind = (table.schema.metadata or {}).get(b"hipexplore.schema", b"").decode()
        seen[kind] = seen.get(kind, 0) + 1
        if kind != tag or seen[kind] != nth:
            return real(table, where, *a, **k)
        buf = io.BytesIO()
        real(table, buf, *a, **k)
        die_half_way(where, buf.getvalue(), kind)

    pq.write_table = dying
    from hipexplore.bench import sweep
    sweep("triad", ["16KiB", "32KiB", "64KiB"], [1], ["none"], device="host", iterations=12 * units, units=units,
          progress=False, reference=False, out=out)
    print("finished without the kill", flush=True)
"""


def _sweep(out: Path, units: int):
    from hipexplore.bench import sweep

    return sweep(
        "triad",
        ["16KiB", "32KiB", "64KiB"],
        [1],
        ["none"],
        device="host",
        iterations=12 * units,
        units=units,
        progress=False,
        reference=False,
        out=out,
    )


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "tag,units,committed",
    [
        ("samples", 1, {(16384, 0)}),  # configuration 2's samples torn: configuration 1 stays committed
        ("summary", 1, {(16384, 0)}),  # configuration 2's commit record torn: its samples are not committed
        ("units", 3, {(16384, 0)}),  # (configuration 2, unit 0)'s row torn: (configuration 1, unit 0) only
    ],
)
def test_a_sweep_killed_inside_a_results_write_keeps_what_was_committed_and_resumes(
    tmp_path, tag, units, committed
) -> None:
    """The second write of ``tag`` dies half-way: every file under a final name still reads whole
    (the parquet footers, meta.json), the committed (configuration, unit)s are those before the torn
    write, and running the sweep again measures each missing (configuration, unit) once."""
    from hipexplore.bench.io import output_paths, previous_results, read_units, units_path

    out = tmp_path / "r.parquet"
    proc = run_child(SWEEPER, str(out), tag, "2", str(units))
    assert f"torn {tag}" in proc.stdout
    paths = output_paths(out)
    for p in (*paths[:2], *([units_path(paths)] if units > 1 else [])):
        pq.read_table(p)  # whole, or this raises
    json.loads(paths[2].read_text())
    if _has_tmpfile(tmp_path):  # the torn bytes went with the process's unnamed inode
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    prev = previous_results(paths, True)
    if units == 1:
        got = {(int(r.size_bytes), 0) for r in prev.summary.itertuples()}
    else:
        got = {(int(r.size_bytes), int(r.pass_index)) for r in read_units(paths).itertuples()}
    assert got == committed, (tag, got)
    # samples written before the torn commit record are not committed: the reader drops them
    on_disk = pd.read_parquet(out)
    read = {(int(r.size_bytes), int(r.pass_index)) for r in prev.samples.itertuples()}
    assert read == committed and len(prev.samples) == 12 * len(committed)
    if tag != "samples":
        written = {(int(r.size_bytes), int(r.pass_index)) for r in on_disk.itertuples()}
        assert written > committed  # the uncommitted ones were on disk
    before = pd.read_parquet(out)
    res = _sweep(out, units)
    assert sorted(res.summary["size_bytes"]) == [16384, 32768, 65536]  # each configuration once
    assert set(res.summary["passes"]) == {units}
    s = res.samples
    assert not s.duplicated(["size_bytes", "pass_index", "iteration", "chunk", "position"]).any()
    assert s.groupby("size_bytes").size().to_dict() == {16384: 12 * units, 32768: 12 * units, 65536: 12 * units}
    kept = before[before["size_bytes"] == 16384]
    kept = kept[kept["pass_index"] == 0] if units > 1 else kept
    again = s[(s["size_bytes"] == 16384) & (s["pass_index"] == 0)]
    assert list(again["time_s"]) == list(kept["time_s"])  # the committed unit, as it was measured


# -- the shared inputs of a sweep's units -------------------------------------------------------------
SAVER = """
    import hashlib
    import numpy as np
    from hipexplore.bench import inputs
    from hipexplore.kernels import catalog
    folder, n = sys.argv[1], int(sys.argv[2])
    real = np.save
    calls = [0]

    def dying(fh, arr, *a, **k):
        calls[0] += 1
        if calls[0] < 2:  # the first array is saved whole, the second dies half-way
            return real(fh, arr, *a, **k)
        import io
        buf = io.BytesIO()
        real(buf, arr, *a, **k)
        print("array", hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(), flush=True)
        die_half_way(fh, buf.getvalue(), "npy")

    np.save = dying
    inputs.share_in(folder)
    spec = catalog.get("triad")
    inputs.host_inputs(spec, n, spec.scalars(n), seed=4242)
"""


@pytest.mark.timeout(120)
def test_a_unit_killed_while_saving_its_inputs_leaves_nothing_half_to_map(tmp_path) -> None:
    """A unit dies half-way through saving its second input array: the folder holds the first array
    whole and nothing under the second's name; the next unit maps nothing torn, draws the layout
    itself (the same seeded data the dead one drew) and saves it whole."""
    from hipexplore.bench import inputs
    from hipexplore.kernels import catalog

    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    n = 3 * 65536 + 7  # a layout no other test draws (the process keeps the last one drawn)
    proc = run_child(SAVER, str(folder), str(n))
    digest = proc.stdout.split("array ", 1)[1].split()[0]
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 1 and names[0].endswith("-0.npy"), names  # the whole one; no torn file, no temp name
    spec = catalog.get("triad")
    before = dict(inputs.COUNTS)
    inputs.share_in(str(folder))
    try:
        got = inputs.host_inputs(spec, n, spec.scalars(n), seed=4242, copy=False)
    finally:
        inputs.share_in(None)
    assert inputs.COUNTS["drawn"] == before["drawn"] + 1 and inputs.COUNTS["mapped"] == before["mapped"]
    second = list(got.values())[1]
    assert hashlib.sha256(np.ascontiguousarray(second).tobytes()).hexdigest() == digest
    stem = names[0][: -len("-0.npy")]
    for i, arr in enumerate(got.values()):  # saved whole now, for the units after it
        assert np.array_equal(np.load(folder / f"{stem}-{i}.npy"), arr)


# -- the compile cache's disk entries ----------------------------------------------------------------
PUTTER = """
    import hashlib, json
    from hipexplore.compile import disk
    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.request import CacheKey
    root, which = sys.argv[1], int(sys.argv[2])
    canonical = json.dumps({"generated": which}, sort_keys=True).encode()
    key = CacheKey(canonical, hashlib.sha256(canonical).hexdigest())
    real = disk.os.write

    def dying(fd, view):
        if len(view) < (1 << 20):
            return real(fd, view)
        half = len(view) // 2
        real(fd, view[:half])
        disk.os.fsync(fd)
        print(f"torn entry {half} of {len(view)}", flush=True)
        disk.os.kill(disk.os.getpid(), signal.SIGKILL)

    disk.os.write = dying
    disk.DiskCache(root).put(key, ObjectCode(binary=b"N" * (4 << 20), compiler="host", target="host", mode="shared-library"))
"""


@pytest.mark.timeout(120)
def test_a_cache_entry_write_killed_half_way_keeps_the_old_entry_and_its_leftover_is_swept(tmp_path) -> None:
    """Replacing an entry dies half-way: the old entry is still the hit; a key never stored before is
    a plain miss (not a corrupt entry: nothing sits under its name); the dead writer's ``.part`` file
    is never read, and the next writing process removes it (its pid is gone)."""
    import hashlib as hl

    from hipexplore.compile.base import ObjectCode
    from hipexplore.compile.disk import DiskCache
    from hipexplore.compile.request import CacheKey

    def key(i: int) -> CacheKey:
        canonical = json.dumps({"generated": i}, sort_keys=True).encode()
        return CacheKey(canonical, hl.sha256(canonical).hexdigest())

    root = tmp_path / "cache"
    old = ObjectCode(binary=b"O" * 4096, compiler="host", target="host", mode="shared-library")
    assert DiskCache(root).put(key(1), old)
    halves = sorted(int(run_child(PUTTER, str(root), str(i)).stdout.split()[-3]) for i in (1, 2))
    assert halves[0] > (2 << 20) - 4096  # half of each 4 MiB entry had reached the file system
    cache = DiskCache(root)
    assert cache.get(key(1)).binary == old.binary
    assert cache.get(key(2)) is None and cache.counters["corrupt"] == 0
    parts = [p for p in root.rglob("*") if p.is_file() and p.name.endswith(".part")]
    assert sorted(p.stat().st_size for p in parts) == halves  # the torn bytes, under temp names only
    writer = DiskCache(root)
    assert writer.put(key(3), ObjectCode(binary=b"3" * 100, compiler="host", target="host", mode="shared-library"))
    assert not [p for p in root.rglob("*") if p.name.endswith(".part")]  # the dead writers' leftovers swept
    assert writer.get(key(1)).binary == old.binary and writer.get(key(3)) is not None
