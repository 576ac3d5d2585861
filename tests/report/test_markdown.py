"""hipexplore.report.markdown: the review comment, rendered by GitHub's own Markdown renderer
(cmarkgfm, GitHub's fork of cmark, with its GFM extensions and raw HTML let through: the worst
case; GitHub sanitises on top). Hostile names render as text, never as a tag, a code span or a
table break; 500 configurations stay within 65,536 characters, the rest said to be in the report."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from hipexplore.report.markdown import LIMIT, MARKER, comment, md

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "`|`",
    "a|b",
    "**bold** _i_ [l](javascript:alert(1))",
    "<script>alert(1)</script>",
    "- item",
    "# head",
    "www.example.com",
    "x@y.z",
    "&lt;escaped&gt;",
    "\\|",
    "1. one",
    "</details><b>",
    "~~s~~",
    "https://evil.example/x",
    "mailto:x@y.z",
    "<!-- c -->",
]


def render(text: str) -> str:
    from conftest import need_module

    cmarkgfm = need_module("cmarkgfm")
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    return t


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_renders_as_its_text(name):
    html = render(f"before {md(name)} after")
    t = parsed(html)
    assert [tag for tag, _ in t.tags] == ["p"], html  # no img, script, code, em, a, heading, list
    assert "".join(t.text).strip() == f"before {name} after"


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_in_a_table_cell_keeps_the_row_whole(name):
    html = render(f"| a | b |\n|---|---|\n| {md(name)} | 2 |\n")
    t = parsed(html)
    cells = [tag for tag, _ in t.tags if tag == "td"]
    assert len(cells) == 2 and not {tag for tag, _ in t.tags} - {"table", "thead", "tr", "th", "tbody", "td"}, html


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_as_a_bullet_stays_one_bullet_of_text(name):
    t = parsed(render(f"- {md(name)}\n"))
    assert [tag for tag, _ in t.tags] == ["ul", "li"] and "".join(t.text).strip() == name


def test_md_is_one_line_without_controls():
    assert "\n" not in md("a\nb\r\u2028c\x1b[31m")


def _frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        lo = 1 + rng.normal(0, 0.01) - 0.02
        rows.append(
            {
                "kernel": f"kernel_{i}_<b>|`",
                "size_bytes": 4096 * (i + 1),
                "rotating_requested": "1",
                "flush": "none",
                "timer": "events",
                "present": "both",
                "change": lo + 0.02 - 1,
                "ratio": lo + 0.02,
                "ratio_ci_low": lo,
                "ratio_ci_high": lo + 0.04,
                "min_detectable": 0.04,
                "verdict": "undecided",
                "change_called": "none",
                "base_iqr_rel": 0.01,
                "new_iqr_rel": 0.01,
                "note": "the noise allows no call at ±2%: " + "x" * 120,
            }
        )
    frame = pd.DataFrame(rows)
    frame.attrs.update(threshold=0.02, rule="the rule", caveat="a caveat", source_note="", hint="")
    return frame


class Data:
    def __init__(self, frame):
        self.verdicts = frame
        self.base_label, self.new_label = "base <i>.parquet", "new `|`.parquet"
        self.base_metadata = {"device.name": "dev <script>", "device.kind": "cuda", "command": "hipexplore bench x|y"}
        self.new_metadata = dict(self.base_metadata)
        self.base_kernels = self.new_kernels = None
        self.threshold = 0.02


def test_500_configurations_stay_within_the_limit_and_say_where_the_rest_is():
    text = comment(
        Data(_frame(500)),
        headline=["Verdict: undecided in 500 of 500."],
        compile_text="No compile section.",
        calibration="on this device identical code was called different in 0 of 16 rows",
        figures=[("verdicts", "verdicts.png")],
    )
    assert len(text) <= LIMIT and text.startswith(MARKER)
    kept = sum(1 for line in text.splitlines() if line.startswith("| kernel&#95;"))
    assert 50 < kept < 500
    assert f"_{500 - kept} more row(s) are in the full report (report.html)" in text
    html = render(text)
    t = parsed(html)
    assert (
        not [tag for tag, _ in t.tags if tag in ("script", "i")]
        and ("img", {"src": "verdicts.png", "alt": "verdicts"}) in t.tags
    )
    assert {tag for tag, _ in t.tags} >= {"details", "summary", "table", "h3"}
    assert text.count("<details>") == text.count("</details>") == 2


def test_a_small_comment_keeps_every_row():
    text = comment(Data(_frame(3)), headline=["h"])
    assert sum(1 for line in text.splitlines() if line.startswith("| kernel&#95;")) == 3 and "more row(s)" not in text
