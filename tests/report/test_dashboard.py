"""``hipexplore report``: the dashboard notebook run by papermill on the host, exported as one
self-contained HTML file holding the three side-by-side panels and the provenance table.

Small parameters keep each report to a few seconds of real sweeping and compiling.
"""

from __future__ import annotations

import base64
import re
import struct

import nbformat
import pandas as pd
import pytest

from hipexplore import report
from hipexplore.cli import main
from hipexplore.errors import ConfigError
from fixtures import shared_report
from frames import summary_rows

SMALL = shared_report.SMALL


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def dashboard_figure_output(nb) -> dict:
    """The output of the cell that draws the composite figure."""
    cells = [c for c in nb.cells if c.cell_type == "code" and "dashboard_figure" in c.source]
    assert len(cells) == 1
    outs = [o for o in cells[0].outputs if "image/png" in o.get("data", {})]
    assert len(outs) == 1, cells[0].outputs
    return outs[0]


@pytest.fixture(scope="module")
def cli_report(tmp_path_factory):
    """The README's main command, with small parameters from a YAML file (inputs hidden by
    default), in its own process: progress goes to stderr, stdout holds only the result line. One
    run per session, shared with the browser's layout test (fixtures/shared_report.py)."""
    run = shared_report.small_report(tmp_path_factory)
    out = run.out
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"wrote {out} (executed notebook: {out.with_suffix('.ipynb')})"
    assert "running the dashboard notebook" in run.stderr and "Executing" in run.stderr  # papermill's tqdm bar
    return out


def test_report_holds_the_three_panels_side_by_side(cli_report):
    html = cli_report.read_text()
    nb = nbformat.read(str(cli_report.with_suffix(".ipynb")), as_version=4)
    fig = dashboard_figure_output(nb)
    assert "3 Axes" in fig["data"]["text/plain"]  # noise | compile time saved | cache hits
    png_b64 = fig["data"]["image/png"].strip()
    assert png_b64 in html.replace("\n", ""), "the composite figure must be embedded in the HTML"
    w, h = png_size(base64.b64decode(png_b64))
    assert w > 3 * h * 0.9, f"panels must sit side by side; figure is {w}x{h}"
    assert "Noise | compile time saved | cache hits" in html


def test_report_has_provenance(cli_report):
    html = cli_report.read_text()
    for key in (
        "device.name",
        "device.kind",
        "device.driver",
        "device.runtime",
        "compiler.host",
        "hipexplore",
        "git_revision",
        "date",
        "command",
        "sweep.stop_rule",
    ):
        assert f">{key}<" in html, key
    assert "hipexplore report --params" in html and str(cli_report) in html  # the command line as typed
    assert "tuning replay host/host" in html  # the banner names the replay's compiler and target
    assert re.search(r">20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d", html)


def test_report_is_self_contained_and_hides_code(cli_report):
    html = cli_report.read_text()
    assert report.external_references(html) == []
    assert "cdnjs" not in html and "require.min.js" not in html
    assert 'src="data:image/png;base64,' in html
    assert "hl-ipython3" not in html and "benchmark_data" not in html  # no code cells


def test_report_with_code_cells_and_recorded_data(tmp_path):
    """--no-input off; figures from parquet recorded by the real sweep and tuning replay."""
    from hipexplore.bench import sweep

    bench = tmp_path / "bench"
    sweep(
        "triad",
        ["256KiB"],
        [1, 2],
        ["none", "l2-write"],
        device="host",
        iterations=10,
        progress=False,
        out=bench / "triad.parquet",
    )
    tuning = tmp_path / "tuning"
    tuning.mkdir()
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
                str(tuning / "replay.parquet"),
            ]
        )
        == 0
    )
    out = tmp_path / "r.html"
    res = report.build_report(
        {"data": str(bench), "tuning_data": str(tuning)}, out=out, command="pytest recorded"
    )  # no_input=False
    html = out.read_text()
    assert "hl-ipython3" in html and "benchmark_data" in html  # code shown
    assert report.external_references(html) == []
    assert res.notebook is None and sorted(p.name for p in tmp_path.iterdir()) == ["bench", "r.html", "tuning"]
    assert html.count('src="data:image/png;base64,') == 2  # the composite figure and the rotating buffers' one
    assert "recorded data" in html and str(bench) in html  # recorded provenance column
    assert "l2-write" in html


