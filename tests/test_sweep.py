"""Sweeps on the host device (the CI sweep): tidy frames that follow docs/ARCHITECTURE.md, files
written as the sweep goes, stop and resume, callbacks, the CLI, and clear errors."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from hipexplore.bench import SAMPLE_COLUMNS, SUMMARY_COLUMNS, sweep
from hipexplore.bench.sweep import output_paths, parse_size
from hipexplore.compile.cache import CompileCache
from hipexplore.devices import get_device
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError, DeviceUnavailable, UnsupportedOperation

ARCH = Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md"
KIB = 1 << 10


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=128 * KIB)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("scache"))
    return d


def _doc_columns(label: str) -> list[str]:
    text = ARCH.read_text()
    section = text[text.index("## Benchmark frames"):]
    m = re.search(label + r"[^\n]*:\n`([^`]*)`", section)
    assert m, f"no '{label}' column list in ARCHITECTURE.md"
    return [c.strip() for c in m.group(1).replace("\n", " ").split(",")]


def test_columns_are_the_documented_contract() -> None:
    assert list(SAMPLE_COLUMNS) == _doc_columns("Samples")
    assert list(SUMMARY_COLUMNS) == _doc_columns("Summary")


def test_host_sweep_produces_tidy_frames(dev, tmp_path) -> None:
    seen: list[dict] = []
    res = sweep(["triad", "copy"], ["16KiB", 64 * KIB], [1, "auto"], ["none", "l2-write", "l2-read"], device=dev,
                iterations=12, reference_samples=3, out=tmp_path / "s.parquet", progress=False, on_result=seen.append,
                warmup_s=0)
    s, x = res.summary, res.samples
    assert list(s.columns) == list(SUMMARY_COLUMNS) and list(x.columns) == list(SAMPLE_COLUMNS)
    assert len(s) == 2 * 2 * (2 * 3 + 1) == len(seen)
    # the cold reference is taken in parts through each (kernel, size) group; its row comes last
    assert [r["flush"] for r in seen[:7]] == ["none", "l2-write", "l2-read"] * 2 + ["cold-reference"]
    ref = s[s.flush == "cold-reference"]
    assert (ref.bias == 0).all() and (ref.n == 3).all() and (ref.rotating == 1).all()
    rest = s[s.flush != "cold-reference"]
    assert (rest.n == 12).all()
    # every summary row is recomputable from its samples
    for r in rest.itertuples():
        t = x[(x.kernel == r.kernel) & (x.size_bytes == r.size_bytes) & (x.rotating_requested == r.rotating_requested) & (x.flush == r.flush)]
        assert len(t) == 12 and t.time_s.median() == pytest.approx(r.median_s)
        assert r.bias == pytest.approx(r.median_s / r.reference_median_s - 1)
        assert r.bandwidth_gbs == pytest.approx(r.footprint_bytes / r.median_s / 1e9)
        assert sorted(t.buffer_set.unique()) == list(range(r.rotating))
    auto = s[(s.rotating_requested == "auto") & (s.kernel == "triad") & (s.size_bytes == 16 * KIB)]
    assert (auto.rotating == max(2, 2 * math.ceil(128 * KIB / (3 * 16 * KIB)))).all()
    assert (x[x.flush == "none"].flush_s == 0).all() and (x[x.flush == "l2-read"].flush_s > 0).all()
    assert (s.rotating_cap_bytes > 0).all() and s.peak_bandwidth_gbs.isna().all()
    # on disk: the same frames plus provenance
    samples_path, summary_path, meta_path = output_paths(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(samples_path), x, check_dtype=False)
    assert len(pd.read_parquet(summary_path)) == len(s)
    meta = json.loads(meta_path.read_text())
    assert meta["device.kind"] == "host" and meta["sweep.flush"] == "none,l2-write,l2-read" and "git_revision" in meta
    assert meta["verify.triad.16384"].startswith("rel_l2_error=")
    # the kernels and flushes went through the compile cache
    assert {"triad", "copy", "flush-l2-write", "flush-l2-read"} <= set(dev.cache.events().kernel)


def test_stop_and_resume_keeps_finished_work(dev, tmp_path) -> None:
    out = tmp_path / "r.parquet"
    kw = dict(device=dev, iterations=6, reference_samples=2, out=out, progress=False, warmup_s=0)
    done: list[dict] = []
    res = sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none", "l2-read"], on_result=done.append,
                should_stop=lambda: len(done) >= 3, **kw)
    # three configurations, then the reference of their (kernel, size), whose samples were taken: kept
    assert res.stopped and len(res.summary) == 4 and list(res.summary.flush)[-1] == "cold-reference"
    on_disk = pd.read_parquet(output_paths(out)[1])
    assert len(on_disk) == 4
    first_run = on_disk.run_id.iloc[0]
    more: list[dict] = []
    res2 = sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none", "l2-read"], on_result=more.append, **kw)
    assert not res2.stopped and len(more) == 2 * (2 * 2 + 1) - 4
    s = res2.summary
    assert len(s) == 10 and not s.duplicated(["kernel", "size_bytes", "rotating_requested", "flush"]).any()
    assert (s.run_id == first_run).all()
    assert len(res2.samples) == int(s.n.sum())
    # nothing left to do: a third run adds nothing
    assert len(sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none", "l2-read"], **kw).summary) == 10
    # rows measured one way are never mixed with rows measured another way
    with pytest.raises(ConfigError, match=r"other settings .*sweep\.stop_rule"):
        sweep("triad", ["16KiB", "64KiB"], [1], ["none"], **{**kw, "iterations": 12})


def test_adaptive_sweep_and_inputs(dev) -> None:
    from hipexplore.bench import StopRule

    res = sweep("fill", "8KiB", "auto", "none", device=dev, stop=StopRule(min_samples=8, min_time_s=0, target_cv=5, timeout_s=2),
                reference=False, progress=False, warmup_s=0)
    r = res.summary.iloc[0]
    assert r.n >= max(8, r.rotating) and math.isnan(r.bias)
    assert parse_size("1MiB") == 1 << 20 and parse_size("256M") == 256 << 20 and parse_size(4096) == 4096
    with pytest.raises(ConfigError, match="'12 apples'"):
        parse_size("12 apples")


def test_sweep_errors_are_clear(dev) -> None:
    with pytest.raises(ConfigError, match="'flushy'"):
        sweep("triad", "16KiB", 1, "flushy", device=dev, iterations=4, progress=False)
    with pytest.raises(UnsupportedOperation, match="icache"):
        sweep("triad", "16KiB", 1, "icache", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match=r"iterations \(4\) must be greater than or equal to .*\(8\)"):
        sweep("triad", "16KiB", 8, "none", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match="no host C source"):
        sweep("spin", "16KiB", 1, "none", device=dev, iterations=4, progress=False)
    with pytest.raises(ConfigError, match=r"\.parquet"):
        sweep("triad", "16KiB", 1, "none", device=dev, iterations=4, progress=False, out="x.csv")


def test_cli_bench_json_and_errors(tmp_path, capsys, monkeypatch) -> None:
    from hipexplore.cli import main

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "cli.parquet"
    rc = main(["bench", "triad", "--device", "host", "--size", "16KiB,32KiB", "--rotating", "1,auto", "--flush", "none,l2-read",
               "--iterations", "8", "--reference-samples", "2", "--llc-bytes", str(64 * KIB), "--out", str(out), "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["out"] == str(out) and len(payload["summary"]) == 2 * (2 * 2 + 1)
    assert out.exists()
    rc = main(["bench", "triad", "--device", "host", "--size", "16KiB", "--rotating", "4", "--iterations", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "iterations (2)" in err and "(4)" in err
    try:
        get_device("cuda").close()
    except DeviceUnavailable:  # the usual case (CI has no GPU): the error names what was looked for
        rc = main(["bench", "triad", "--device", "cuda", "--iterations", "2"])
        assert rc == 2 and "CUDA" in capsys.readouterr().err


def test_cli_user_kernel(tmp_path, capsys, monkeypatch) -> None:
    from hipexplore.cli import main

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "scale.c"
    src.write_text("void scale(float* y, const float* x, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }\n")
    rc = main(["bench", "myscale", "--device", "host", "--source", str(src), "--entry", "scale", "--args", "out:y:f32[n],in:x:f32[n],n:u64=n",
               "--size", "16KiB", "--iterations", "4", "--no-reference", "--json"])
    assert rc == 0
    (row,) = json.loads(capsys.readouterr().out)["summary"]
    assert row["kernel"] == "myscale" and row["footprint_bytes"] == 2 * 16 * KIB and row["bias"] is None
