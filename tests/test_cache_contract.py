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
from hipexplore.compile.cache import CompileCache, default_cache_dir
from hipexplore.schema import METADATA_KEY


def _meta(path: Path) -> dict:
    raw = (pq.read_schema(str(path)).metadata or {}).get(METADATA_KEY.encode())
    assert raw is not None, f"{path.name} carries no provenance"
    return json.loads(raw)


def test_both_result_files_carry_the_runs_provenance(tmp_path):
    out = tmp_path / "r.parquet"
    res = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=8, reference=False, progress=False, out=out)
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
        "disk_entries": 0, "disk_bytes": 0, "disk_dir": "", "disk_writable": False, "disk_corrupt": 0}


def test_verify_without_a_disk_tier_reports_nothing_done():
    assert CompileCache(disk_dir=False).verify() == {"checked": 0, "ok": 0, "corrupt": 0, "removed": 0, "failed": 0,
                                                     "unauthenticated": 0, "problems": []}


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