def test_a_failing_notebook_names_the_error_and_keeps_the_notebook(tmp_path):
    """A value refused by the parameters' check never starts the notebook (report.params); one only
    the notebook can refuse (a recorded-data folder that exists but holds no runs) fails in its cell,
    named, with the executed notebook kept."""
    with pytest.raises(ConfigError, match=r"parameter rotating: rotating must be a positive integer or 'auto', got 0"):
        report.build_report({**SMALL, "rotating": [0]}, out=tmp_path / "r.html")
    (tmp_path / "empty").mkdir()
    with pytest.raises(report.ReportError, match=r"failed in cell \d+: ConfigError: no \.parquet files under") as err:
        report.build_report({**SMALL, "data": str(tmp_path / "empty")}, out=tmp_path / "r.html")
    assert err.value.notebook and nbformat.read(err.value.notebook, as_version=4).cells
    assert not (tmp_path / "r.html").exists()


def test_parameters_files_and_names_are_checked(tmp_path):
    good = tmp_path / "p.json"
    good.write_text('{"device": "host", "iterations": 5}')
    assert report.load_params(good) == {"device": "host", "iterations": 5}
    (tmp_path / "p.yaml").write_text("sizes: [1MiB, 4MiB]\n")
    assert report.load_params(tmp_path / "p.yaml") == {"sizes": ["1MiB", "4MiB"]}
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        report.load_params(tmp_path / "list.yaml")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        report.load_params(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="cannot read parameters file"):
        report.load_params(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=r"unknown parameters \['colour'\]"):
        report.check_parameters("dashboard", {"colour": "red"})
    with pytest.raises(ConfigError, match=r"must be an \.html file"):
        report.build_report({}, out=tmp_path / "r.pdf")
    with pytest.raises(ConfigError, match="neither one of"):
        report.notebook_path("nonexistent")


def test_recorded_loader_sorts_frames_by_columns(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        report.load_recorded(tmp_path / "nothing")
    with pytest.raises(ConfigError, match=r"no \.parquet files"):
        report.load_recorded(tmp_path)
    import pandas as pd

    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "other.parquet")
    with pytest.raises(ConfigError, match="holds benchmark samples, summary or cache events"):
        report.load_recorded(tmp_path)


def test_of_several_sweeps_the_loader_shows_the_largest_one_whose_samples_are_there(tmp_path):
    """A folder with a small sweep (samples and summary) and a bigger summary alone (an analysis
    table): the bigger one cannot be plotted, so the small one is shown, and a note says so."""
    import hipexplore as hx

    dev = "host"
    small = hx.sweep(
        "triad",
        ["4KiB"],
        [1],
        ["none"],
        device=dev,
        iterations=8,
        reference=False,
        progress=False,
        warmup_s=0,
        out=tmp_path / "small.parquet",
    )
    big = hx.sweep(
        "triad",
        ["4KiB", "8KiB"],
        [1],
        ["none", "l2-read"],
        device=dev,
        iterations=8,
        reference=False,
        progress=False,
        warmup_s=0,
    )
    big.summary.to_parquet(tmp_path / "table.parquet")  # a summary frame, its samples not kept
    rec = report.load_recorded(tmp_path)
    assert set(rec.summary["run_id"]) == {small.metadata["run_id"]} and len(rec.samples) == 8
    assert any("the most with samples" in n for n in rec.notes)
    only = tmp_path / "only"
    only.mkdir()
    big.summary.to_parquet(only / "table.parquet")
    big.summary.assign(run_id="other").head(1).to_parquet(only / "one.parquet")
    assert set(report.load_recorded(only).summary["run_id"]) == {big.metadata["run_id"]}  # no samples: the most


def test_live_benchmark_raises_iterations_to_the_auto_set_count(monkeypatch):
    """On a large last-level cache 'auto' wants more sets than the notebook's iteration count: the
    report raises the count (and says so) instead of failing the main job."""
    # triad at 1 MiB per array touches 3 MiB per launch; an LLC of 10 MiB + 1 B needs 4 footprints
    # to cover it (3 x 3 MiB = 9 MiB falls short), so 'auto' = 2 x 4 = 8 sets
    monkeypatch.setenv("HIPEXPLORE_LLC_BYTES", str((10 << 20) + 1))
    want = 8
    bench = report.benchmark_data(device="host", sizes=("1MiB",), rotating=("auto",), flush=("none",), iterations=2)
    row = bench.summary[bench.summary["flush"] == "none"].iloc[0]
    assert int(row["footprint_bytes"]) == 3 << 20
    assert int(row["rotating"]) == want and int(row["n"]) == want
    assert f"iterations raised from 2 to {want}" in bench.provenance["report.iterations_note"]


