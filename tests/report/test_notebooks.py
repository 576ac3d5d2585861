"""The notebooks: paired with their jupytext scripts, stripped, parameterised, and executed by
papermill (kernel hipexplore) on the host device and on recorded parquet data, with small parameters.

"Recorded" data here is recorded by this test with the real sweep and the real tuning replay
(``hipexplore tune-replay --frame``); data/h200 and data/tuning are run too when present.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import jupytext
import nbformat
import pytest

from hipexplore import report
from hipexplore.cli import main

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(report.NOTEBOOKS)
SMALL_BENCH = {"sizes": ["256KiB"], "rotating": [1, 2], "flush": ["none", "l2-read"], "iterations": 12}
SMALL_TUNING = {"problems": 1, "candidates": 3}
SMALL = {
    "compile_cache": SMALL_TUNING,
    "rotating_buffers": SMALL_BENCH,
    "dashboard": {**SMALL_BENCH, **SMALL_TUNING},
    "review": {"sizes": ["64KiB"], "iterations": 16, **SMALL_TUNING},
}
#: figures each notebook must show (a figure is an image/png output)
FIGURES = {"compile_cache": 4, "rotating_buffers": 6, "dashboard": 2, "review": 2}  # review: + 1 with tuning_data


def code_sources(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_no_notebook_file_is_tracked():
    """The scripts are the one source: a tracked .ipynb would take the outputs a JupyterLab run saves
    into it (and every later report's provenance would read +dirty)."""
    tracked = subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if tracked.returncode != 0:
        from conftest import need

        need("a git checkout", f"git ls-files failed here: {tracked.stderr.strip()}")
    files = tracked.stdout.split()
    assert sorted(files) == sorted(f"notebooks/{name}.py" for name in NAMES), files
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", "notebooks/dashboard.ipynb"], cwd=ROOT, timeout=60
    )
    assert ignored.returncode == 0, "notebooks/*.ipynb must be ignored (made from the scripts, never tracked)"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_made_from_its_script(name):
    py = ROOT / "notebooks" / f"{name}.py"
    script = jupytext.read(py)
    made = report.notebook_path(name)
    assert made.parent != py.parent and ROOT not in made.parents  # never beside the source
    nb = nbformat.read(str(made), as_version=4)
    nbformat.validate(nb)
    assert code_sources(script) == code_sources(nb)
    assert nb.metadata["kernelspec"]["name"] == "hipexplore"
    assert "jupytext" not in nb.metadata  # a saved copy writes no paired script beside it
    assert "ipynb" in script.metadata["jupytext"]["formats"]  # `jupytext --sync` still makes the (ignored) .ipynb
    # the script opened as a notebook in a plain JupyterLab (jupytext) and saved is rewritten as it was
    # (the header's jupytext_version line is whichever jupytext wrote it: a release of jupytext is not a change)
    unversioned = lambda text: re.sub(r"(?m)^#\s+jupytext_version: .*\n", "", text)  # noqa: E731
    assert unversioned(jupytext.writes(script, fmt="py:percent")) == unversioned(py.read_text())
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert made.read_text() == nbformat.writes(report.workspace.read_notebook(name))  # the same file every time
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    params = report.notebook_parameters(name)
    assert set(SMALL[name]) <= set(params)
    if name in ("rotating_buffers", "dashboard"):
        assert {"device", "kernel", "sizes", "rotating", "flush", "iterations", "data"} <= set(params)
    if name == "review":
        assert {"baseline", "candidate", "base_kernel", "new_kernel", "threshold", "device"} <= set(params)
    if name != "rotating_buffers":
        assert {"compiler", "target", "data" if name == "compile_cache" else "tuning_data"} <= set(params)


def test_package_reaches_the_notebooks():
    """hipexplore/notebooks is a symlink to ../notebooks (real files in a built wheel)."""
    link = ROOT / "hipexplore" / "notebooks"
    assert link.is_symlink() and link.resolve() == (ROOT / "notebooks").resolve()
    assert report.notebooks_dir().resolve() == (ROOT / "notebooks").resolve()
    for name in NAMES:
        assert report.notebook_path(name).is_file()
        assert report.workspace.source_path(name) == report.notebooks_dir() / f"{name}.py"


def check_executed(nb, name: str) -> None:
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= FIGURES[name], f"{name}: {len(images)} figures, expected {FIGURES[name]}"
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_live_on_the_host(name, tmp_path):
    nb = report.execute_notebook(
        name,
        {**SMALL[name], **({"device": "host"} if "device" in report.notebook_parameters(name) else {})},
        output=tmp_path / f"{name}.ipynb",
    )
    check_executed(nb, name)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Benchmark and replay parquet files written by the real tools."""
    from hipexplore.bench import sweep

    root = tmp_path_factory.mktemp("recorded")
    sweep(
        "triad",
        ["256KiB", "1MiB"],
        [1, 2],
        ["none", "l2-write"],
        device="host",
        iterations=12,
        progress=False,
        out=root / "bench" / "triad.parquet",
    )
    (root / "tuning").mkdir()
    assert (
        main(
            [
                "tune-replay",
                "--compiler",
                "host",
                "--problems",
                "1",
                "--limit",
                "3",
                "--frame",
                str(root / "tuning" / "replay.parquet"),
            ]
        )
        == 0
    )
    return root


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_on_recorded_data(name, recorded, tmp_path):
    params = {
        "compile_cache": {"data": str(recorded / "tuning")},
        "rotating_buffers": {"data": str(recorded / "bench")},
        "dashboard": {"data": str(recorded / "bench"), "tuning_data": str(recorded / "tuning")},
        # a run against itself: every configuration is compared, none may be called faster/slower
        "review": {
            "baseline": str(recorded / "bench" / "triad.parquet"),
            "candidate": str(recorded / "bench" / "triad.parquet"),
            "tuning_data": str(recorded / "tuning"),
        },
    }[name]
    nb = report.execute_notebook(name, params, output=tmp_path / f"{name}.ipynb")
    check_executed(nb, name)
    text = "\n".join(
        o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    if name != "compile_cache":
        assert "l2-write" in text  # the recorded flush modes, not the notebook defaults
    if name == "review":
        table = next(
            o["data"]["text/html"]
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.outputs
            if "change [95%]" in o.get("data", {}).get("text/html", "")
        )
        assert "same" in table or "undecided" in table
        assert "slower" not in table and "faster" not in table


@pytest.mark.parametrize(
    "name,params",
    [
        ("rotating_buffers", {"data": "data/h200"}),
        ("compile_cache", {"data": "data/tuning"}),
        ("dashboard", {"data": "data/h200", "tuning_data": "data/tuning"}),
    ],
)
def test_notebook_runs_on_the_repository_data(name, params, tmp_path):
    missing = [p for p in params.values() if not any((ROOT / p).rglob("*.parquet"))]
    if missing:
        from conftest import need

        need(f"recorded parquet under {', '.join(missing)}", "not in this checkout (the repository carries it)")
    nb = report.execute_notebook(name, {k: str(ROOT / v) for k, v in params.items()}, output=tmp_path / f"{name}.ipynb")
    check_executed(nb, name)


def test_dashboard_defaults_to_auto_compiler():
    from hipexplore import report

    params = report.notebook_parameters("dashboard")
    assert params["compiler"].strip("'\"") == "auto" and params["target"].strip("'\"") == "auto"
