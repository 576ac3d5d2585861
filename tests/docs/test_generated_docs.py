"""The generated parts of the docs equal what their generator makes now (scripts/gen_docs.py): the
settings table, the current figures (docs/figures.md and the head of BENCHMARKS.md, computed from the
recorded data) and the troubleshooting page (each case runs the real CLI). A changed setting, a new
recorded run or a reworded error message fails here until the pages are regenerated, so no page
quotes a number or a message the code and the data no longer produce."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import cliproc

REPO = Path(__file__).resolve().parents[2]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen():
    return _gen()


def test_figures_page_and_benchmarks_head_equal_the_data(gen):
    assert (REPO / "docs" / "figures.md").read_text() == gen.figures_page(), "run python scripts/gen_docs.py"
    bench = (REPO / "BENCHMARKS.md").read_text()
    assert bench == gen.benchmarks_md(bench), (
        "BENCHMARKS.md's current figures are stale: run python scripts/gen_docs.py"
    )
    head = bench.split("## Appendix", 1)[0]
    assert "## Current figures" in head and head.count("\n| ") >= 15, "BENCHMARKS.md must open with the figures table"


def test_every_figure_names_command_device_revision_and_date(gen):
    import figures  # benchmarks/, put on sys.path by gen_docs

    rows = figures.figures()
    assert len(rows) >= 15
    for f in rows:
        assert f.value and f.command and f.device and f.revision and f.date, f
        assert (REPO / f.data.replace("{1,2,4}", "1").replace("{2,4}", "2")).exists(), f.data


def test_settings_page_equals_the_settings_module(gen):
    page = REPO / "docs" / "guide" / "settings.md"
    assert page.read_text() == gen.settings_page(page.read_text()), "run python scripts/gen_docs.py"


def test_troubleshooting_page_holds_the_real_messages(gen):
    """Every case exits 2 with one line (a compile error adds its log), and the page is what the CLI
    prints now: each command in a process of its own, forked from a preloaded interpreter
    (tests/cliproc.py)."""

    def cli(argv, cwd, env, check=False):
        return cliproc.run(argv, cwd=cwd, env=env, timeout=600, check=check)

    results = gen.collect(cli)
    for case, rc, text in results:
        assert rc == 2, (case.title, rc, text)
        assert "Traceback" not in text and text.strip(), (case.title, text)
        if "does not compile" not in case.title:
            assert len(text.strip().splitlines()) == 1, (case.title, text)
    assert (REPO / "docs" / "troubleshooting.md").read_text() == gen.troubleshooting_page(results), (
        "docs/troubleshooting.md is stale: run python scripts/gen_docs.py"
    )


def test_verdicts_page_calibration_table_equals_the_data(gen):
    page = REPO / "docs" / "guide" / "verdicts.md"
    assert page.read_text() == gen.verdicts_page(page.read_text()), "run python scripts/gen_docs.py"
    assert "| Intel" in page.read_text() or "(host) |" in page.read_text()  # the host's recorded calibration
