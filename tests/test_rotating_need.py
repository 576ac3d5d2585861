"""hipexplore.rotating_need: how many rotating buffers a kernel needs, from the H200's recorded counter
pass beside its timing (data/counters/h200/summary.json) and from a real host sweep (no counters)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import hipexplore as hx  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402
from hipexplore.rotating_need import plot_rotating_need, rotating_need  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "data" / "counters" / "h200" / "summary.json"


def recorded(group: str) -> pd.DataFrame:
    rows = [r for r in json.loads(RECORDED.read_text())["rows"] if r["group"] == group]
    assert rows, group
    return pd.DataFrame(
        [
            {
                **{
                    k: r[k]
                    for k in (
                        "kernel",
                        "size_bytes",
                        "rotating",
                        "rotating_requested",
                        "flush",
                        "cold_fraction",
                        "cache_state",
                    )
                },
                "median_s": r["median_us"] * 1e-6,
                "ci_low_s": r["ci_us"][0] * 1e-6,
                "ci_high_s": r["ci_us"][1] * 1e-6,
            }
            for r in rows
        ]
    )


def test_a_stencil_cold_from_five_sets_is_called_so_with_the_numbers():
    need = rotating_need(recorded("stencil2d-1MiB"))
    assert (need.counted, need.knee, need.auto) == (True, 5, 60)
    assert need.fixed["state"] == "cold" and need.fixed["cold_fraction"] == pytest.approx(1.003, abs=1e-3)
    text = " ".join(need.sentences())
    assert "from 5 rotating set(s) on" in text and "'auto' chose 60 sets, cold (1.00)" in text


def test_a_triad_that_no_swept_count_made_cold_is_said_so_not_given_a_knee():
    need = rotating_need(recorded("triad-1MiB"))
    assert need.counted and need.knee is None and need.auto == 40
    assert need.fixed["state"] == "partial" and need.fixed["cold_fraction"] == pytest.approx(0.388, abs=1e-3)
    text = " ".join(need.sentences())
    assert "no rotating count swept made the inputs cold: the most sets (40) read a cold fraction of 0.73" in text
    assert "5 sets (a fixed default such as rocMLIR PR 2188's): cold fraction 0.39, partial" in text
    fig = plot_rotating_need(recorded("triad-1MiB"))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "auto = 40" in labels and "fixed 5" in labels and not any(lbl.startswith("cold from") for lbl in labels)
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "cold fraction (counted)"


def test_a_host_sweep_has_no_counters_and_the_figure_says_why(tmp_path):
    res = hx.sweep(
        "triad",
        ["64KiB"],
        [1, 2, 5],
        ["none"],
        device="host",
        iterations=10,
        reference=False,
        units=1,
        warmup_s=0.0,
        progress=False,
        counters=True,
    )
    why = res.metadata.get("counters.status", "")
    assert why.startswith("no counters")
    need = rotating_need(res.summary, why_uncounted=why)
    assert not need.counted and need.knee is None and need.fixed["sets"] == 5 and need.plateau in (None, 1, 2)
    assert need.sentences()[0].startswith("triad at 64 KiB per array: no counters (host: no hardware counters")
    # without counters the time answers: a plateau below the most sets, or "no plateau seen up to 5 sets"
    last = need.sentences()[-1]
    assert (
        last.startswith(f"The median time levels off from {need.plateau} set")
        if need.plateau
        else last.startswith("No plateau seen up to 5 sets")
    ), last
    fig = plot_rotating_need(res.summary, why_uncounted=why)
    assert len(fig.axes) == 1 and any("no counters" in t.get_text() for t in fig.axes[0].texts)


def test_a_frame_without_the_kernel_or_the_rows_is_one_line():
    frame = recorded("triad-1MiB")
    with pytest.raises(
        ConfigError, match=r"no summary rows of kernel 'gemm' at size None; the summary has \[\('triad', 1048576\)\]"
    ):
        rotating_need(frame, kernel="gemm")
    with pytest.raises(ConfigError, match="has no flush 'none' rows"):
        rotating_need(frame.assign(flush="l2-write"))
    with pytest.raises(ConfigError, match="no 'median_s' column"):
        rotating_need(frame.drop(columns=["median_s"]))


def test_the_time_plateau_is_relative_to_the_most_sets_time():
    # microsecond times: the plateau is the fewest sets within PLATEAU_REL (3%) *of* the most sets'
    # median, not within 0.03 s of it (which every microsecond row would be)
    from hipexplore.rotating_need import PLATEAU_REL

    us = [0.50, 0.70, 0.95, 0.99, 1.00]
    frame = pd.DataFrame(
        {
            "kernel": "k",
            "size_bytes": 1 << 20,
            "rotating": [1, 2, 5, 10, 20],
            "rotating_requested": ["1", "2", "5", "10", "20"],
            "flush": "none",
            "median_s": [u * 1e-6 for u in us],
        }
    )
    need = rotating_need(frame)
    assert PLATEAU_REL == 0.03 and need.plateau == 10  # 0.95 us is 5% from 1.00 us: outside; 0.99 us inside
    assert (
        need.knee is None
        and need.auto is None
        and need.fixed["sets"] == 5
        and need.fixed["median_s"] == pytest.approx(0.95e-6)
    )


def issue_frame(medians_us, counts=(1, 2, 4, 22), auto=True) -> pd.DataFrame:
    """The issue 49 host run at 1 MiB: rotating 1, 2, 4 and 'auto' (22 sets on its 32 MiB L3)."""
    return pd.DataFrame(
        {
            "kernel": "triad",
            "size_bytes": 1 << 20,
            "rotating": list(counts),
            "rotating_requested": [*map(str, counts[:-1]), "auto" if auto else str(counts[-1])],
            "flush": "none",
            "median_s": [u * 1e-6 for u in medians_us],
        }
    )


def test_a_time_still_rising_at_the_most_sets_is_no_plateau_and_says_what_would_show_one():
    """Issue 49: at 1 MiB on the host the median rose 41 -> 108 us up to 22 sets (the largest count,
    'auto'), and the answer was "plateau (within 3% of the most sets') at 22 set(s)"."""
    need = rotating_need(issue_frame([41, 58, 76, 108]))
    assert need.plateau is None and need.auto == 22
    text = " ".join(need.sentences())
    assert "plateau (within" not in text and "at 22 set(s)" not in text
    assert (
        "No plateau seen up to 22 sets: the median went from 41 us (1 set) to 108 us (22 sets), and no smaller count "
        "is within 3% of the most sets'; sweeping more than 22 sets, e.g. --rotating 22,44,88, would show whether it "
        "levels off."
    ) in text
    # without 'auto' in the sweep, 'auto' is what to add first
    assert "sweeping 'auto' and more than 22 sets" in " ".join(
        rotating_need(issue_frame([41, 58, 76, 108], auto=False)).sentences()
    )
    # a point near the last one by chance, before a rise, is no plateau either: every larger count must stay on it
    assert rotating_need(issue_frame([107, 58, 76, 108])).plateau is None
    # two counts on the plateau: it is seen, from the first of them
    assert rotating_need(issue_frame([41, 58, 106, 108])).plateau == 4


def test_where_counters_exist_the_cold_fraction_answers_not_the_time():
    frame = recorded("stencil2d-1MiB")
    text = " ".join(rotating_need(frame).sentences())
    assert "from 5 rotating set(s) on" in text and "plateau" not in text and "levels off" not in text
    # no count made the inputs cold: the counters still answer, and say which sweep would show the knee
    triad = " ".join(rotating_need(recorded("triad-1MiB")).sentences())
    assert "no rotating count swept made the inputs cold" in triad and "plateau" not in triad
    assert "Sweeping more than 40 sets, e.g. --rotating 40,80,160, would show where the inputs turn cold." in triad
