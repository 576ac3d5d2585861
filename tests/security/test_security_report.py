"""Exported reports against hostile run files, parameters files against alias bombs (security
issue, items 4 and 6).

Script in an exported report: a report is made from other people's run files and opened in a
reviewer's browser. The attack is mounted on real files: two tiny host sweeps are recorded with
``hipexplore bench``, then edited the way an attacker would (the kernel name in the frames and the
metadata keys, the recorded command, a metadata value and a metadata key, the code's origin and
source text, the summary's warning, the device name) and saved under file names holding a backtick
and ``<``. ``hipexplore report`` exports the dashboard (``data:`` the hostile run) and the A/B
review (``--baseline``/``--candidate`` the two hostile files: their names go into the review's
first paragraph, where a backtick used to end a Markdown code span). Debian's chromium opens each
page; every payload tries to run (an ``alert``, ``console.log``, ``document.title``, an attribute
on ``<html>``) and none may: no dialog, no marker, no injected element, every payload on the page
as plain text, the Content-Security-Policy in place and nothing of the report's own blocked by it.
A control page holding the same payloads raw proves each one fires when it is not escaped.

Alias bomb (item 6): nine YAML anchors, each a list of nine aliases of the one before, under
``sizes:`` (under 450 bytes, 9^9 items expanded) in ``report --params``: refused in one line naming
the file, exit status 2, at once; so are merge keys, absurd nesting and oversized files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipexplore.bench.io import output_paths, read_results
from hipexplore.cli import main
from hipexplore.report import notebooks
from hipexplore.schema import SAMPLES, SUMMARY, write_parquet

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "test-results"
MARK = "HXPWN"


def payload(tag: str, kind: str = "img") -> str:
    """HTML that, rendered, leaves four traces of ``tag``: an alert, a console line, the page title
    and an attribute on <html>. No ``/`` outside the script kind: it goes into file names."""
    js = (
        f"alert('{MARK}-{tag}');console.log('{MARK}-{tag}');document.title='{MARK}-{tag}';"
        f"document.documentElement.setAttribute('data-hxpwn-{tag}','1')"
    )
    if kind == "script":
        return f"<script>{js}</script>"
    if kind == "attr":  # closes a quoted attribute first, in case the string lands inside one
        return f'"\'><svg onload="{js}">'
    return f'<img src=x onerror="{js}">'


KERNEL = "triad`" + payload("kernel")
PAYLOADS = {
    "kernel": KERNEL,
    "command": "hipexplore bench triad " + payload("command", "script"),
    "metadata": "a note " + payload("metadata", "attr"),
    "key": "note" + payload("key"),
    "origin": "/src/k.c" + payload("origin"),
    "source": "__global__ void k() {} </td></tr></table></div>" + payload("source"),
    "warning": "noisy " + payload("warning"),
    "device": "AMD EPYC" + payload("device"),
    "filea": "base`" + payload("filea"),
    "fileb": "new`" + payload("fileb"),
}
#: what each report shows of the payloads (the review leaves out the summary's warning column)
DASHBOARD_TAGS = {"kernel", "command", "metadata", "key", "origin", "source", "warning", "device", "filea"}
REVIEW_TAGS = {"kernel", "command", "metadata", "key", "origin", "source", "device", "filea", "fileb"}


def make_hostile(run: Path, name: str) -> Path:
    """``run`` (a sweep's three files) rewritten as an attacker would, saved as ``name``.parquet."""
    samples, summary, meta = read_results(output_paths(run))
    meta = dict(meta)
    for key in [k for k in meta if ".triad." in k or k.endswith(".triad")]:
        meta[key.replace("triad", KERNEL)] = meta.pop(key)
    meta.update(
        {
            "sweep.kernels": KERNEL,
            "command": PAYLOADS["command"],
            "device.name": PAYLOADS["device"],
            "note": PAYLOADS["metadata"],
            PAYLOADS["key"]: "value",
            f"code.{KERNEL}.origin": PAYLOADS["origin"],
            f"code.{KERNEL}.source": PAYLOADS["source"],
        }
    )
    for frame in (samples, summary):
        frame["kernel"] = KERNEL
        frame["device_name"] = PAYLOADS["device"]
    summary["warning"] = PAYLOADS["warning"]
    dest = run.with_name(name + ".parquet")
    paths = output_paths(dest)
    write_parquet(samples, paths[0], SAMPLES, meta)
    write_parquet(summary, paths[1], SUMMARY, meta)
    paths[2].write_text(json.dumps(meta, indent=1, sort_keys=True))
    return dest


@pytest.fixture(scope="module")
def hostile_reports(tmp_path_factory):
    """(dashboard HTML, review HTML) exported by the real CLI from two recorded, then edited, runs."""
    tmp = tmp_path_factory.mktemp("hostile")
    runs = []
    for name, tag in (("a", "filea"), ("b", "fileb")):
        out = tmp / f"{name}.parquet"
        assert (
            main(
                [
                    "bench",
                    "triad",
                    "--device",
                    "host",
                    "--size",
                    "64KiB",
                    "--rotating",
                    "1",
                    "--flush",
                    "none",
                    "--iterations",
                    "20",
                    "--units",
                    "1",
                    "--no-progress",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        runs.append(make_hostile(out, PAYLOADS[tag]))
    assert all("`" in r.name and "<" in r.name for r in runs)
    dash_params = tmp / "dash.json"
    dash_params.write_text(json.dumps({"data": str(runs[0]), "problems": 1, "candidates": 3}))
    dash = tmp / "dashboard.html"
    assert main(["report", "--params", str(dash_params), "--out", str(dash), "--quiet"]) == 0
    review_params = tmp / "review.json"
    review_params.write_text(json.dumps({"problems": 1, "candidates": 3}))
    review = tmp / "review.html"
    assert (
        main(
            [
                "report",
                "--baseline",
                str(runs[0]),
                "--candidate",
                str(runs[1]),
                "--params",
                str(review_params),
                "--out",
                str(review),
                "--quiet",
            ]
        )
        == 0
    )
    return dash, review


def open_page(path: Path, shot: str | None = None) -> dict:
    """Open ``path`` in chromium and collect what scripts left behind: dialogs, console lines,
    page errors, the title, attributes on <html>, elements an injection would add, the text."""
    from playwright.sync_api import sync_playwright

    from browser.test_dashboard_in_lab import CHROMIUM, launch

    if not CHROMIUM.exists():
        from conftest import missing

        missing("tool chromium", f"{CHROMIUM} does not exist (setup.sh --dev installs Debian's chromium)")
    got: dict = {"dialogs": [], "console": [], "errors": []}
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1200})
            page.on("dialog", lambda d: (got["dialogs"].append(d.message), d.dismiss()))
            page.on("console", lambda m: got["console"].append(m.text))
            page.on("pageerror", lambda e: got["errors"].append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_timeout(800)  # an onerror fires after the failed load of src=x
            got.update(
                page.evaluate("""() => ({
                title: document.title,
                marks: [...document.documentElement.attributes].map(a => a.name).filter(n => n.startsWith('data-hxpwn')),
                injected: document.querySelectorAll('script, svg, iframe, [onerror], [onload], img:not([src^="data:"])').length,
                csp: [...document.querySelectorAll('meta[http-equiv="Content-Security-Policy"]')].map(m => m.content),
                text: document.body.innerText,
                images: [...document.images].map(e => e.naturalWidth)})""")
            )
            if shot:
                RESULTS.mkdir(exist_ok=True)
                page.screenshot(path=str(RESULTS / shot), full_page=False)
        finally:
            browser.close()
    return got


def ran(got: dict) -> list[str]:
    """Every trace of a payload that ran."""
    return (
        [f"dialog {d}" for d in got["dialogs"]]
        + [f"console {c}" for c in got["console"] if MARK in c]
        + ([f"title {got['title']}"] if MARK in got["title"] else [])
        + [f"attribute {m}" for m in got["marks"]]
    )


def test_the_payloads_run_when_written_into_a_page_raw(tmp_path):
    """The control: the detector sees every payload kind fire (a pass below is not a blind spot)."""
    page = tmp_path / "raw.html"
    page.write_text(
        "<!doctype html><html><head><title>raw</title></head><body>"
        + "".join(f"<div>{PAYLOADS[t]}</div>" for t in ("command", "metadata", "device"))
        + "</body></html>"
    )
    got = open_page(page)
    for tag in ("command", "metadata", "device"):
        assert f"dialog {MARK}-{tag}" in ran(got) and f"console {MARK}-{tag}" in ran(got), ran(got)
        assert f"data-hxpwn-{tag}" in got["marks"]
    assert got["injected"] >= 3


@pytest.mark.parametrize("which", ["dashboard", "review"])
def test_no_payload_from_a_run_file_runs_in_the_exported_report(hostile_reports, which):
    path = hostile_reports[0 if which == "dashboard" else 1]
    got = open_page(path, shot=f"security-report-{which}.png")
    assert ran(got) == [], f"injected script ran in the {which} report: {ran(got)}"
    assert got["errors"] == [], got["errors"]
    assert got["injected"] == 0, "an injected element reached the DOM"
    for tag in sorted(DASHBOARD_TAGS if which == "dashboard" else REVIEW_TAGS):
        assert PAYLOADS[tag] in got["text"], f"payload {tag!r} is not on the page as text (escaped)"
    # the policy: first in <head>, no script of any kind, and the report needs nothing it blocks
    assert got["csp"] == [notebooks.CSP], got["csp"]
    assert "default-src 'none'" in notebooks.CSP and "script-src" not in notebooks.CSP
    html = path.read_text()
    assert html.index("Content-Security-Policy") < html.index("<style") and "<script" not in html
    assert not [c for c in got["console"] if "Content Security Policy" in c], got["console"]
    assert got["images"] and all(w > 0 for w in got["images"]), got["images"]  # the figures still show


def bomb(path: Path, anchors: int = 9, width: int = 9) -> Path:
    """``anchors`` YAML anchors under ``sizes:``, each a list of ``width`` aliases of the one before:
    ``width ** anchors`` items once expanded."""
    names = "abcdefghi"[:anchors]
    lines = ["sizes:", "  - &a [" + ", ".join(['"1KiB"'] * width) + "]"]
    lines += [f"  - &{cur} [" + ", ".join([f"*{prev}"] * width) + "]" for prev, cur in zip(names, names[1:])]
    path.write_text("\n".join(lines) + "\n")
    return path


#: the issue's nine of nine (deeper than PARAMS_MAX_DEPTH too), and six of forty: 40**6 items within
#: the depth and size bounds, so that only the alias refusal stops it (without it, the depth and
#: value checks walk four billion items: a hang, ended by this test's bound)
BOMBS = {"nine-of-nine": (9, 9), "six-of-forty": (6, 40)}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("shape", sorted(BOMBS))
def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, capsys, shape):
    params = bomb(tmp_path / "bomb.yaml", *BOMBS[shape])
    assert params.stat().st_size < 1500
    if shape == "six-of-forty":
        assert notebooks.PARAMS_MAX_DEPTH >= 8 and params.stat().st_size < notebooks.PARAMS_MAX_BYTES
    start = time.process_time()  # in this process (no interpreter start-up): the refusal itself, in CPU time
    assert main(["report", "--params", str(params), "--out", str(tmp_path / "r.html"), "--quiet"]) == 2
    assert time.process_time() - start < 2.0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "YAML alias *a refused" in err and "line 3" in err and str(params) in err, err
    assert not (tmp_path / "r.html").exists()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "hipexplore",
            "report",
            "--params",
            str(params),
            "--out",
            str(tmp_path / "r.html"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=25,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(params) in lines[0] and "alias" in lines[0] and "line 3" in lines[0], res.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text, what",
    [
        ("base: &b {device: host}\n<<: *b\n", "YAML alias *b refused"),  # a merge key is an alias too
        ("sizes: " + "[" * 12 + "1" + "]" * 12 + "\n", "nests values more than"),
        ("sizes: [" + ", ".join(['"1KiB"'] * 20000) + "]\n", "a parameters file is at most"),
    ],
)
def test_other_oversized_parameters_files_are_refused(tmp_path, capsys, text, what):
    params = tmp_path / "p.yaml"
    params.write_text(text)
    assert main(["report", "--params", str(params), "--out", str(tmp_path / "r.html"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and what in err and str(params) in err, err


def test_anchors_without_aliases_still_load(tmp_path):
    """An anchor alone repeats nothing: such a file is read as before."""
    params = tmp_path / "p.yaml"
    params.write_text("sizes: &s [64KiB]\niterations: 12\n")
    assert notebooks.load_params(params) == {"sizes": ["64KiB"], "iterations": 12}
