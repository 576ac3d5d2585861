"""The review comment end to end (issue 46's done-when): ``hipexplore report --format markdown`` on an
A/B run whose kernels are named ``<img src=x onerror=alert(1)>`` and `` `|` ``, the comment rendered by
GitHub's own renderer (cmarkgfm, raw HTML let through: the worst case), the page loaded in Debian's
chromium (Playwright): every number of the HTML report's headline is in the comment's text, no
element came from a name, and the names read as text."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hipexplore.cli import main
from hipexplore.cli.report_markdown import COMMENT, FIGURES, HTML

pytestmark = pytest.mark.browser

EVIL, PIPE = "<img src=x onerror=alert(1)>", "`|`"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def hostile_run(path: Path) -> None:
    """An interleaved run of two kernels with hostile names: 2 sizes x 2 flush modes, 3 units."""
    rng = np.random.default_rng(3)
    rows = []
    for s, size in enumerate((64 << 10, 1 << 20)):
        for f, flush in enumerate(("none", "l2-write")):
            for u in range(3):
                for i in range(40):
                    c = u * 10_000 + (s * 10 + f) * 100 + i // 4
                    for k, (name, shift) in enumerate(((EVIL, 0.0), (PIPE, 0.08 if size == 1 << 20 else 0.0))):
                        rows.append(
                            {
                                "kernel": name,
                                "size_bytes": size,
                                "rotating_requested": "1",
                                "flush": flush,
                                "timer": "events",
                                "device_name": "test device",
                                "pass_index": u,
                                "dropped": False,
                                "chunk": 2 * c + k,
                                "time_s": 2e-5 * (1 + shift) * (1 + rng.normal(0, 0.003)),
                            }
                        )
    pd.DataFrame(rows).to_parquet(path)


@pytest.mark.timeout(900)
def test_the_comment_renders_every_headline_number_and_no_injected_element(tmp_path):
    from playwright.sync_api import sync_playwright

    from .test_dashboard_in_lab import CHROMIUM, launch

    from conftest import need_module

    cmarkgfm = need_module("cmarkgfm")
    from cmarkgfm.cmark import Options

    if not CHROMIUM.exists():
        from conftest import missing

        missing("tool chromium", f"{CHROMIUM} does not exist (setup.sh --dev installs Debian's chromium)")
    run = tmp_path / "ab.parquet"
    hostile_run(run)
    out = tmp_path / "review"
    assert (
        main(
            [
                "report",
                "--format",
                "markdown",
                "--run",
                str(run),
                "--baseline",
                EVIL,
                "--candidate",
                PIPE,
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    text = (out / COMMENT).read_text()
    assert len(text) <= 65_536 and {p.name for p in out.iterdir()} == {COMMENT, HTML, *(name for _, name in FIGURES)}
    page = tmp_path / "comment.html"
    page.write_text(
        "<!doctype html><meta charset=utf-8><body>"
        + cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
        + "</body>"
    )
    (tmp_path / "verdicts.png").write_bytes((out / "verdicts.png").read_bytes())
    (tmp_path / "noise.png").write_bytes((out / "noise.png").read_bytes())
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            tab = browser.new_page()
            dialogs: list[str] = []
            tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            tab.goto((out / "report.html").as_uri(), wait_until="load")
            headline = tab.inner_text(".hx-headline")
            tab.goto(page.as_uri(), wait_until="load")
            shown = tab.inner_text("body")
            injected = tab.evaluate("""() => [...document.querySelectorAll('*')].filter(e =>
                [...e.attributes].some(a => a.name.startsWith('on')) || ['SCRIPT', 'IFRAME', 'OBJECT'].includes(e.tagName)
                || (e.tagName === 'IMG' && !['verdicts.png', 'noise.png'].includes(e.getAttribute('src')))).length""")
            images = tab.evaluate("() => [...document.images].map(i => [i.getAttribute('src'), i.naturalWidth > 0])")
            cells = tab.evaluate("() => [...document.querySelectorAll('table')][0].rows[2].cells.length")
        finally:
            browser.close()
    assert injected == 0 and not dialogs
    assert sorted(images) == [["noise.png", True], ["verdicts.png", True]]
    assert cells == 6  # a name with a pipe does not split its row
    numbers = NUMBER.findall(headline.replace("In short", ""))
    assert len(numbers) > 10
    missing_numbers = [n for n in numbers if n not in shown]
    assert not missing_numbers, (missing_numbers, headline)
    assert EVIL in shown and PIPE in shown and "slower" in shown