def test_report_names_the_device_and_gives_medians_their_intervals(cli_report):
    html = cli_report.read_text()
    assert 'class="hx-banner"' in html and "host CPU — not a GPU measurement" in html
    assert html.index("hx-banner") < html.index("Noise | compile time saved")  # before the evidence
    assert "95% CI (" in html  # the summary table's medians carry their intervals
    nb = nbformat.read(str(cli_report.with_suffix(".ipynb")), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "dashboard_figure" in c.source)
    assert "ideal_s=" in cell.source  # the compile-time panel draws the ideal floor


def first_evidence(html: str) -> int:
    """Where the first table or figure of a report starts."""
    return min(i for i in (html.find("<table"), html.find("<img")) if i >= 0)


def test_report_opens_with_a_headline_of_noise_and_cache_saving(cli_report):
    """The first screen answers before the evidence, in plain words, and the details follow (issue 49):
    the answers right after the device banner, before the panels' introduction; no shorthand such as
    ``r=2``; the host's load beside the noise (the numbers: tests/report/test_answers.py, test_headline.py)."""
    html = cli_report.read_text()
    at = html.index('class="hx-headline"')
    assert html.index("hx-banner") < at < first_evidence(html)
    assert at < html.index("Three pieces of evidence side by side")  # the introduction comes after the answer
    box = html[at : html.index("</div>", at)]
    assert "Timing: single launches spread" in box and "so settings closer than" in box
    assert "Compile cache: " in box and "IQR/median" not in box
    details_at = html.index('class="hx-details"')
    assert at < details_at < first_evidence(html)
    details = html[details_at : html.index("</div>", details_at)]
    assert "Noise: the median run-to-run spread of single launches is" in details and "% (IQR/median" in details
    assert "cannot be resolved at these settings" in details
    assert "Compile cache: replaying the built-in split-K list" in details and "with the cache off" in details
    assert "Host load: other runnable tasks at each chunk" in details and "busy in " in details
    for text in (box, details):
        assert not re.search(r"\br=\d", text), text
    # the run's title is a paragraph of the page, not a printed line cut mid-word; printed lines wrap between words
    assert '<p class="hx-note">' in html and "word-break: normal" in html
    # the 'ideal' row is explained from the replay's figures, never called the floor no cache can beat
    assert "floor no cache can beat" not in html
    assert "is one cold compile per unique request, no cache, measured in a pass of its own" in html
    shown = re.sub(r'src="data:[^"]*"', "", html[at : html.index(">Provenance<")])  # the text, not the images
    assert not re.search(r"\d\.?\d*e[+-]\d", shown), re.findall(r".{40}\d\.?\d*e[+-]\d.{10}", shown)


def test_report_says_how_many_rotating_buffers_without_claiming_an_unseen_plateau(cli_report):
    """Issue 49: the answer at the most sets measured is "no plateau seen", never a plateau at the
    largest count; on the page as a paragraph (a printed line wrapped mid-word, "in|ferred")."""
    html = cli_report.read_text()
    need = re.search(r'<p class="hx-note">(triad at 256 KiB per array: no counters[^<]*)</p>', html)
    assert need, "the rotating-buffers answer is not a paragraph of the page"
    text = need.group(1)
    assert "the cache state is inferred from the time alone" in text
    assert "reaches its plateau" not in text and "at 2 set(s)" not in text
    assert ("The median time levels off from 1 set(s) on" in text) != ("No plateau seen up to 2 sets" in text), text


def test_every_table_the_notebooks_style_escapes_cells_labels_and_axis_names():
    """pandas' Styler writes strings into the page as they are (DataFrame.to_html escapes, a
    Styler does not): each Styler the notebooks show must escape what came from a run file."""
    from hipexplore.report import full_width, styled_summary
    from hipexplore.report.review import wrapped

    tag = "<img src=x onerror=alert(1)>"
    table = pd.DataFrame({f"col{tag}": [f"cell{tag}"]}, index=pd.Index([f"row{tag}"], name=f"name{tag}"))
    table.columns.name = f"cols{tag}"
    summary = pd.DataFrame({"flush": [f"none{tag}"], "median_us": [1.0], "warning": [f"noisy{tag}"]})
    for html in (full_width(table).to_html(), wrapped(table).to_html(), styled_summary(summary).to_html()):
        assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html, html


def test_summary_table_is_in_percent():
    from hipexplore.report import styled_summary, summary_table

    table = summary_table(
        summary_rows(sizes=(1 << 16,)).assign(bandwidth_gbs=1.0, n_outliers=0, warning="noisy: a long warning"),
        size_bytes=1 << 16,
    )
    assert {"iqr_rel_%", "cv_%", "bias_%"} <= set(table.columns) and "iqr_rel" not in table.columns
    assert table["cv_%"].iloc[0] == pytest.approx(2.0)
    html = styled_summary(table).to_html()
    assert "min-width: 16em" in html and "GB/s" in html
