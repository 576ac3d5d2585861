"""The A/B review report: ``hipexplore report --run RUN --baseline A --candidate B`` on a real
interleaved host sweep, exported to HTML and opened in Debian's chromium at 1280 px (Playwright):
no horizontal scrolling, the host banner, the verdict table, the forest plot, both provenances."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipexplore.bench import sweep
from hipexplore.cli import main
from hipexplore.kernels import catalog, user_kernel

from test_verdicts import ARGS, WORK_C

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
RESULTS = ROOT / "test-results"


@pytest.fixture(scope="module")
def review_html(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("review")
    src = tmp / "work.c"
    src.write_text(WORK_C)
    for name, reps in (("rv1", 1), ("rv4", 4)):
        user_kernel(src, "hx_work", ARGS.format(reps=reps), name=name)
    try:
        run = tmp / "ab.parquet"
        # the report runs in its own kernel, which knows no user kernels: it reads the recorded samples
        sweep(
            ["rv1", "rv4"],
            ["64KiB", "256KiB"],
            [1],
            ["none"],
            device="host",
            iterations=48,
            interleave=True,
            progress=False,
            reference=False,
            out=run,
        )
    finally:
        for name in ("rv1", "rv4"):
            catalog.unregister(name)
    params = tmp / "p.json"
    params.write_text('{"tuning_data": "live", "problems": 1, "candidates": 3}')
    out = tmp / "review.html"
    assert (
        main(
            [
                "report",
                "--run",
                str(run),
                "--baseline",
                "rv1",
                "--candidate",
                "rv4",
                "--params",
                str(params),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out.read_text()


def test_review_report_holds_verdicts_banner_and_both_provenances(review_html) -> None:
    html = review_html
    assert "host CPU — not a GPU measurement" in html
    assert "Decision rule" in html and "wholly" in html
    assert "baseline: rv1" in html and "candidate: rv4" in html
    assert "code under review: rv1 sha256" in html and "code under review: rv4 sha256" in html
    assert "slower" in html and "64 KiB r=1 none" in html
    assert "change [95%]" in html
    # the replay asked for by the parameters file, named for what it is: a tuning list, not rv1/rv4
    assert "These figures are about the compile cache on the built-in split-K list with host/host" in html
    assert "cache off (s)" in html
    assert html.count("data:image/png;base64") >= 3  # forest, noise, compile time | cache hits


def test_review_report_opens_with_the_verdict_and_its_noise(review_html) -> None:
    """Headline first (after the device banner): the verdict with its changes and the smallest change
    the noise lets the rule call; the compile section says it is about a tuning list, not rv1/rv4."""
    html = review_html
    at = html.index('class="hx-headline"')
    assert html.index("hx-banner") < at < min(html.index("<table"), html.index("<img"))
    box = html[at : html.index("</div>", at)]
    # both answers (issue 37): the verdict against the threshold, and the measured change with its interval
    assert "Verdict (rv4 against rv1, rule ±2%): slower in 2 of 2 configuration(s); a change measured" in box
    assert "past the threshold in 2. Measured: 64 KiB: slower by" in box
    assert "cannot be called past the ±2% threshold at these settings" in box and "Compile cache: replaying" in box
    assert "not about the code under review (rv1, rv4)" in html


def test_review_report_cli_errors(tmp_path, capsys) -> None:
    assert main(["report", "--baseline", "a.parquet", "--out", str(tmp_path / "r.html")]) == 2
    assert "needs both --baseline and --candidate" in capsys.readouterr().err
    assert main(["report", "--run", "a.parquet", "--baseline", "x", "--out", str(tmp_path / "r.html")]) == 2
    assert "--run needs --baseline KERNEL and --candidate KERNEL" in capsys.readouterr().err
    assert main(["report", "--threshold", "0.05", "--out", str(tmp_path / "r.html")]) == 2
    assert "--threshold belongs to an A/B review" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.browser
def test_review_report_renders_in_chromium_without_horizontal_scrolling(review_html, tmp_path) -> None:
    if not CHROMIUM.exists():
        from conftest import missing

        missing("tool chromium", f"{CHROMIUM} does not exist (setup.sh --dev installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "review.html"
    page_file.write_text(review_html)
    RESULTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_file.as_uri(), wait_until="load")
            widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert widths[0] <= widths[1], f"horizontal scrolling at 1280 px: content {widths[0]} px wide"
            banner = page.locator(".hx-banner").first
            assert "not a GPU measurement" in banner.inner_text()
            assert banner.bounding_box()["y"] < 900  # on the first screen
            images = page.locator("img")
            assert images.count() >= 3
            for i in range(images.count()):
                assert page.evaluate(
                    "(img) => img.naturalWidth > 0 && img.getBoundingClientRect().right <= 1280",
                    images.nth(i).element_handle(),
                )
            text = page.inner_text("body")
            assert "baseline: rv1" in text and "candidate: rv4" in text and "Provenance, both sides" in text
            page.screenshot(path=str(RESULTS / "browser-review.png"), full_page=True)
        finally:
            browser.close()


@pytest.fixture(scope="module")
def interleaved_run(tmp_path_factory):
    """Two catalog kernels in one small interleaved host sweep, recorded by the CLI."""
    run = tmp_path_factory.mktemp("none") / "ct.parquet"
    assert (
        main(
            [
                "bench",
                "copy,triad",
                "--device",
                "host",
                "--size",
                "64KiB",
                "--rotating",
                "1",
                "--flush",
                "none",
                "--iterations",
                "16",
                "--units",
                "1",
                "--interleave",
                "--no-progress",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    return run


@pytest.mark.parametrize("spelling", ["none", "null", "~", None])
def test_tuning_data_none_in_a_parameters_file_means_no_replay(interleaved_run, tmp_path, capsys, spelling) -> None:
    """``tuning_data: none`` (YAML's null and ~ too) is "no tuning data", not a file named none
    beside the parameters file: the review is written without its compile-cache part, and says why
    in one sentence. None: no parameters file, the default (a replay of a GEMM list is no evidence
    about the code under review); that run also shows the progress line names the review notebook."""
    params = tmp_path / "p.yaml"
    params.write_text(f"tuning_data: {spelling}\n")
    out = tmp_path / "r.html"
    argv = ["report", "--run", str(interleaved_run), "--baseline", "copy", "--candidate", "triad", "--out", str(out)]
    assert main(argv + (["--params", str(params), "--quiet"] if spelling else [])) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    if spelling is None:  # `report --run` announced "running the dashboard notebook" while it ran the review
        assert (
            f"running the A/B review notebook (verdicts of a candidate against a baseline): kernels copy and "
            f"triad of {interleaved_run}"
            in err
            and "dashboard" not in err
        )
    html = out.read_text()
    assert "No compile-time section: the runs record no compile events of the code under review (copy, triad)" in html
    assert "cache off (s)" not in html and "Compile cache: replaying" not in html
    assert html.count('src="data:image/png;base64') == 2  # forest and noise; no compile-time | cache-hits figure


def test_tuning_data_none_is_refused_by_the_dashboard_in_one_line(tmp_path, capsys) -> None:
    params = tmp_path / "p.json"
    params.write_text('{"tuning_data": null}')
    assert main(["report", "--params", str(params), "--out", str(tmp_path / "r.html"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tuning_data: 'none'" in err and "A/B review" in err, err
    assert not (tmp_path / "r.html").exists()
