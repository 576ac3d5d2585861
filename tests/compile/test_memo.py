"""Facts about the compilers remembered on disk across processes (issue 49, item 6): a first cache
hit in a new process loads no compiler, starts no worker and hashes no library, and every memo is
re-verified (stat signatures) and trusted only from this user's own folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipexplore.compile import implicit, memo
from hipexplore.compile._common import file_stamp
from hipexplore.compile.request import CompileRequest, CompilerIdentity

from conftest import require_compiler

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_memo(tmp_path, monkeypatch):
    """A memo folder of this test's own (the suite's HOME is shared by the tests of a worker)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    memo._seen.clear()
    yield Path(memo.folder())
    memo._seen.clear()


def _fresh() -> None:
    """As a new process sees the memo: nothing remembered in memory."""
    memo._seen.clear()


def test_store_load_and_the_key_is_compared_in_full(own_memo):
    memo.store("k", ["a", 1], {"v": 2})
    _fresh()
    assert memo.load("k", ["a", 1]) == {"v": 2} and memo.load("k", ["a", 2]) is None
    (path,) = own_memo.iterdir()
    assert path.stat().st_mode & 0o022 == 0 and own_memo.stat().st_mode & 0o022 == 0
    data = json.loads(path.read_text())
    data["key"] = data["key"].replace('"a"', '"b"')  # another key under this file name: not ours
    path.write_text(json.dumps(data))
    _fresh()
    assert memo.load("k", ["a", 1]) is None


@pytest.mark.parametrize("attack", ["file-writable-by-others", "folder-writable-by-others", "link"])
def test_a_memo_others_could_have_written_is_a_miss(own_memo, tmp_path, attack):
    memo.store("k", "key", "value")
    (path,) = own_memo.iterdir()
    if attack == "file-writable-by-others":
        path.chmod(0o666)
    elif attack == "folder-writable-by-others":
        own_memo.chmod(0o777)
    else:
        planted = tmp_path / "planted.json"
        planted.write_text(path.read_text())
        path.unlink()
        path.symlink_to(planted)
    _fresh()
    assert memo.load("k", "key") is None
    if attack == "folder-writable-by-others":
        memo.store("k", "key", "other")  # nothing is written into a folder others can write either
        _fresh()
        assert memo.load("k", "key") is None


def test_a_file_stamp_is_hashed_once_across_processes_and_again_after_a_change(tmp_path):
    lib = tmp_path / "libx.so"
    lib.write_bytes(b"x" * 100_000)
    os.utime(lib, (1_000_000_000, 1_000_000_000))
    time.sleep(1.1)  # a file changed within the last second is not remembered (it may change again unseen)
    code = f"import sys; from hipexplore.compile._common import file_stamp; print(file_stamp({str(lib)!r}))"
    env = {**os.environ, "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    first = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    (entry,) = [p for p in Path(memo.folder()).iterdir() if p.name.startswith("stamp-")]
    data = json.loads(entry.read_text())
    data["value"] = "size=100000;sha256=remembered"  # what a later process reads instead of hashing
    entry.write_text(json.dumps(data))
    second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    assert first.startswith("size=100000;sha256=") and second == "size=100000;sha256=remembered"
    lib.write_bytes(b"y" * 100_000)  # same size and mtime, new content: its ctime and the memo's key change
    os.utime(lib, (1_000_000_000, 1_000_000_000))
    third = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    assert third.startswith("size=100000;sha256=") and third not in (first, second)
    assert file_stamp(lib) == third


def test_a_remembered_identity_is_recomputed_when_a_file_it_names_changes(tmp_path):
    lib = tmp_path / "lib" / "libcompiler.so"
    lib.parent.mkdir()
    lib.write_bytes(b"v1")
    computed = []

    def compute() -> CompilerIdentity:
        computed.append(1)
        return CompilerIdentity("nvrtc", f"v{len(computed)}", library=str(lib), stamp=file_stamp(lib))

    first = memo.identity("nvrtc", ["ctx"], compute)
    _fresh()
    assert memo.identity("nvrtc", ["ctx"], compute) == first and len(computed) == 1  # a new process: remembered
    (lib.parent / "libcompiler.so.2").write_bytes(b"new")  # a library appearing beside it changes its folder
    _fresh()
    assert memo.identity("nvrtc", ["ctx"], compute).version == "v2" and len(computed) == 2
    lib.write_bytes(b"v2!")
    _fresh()
    assert memo.identity("nvrtc", ["ctx"], compute).version == "v3"
    _fresh()
    assert memo.identity("nvrtc", ["other context"], compute).version == "v4"


def test_implicit_inputs_resolved_once_across_processes_and_again_after_an_edit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    header = tmp_path / "cfg.h"
    header.write_text("#define N 1\n")
    req = CompileRequest('#include "cfg.h"\n', compiler="nvrtc", target="sm_90")
    ident = CompilerIdentity("nvrtc", "13.5")
    calls = []

    def resolve(col: implicit.Collector) -> str:
        calls.append(1)
        col.cwd = os.getcwd()  # what a resolution that asked the compiler sets
        col.read("cfg.h", str(header))
        return ""

    os.utime(header, (1_000_000_000, 1_000_000_000))
    time.sleep(1.1)  # a resolution that read a file changed within the last second is not trusted (nor stored)
    first = implicit.current(req, ident, resolve)
    implicit._memo.clear()
    _fresh()
    assert implicit.current(req, ident, resolve) == first and len(calls) == 1
    header.write_text("#define N 2\n")
    implicit._memo.clear()
    _fresh()
    again = implicit.current(req, ident, resolve)
    assert len(calls) == 2 and again != first


HIP = """#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
PROBE = """
import json, sys
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.request import CompileRequest
from hipexplore.compile import hiprtc_deps
from hipexplore.compile.includes import with_closure
cache = CompileCache()
req, _ = with_closure(CompileRequest(open(sys.argv[1]).read(), compiler=sys.argv[2], target=sys.argv[3]), source_path=sys.argv[1])
result = cache.get_or_compile(req)
comp = cache._compilers[sys.argv[2]]
print(json.dumps({"outcome": result.outcome, "workers": comp.worker_pids(), "helpers": hiprtc_deps.helper_count(),
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("hip", "cuda", "rocm"))}))
"""


@pytest.mark.parametrize(
    "compiler,target,text,suffix", [("hiprtc", "gfx90a", HIP, ".hip"), ("nvrtc", "sm_90", HIP.split("\n", 1)[1], ".cu")]
)
def test_a_first_hit_in_a_new_process_loads_no_compiler(tmp_path, compiler, target, text, suffix):
    """The first lookup of a new process that hits the disk tier: no worker process, no dependency
    helper, no compiler bindings imported (the compile it replaces did all three)."""
    require_compiler(compiler)
    work = tmp_path / "work"  # hiprtc watches the current directory (Debian's comgr searches a folder relative to it)
    work.mkdir()
    src = work / f"k{suffix}"
    src.write_text(text)
    env = {**os.environ, "HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    time.sleep(1.1)  # files changed within the last second are not trusted (implicit.RACY_NS)
    run = lambda: json.loads(  # noqa: E731
        subprocess.run(
            [sys.executable, "-c", PROBE, str(src), compiler, target],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            timeout=300,
            check=True,
        ).stdout
    )
    miss = run()
    hit = run()
    assert miss["outcome"] == "compiled" and hit["outcome"] == "disk-hit"
    assert miss["modules"] or miss["workers"] or miss["helpers"]  # the compile needed them
    assert hit == {"outcome": "disk-hit", "workers": [], "helpers": 0, "modules": []}
