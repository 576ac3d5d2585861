"""The implicit-input memo's racy window, for real (issue 26, item 9): every other test shrinks
``implicit.RACY_NS`` to 50 ms, so a mutant that never marks a resolution racy survived. Here the
header lives on a real file system with one-second timestamps (ext2 with 128-byte inodes, loop
mounted: mtime and ctime have no sub-second part), and it is rewritten within the second it was
first written, with the same size, in place: its (mtime, ctime, size, inode, device) signature
does not change. Only the rule "a signature younger than RACY_NS is not trusted" makes the next
lookup read the file again; without it the cache serves the binary of the old text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hipexplore.compile import CompileRequest, Source, implicit
from hipexplore.compile.cache import CompileCache

OLD, NEW = 271828, 314159  # the same number of digits: the rewrite keeps the size


@pytest.fixture
def coarse_fs(tmp_path):
    """A loop-mounted ext2 file system whose timestamps have a one-second granularity."""
    from conftest import need

    image, mnt = tmp_path / "coarse.img", tmp_path / "mnt"
    mnt.mkdir()
    mkfs = shutil.which("mkfs.ext2") or "/usr/sbin/mkfs.ext2"
    if os.geteuid() != 0 or not os.path.exists(mkfs):
        need("a loop-mounted ext2 file system", "needs root and mkfs.ext2 (e2fsprogs)")
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    made = subprocess.run([mkfs, "-q", "-F", "-I", "128", str(image)], capture_output=True, text=True)
    mounted = (
        subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True, text=True)
        if made.returncode == 0
        else made
    )
    if mounted.returncode != 0:
        need("a loop-mounted ext2 file system", (mounted.stderr or mounted.stdout).strip()[:200])
    try:
        probe = mnt / "probe"
        probe.write_text("x")
        assert os.stat(probe).st_mtime_ns % 1_000_000_000 == 0, "the file system keeps sub-second times"
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _value(binary: bytes, tmp_path: Path) -> int:
    import ctypes
    import hashlib

    lib = tmp_path / f"v{hashlib.sha256(binary).hexdigest()[:12]}.so"
    lib.write_bytes(binary)
    fn = ctypes.CDLL(str(lib)).answer
    fn.restype = ctypes.c_int
    return fn()


def test_a_header_rewritten_within_its_timestamp_tick_is_not_served_stale(coarse_fs, tmp_path):
    from conftest import require_compiler

    require_compiler("host")
    assert implicit.RACY_NS == 1_000_000_000  # the real window, not a test's shorter one
    cfg = coarse_fs / "cfg.h"
    req = CompileRequest(Source("k.c", f'#include "{cfg}"\nint answer(void) {{ return VALUE; }}\n'), "host", "host")
    CompileCache(disk_dir=False).get_or_compile(req.with_(source=Source("w.c", "int answer(void) { return 0; }\n")))
    for _attempt in range(8):  # write, resolve and rewrite inside one wall-clock second
        while time.time() % 1 > 0.05:
            time.sleep(0.01)
        second = int(time.time())
        cfg.write_text(f"#define VALUE {OLD}\n")
        before = os.stat(cfg)
        cache = CompileCache(disk_dir=False)
        first = cache.get_or_compile(req)
        with open(cfg, "r+") as f:  # in place: same inode, same size
            f.write(f"#define VALUE {NEW}\n")
        after = os.stat(cfg)
        if int(time.time()) == second and (after.st_mtime_ns, after.st_ctime_ns) == (
            before.st_mtime_ns,
            before.st_ctime_ns,
        ):
            break
        implicit._memo.clear()
    else:
        pytest.fail("could not write, compile and rewrite within one second in 8 tries")
    assert (after.st_size, after.st_ino) == (before.st_size, before.st_ino)  # the signature did not change
    assert _value(first.binary, tmp_path) == OLD
    served = cache.get_or_compile(req)
    fresh = require_compiler("host").compile(req)
    assert served.binary == fresh.binary and _value(served.binary, tmp_path) == NEW, served.outcome
    # once the second has passed the signature is old enough to be trusted: a memory hit, stat only
    time.sleep(1.1)
    assert cache.get_or_compile(req).outcome in ("compiled", "memory-hit")
    assert cache.get_or_compile(req).outcome == "memory-hit"
