"""The first disk hit of a process: its lookup time and saving leave out loading the compiler
(issue 26, item 4: ``saved=-0.214 s`` because the hit's lookup time held the compiler's start-up).

Real compiles, a real disk tier, and the hit in a fresh Python process each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_compiler

REPO = Path(__file__).resolve().parents[2]

LOOKUP = r"""
import json, sys, time
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
compiler, target, name, text = sys.argv[2:6]
cache = CompileCache(disk_dir=sys.argv[1], remote=False)
r = CompileRequest(Source(name, text), compiler, target)
t0 = time.perf_counter()
res = cache.get_or_compile(r)
wall = time.perf_counter() - t0
again = cache.get_or_compile(r)
ev = cache.events()
print(json.dumps({"outcome": res.outcome, "lookup": res.lookup_seconds, "compile": res.compile_seconds,
                  "saved": res.seconds_saved, "setup": res.setup_seconds, "wall": wall,
                  "again": [again.outcome, again.setup_seconds, again.seconds_saved],
                  "event_lookup": ev["lookup_seconds"].tolist(), "event_saved": ev["seconds_saved"].tolist(),
                  "stats_setup": cache.stats()["setup_seconds"], "stats_saved": cache.stats()["seconds_saved"]}))
"""

CASES = {
    # hiprtc runs in a worker process by default: the first lookup starts it and loads comgr there
    "hiprtc": ("gfx90a", "k.hip", 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 2.0f; }\n'),
    "host": ("host", "k.c", "void k(float* a, long n) { for (long i = 0; i < n; ++i) a[i] = 2.0f * a[i]; }\n"),
}


def _run(cache_dir: Path, compiler: str) -> dict:
    target, name, text = CASES[compiler]
    out = subprocess.run(
        [sys.executable, "-c", LOOKUP, str(cache_dir), compiler, target, name, text],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("compiler", sorted(CASES))
def test_the_first_disk_hit_of_a_fresh_process_does_not_count_loading_the_compiler(tmp_path, compiler):
    require_compiler(compiler)
    first = _run(tmp_path / "cache", compiler)
    assert first["outcome"] == "compiled" and first["setup"] > 0
    hit = _run(tmp_path / "cache", compiler)  # a fresh process: the compiler is loaded again
    assert hit["outcome"] == "disk-hit"
    assert hit["setup"] > 0 and hit["setup"] == hit["stats_setup"]
    # the hit's own time is what the cache did (key, read, check), not the compiler's start-up: the
    # two are disjoint parts of the call's wall time (with the set-up inside the lookup, as before the
    # fix, lookup + setup exceeds the wall by the set-up, which a fresh process pays by loading the
    # compiler). No comparison of the two durations: which is longer depends on the machine's load
    # (host: the lookup runs `cc -M`, the set-up `cc --version`; issue 26.6)
    assert hit["setup"] > 2e-3 and hit["lookup"] + hit["setup"] <= hit["wall"] + 1e-3, hit
    assert hit["saved"] == pytest.approx(hit["compile"] - hit["lookup"]), hit
    if compiler == "hiprtc":  # a compile of ~0.5 s against a lookup of milliseconds: a saving at any load
        assert hit["saved"] > 0, hit
    assert hit["event_lookup"][0] == pytest.approx(hit["lookup"]) and hit["event_saved"][0] == pytest.approx(
        hit["saved"]
    )
    # later lookups in the process pay no set-up: the memory hit saves nearly the whole compile
    assert hit["again"][0] == "memory-hit" and hit["again"][1] == 0.0 and hit["again"][2] > 0
    assert hit["stats_saved"] == pytest.approx(hit["saved"] + hit["again"][2])


def test_a_compiler_made_ready_before_the_lookup_adds_no_setup(tmp_path):
    """key_for (the CLI's way: it times loading apart) readies the compiler; the hit after it has
    no set-up left to exclude."""
    from hipexplore.compile import CompileRequest, Source
    from hipexplore.compile.cache import CompileCache

    require_compiler("host")
    _, name, text = CASES["host"]
    r = CompileRequest(Source(name, text), "host", "host")
    CompileCache(disk_dir=tmp_path, remote=False).get_or_compile(r)
    cache = CompileCache(disk_dir=tmp_path, remote=False)
    cache.key_for(r)
    res = cache.get_or_compile(r)
    assert res.outcome == "disk-hit" and res.setup_seconds < 0.05 and res.seconds_saved > 0
