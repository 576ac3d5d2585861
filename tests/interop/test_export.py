"""hipexplore.interop.export and the readers, round trip through the formats' own tools: ``bench
--export pyperf`` read by ``pyperf compare_to`` (pyperf's CLI), ``--export nvbench`` read by nvbench's
compare scripts (``nvbench-compare-legacy`` and ``-robust``, installed by the cuda-bench wheel of the
``interop`` extra: nothing vendored), ``--export bencher`` checked against the Bencher Metric Format's
shape; and each export read back by ``hipexplore compare``. The sweeps are real host sweeps."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hipexplore.cli import main

from .conftest_runs import two_runs

KERNEL_ARGS = [
    "--args",
    "inout:y:f32[n], in:x:f32[n], n:u64=n",
    "--device",
    "host",
    "--size",
    "64KiB",
    "--iterations",
    "24",
    "--units",
    "3",
    "--no-progress",
]
K_C = "void k(float* y, const float* x, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] += x[i]; }\n"


def tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        from conftest import missing

        missing(f"tool {name}", "installed by the 'interop' extra (cuda-bench[compare]); ./setup.sh --dev installs it")
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Two separate CLI runs of one kernel, each exported in the three formats."""
    folder = tmp_path_factory.mktemp("export")
    (folder / "k.c").write_text(K_C)
    for side in ("base", "new"):
        rc = main(
            [
                "bench",
                "k",
                "--source",
                str(folder / "k.c"),
                *KERNEL_ARGS,
                "--out",
                str(folder / f"{side}.parquet"),
                *sum(
                    (["--export", fmt, str(folder / f"{side}.{fmt}.json")] for fmt in ("nvbench", "pyperf", "bencher")),
                    [],
                ),
            ]
        )
        assert rc == 0
    return folder


@pytest.mark.timeout(300)
def test_pyperf_compare_to_reads_the_pyperf_export(exported):
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "compare_to",
            "--table",
            str(exported / "base.pyperf.json"),
            str(exported / "new.pyperf.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert "k 64 KiB r=1 none" in got.stdout, got.stdout  # a row, or named among those "not significant"
    stats = subprocess.run(
        [sys.executable, "-m", "pyperf", "stats", str(exported / "base.pyperf.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stats.returncode == 0 and "Number of run with values: 3" in stats.stdout, (
        stats.stdout + stats.stderr
    )  # a run per unit


@pytest.mark.timeout(300)
def test_nvbench_compare_scripts_read_the_nvbench_export(exported):
    a, b = str(exported / "base.nvbench.json"), str(exported / "new.nvbench.json")
    legacy = subprocess.run(
        [tool("nvbench-compare-legacy"), "--no-color", a, b], capture_output=True, text=True, timeout=120, cwd=exported
    )
    assert "Total Matches: 2" in legacy.stdout, legacy.stdout + legacy.stderr  # none and the cold reference
    assert "| 65536 |" in legacy.stdout.replace("  ", " ") or "65536" in legacy.stdout
    robust = subprocess.run(
        [tool("nvbench-compare-robust"), a, b], capture_output=True, text=True, timeout=120, cwd=exported
    )
    assert robust.returncode in (0, 1) and "Total Matches: 2" in robust.stdout, robust.stdout + robust.stderr


@pytest.mark.timeout(300)
def test_the_bencher_export_has_the_metric_format_with_interval_bounds(exported):
    doc = json.loads((exported / "base.bencher.json").read_text())
    assert set(doc) == {"k 64 KiB r=1 none", "k 64 KiB r=1 cold-reference"}
    for entry in doc.values():
        lat = entry["latency"]
        assert set(lat) == {"value", "lower_value", "upper_value"}
        assert 0 < lat["lower_value"] <= lat["value"] <= lat["upper_value"]


@pytest.mark.timeout(300)
def test_compare_reads_its_own_exports_back(exported, capsys):
    for fmt in ("pyperf", "nvbench"):
        assert main(["compare", str(exported / f"base.{fmt}.json"), str(exported / f"new.{fmt}.json"), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert len(got["rows"]) == 2 and got["source"], got
        assert all(
            r["present"] == "both" and r["verdict"] in ("faster", "slower", "same", "undecided") for r in got["rows"]
        )
    # nvbench's export names its axes: our reader maps them back to the configuration
    assert main(["compare", str(exported / "base.nvbench.json"), str(exported / "new.nvbench.json"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["kernel"], r["size_bytes"], r["flush"]) for r in rows} == {
        ("k", 65536, "none"),
        ("k", 65536, "cold-reference"),
    }


@pytest.mark.timeout(300)
def test_python_export_of_a_sweep_result(tmp_path):
    from hipexplore.bench.io import output_paths, read_results
    from hipexplore.interop.export import render

    base, _ = two_runs(tmp_path)
    samples, summary, meta = read_results(output_paths(base))
    text = render("nvbench", summary, samples, meta or {})
    doc = json.loads(text)
    assert doc["meta"]["version"]["json"]["string"] == "1.0.0"
    states = doc["benchmarks"][0]["states"]
    assert {s["axis_values"][2]["value"] for s in states} == {"none", "l2-read", "cold-reference"}
