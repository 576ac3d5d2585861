"""Two answers per compared row (issue #37): the measured change with its interval, named
(faster/slower) whenever the interval excludes no change, and the verdict against the threshold.

Why synthetic samples: the question is what the rows and sentences say about a change of known
size (+1.2%, measured to about ±0.1%), which a host kernel cannot be made to produce on demand; the
samples are generated with a fixed seed in the layout an interleaved sweep writes (kernels A and B
alternating chunk by chunk, chunk ids numbered through, in units with their own offsets), and go
through the real ``compare``, the CLI's table, the review table/summary and the headline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hipexplore.cli.compare_cmd import table
from hipexplore.report import headline as hl
from hipexplore.report.review import verdict_counts, verdict_table
from hipexplore.verdicts import VERDICTS, change_text, compare


def interleaved_frame(
    shift: float,
    size: int = 1 << 20,
    units: int = 4,
    per_unit: int = 120,
    chunk: int = 6,
    noise: float = 0.002,
    unit_sd: float = 0.01,
    seed: int = 1,
) -> pd.DataFrame:
    """Kernels A and B of one interleaved run; B takes (1 + shift) times A's time in every unit."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        offset = rng.normal(0, unit_sd)  # the unit's placement / process: shared by A and B
        for c in range(per_unit // chunk):
            for k, (name, sh) in enumerate((("A", 0.0), ("B", shift))):
                for _ in range(chunk):
                    rows.append(
                        {
                            "kernel": name,
                            "size_bytes": size,
                            "rotating_requested": "1",
                            "flush": "none",
                            "timer": "events",
                            "device_name": "dev",
                            "time_s": 10e-6 * (1 + sh) * (1 + offset) * (1 + rng.normal(0, noise)),
                            "chunk": u * 10000 + 2 * c + k,
                            "pass_index": u,
                            "dropped": False,
                        }
                    )
    return pd.DataFrame(rows)


def pct(x: float, signed: bool = True) -> str:
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def test_a_resolved_change_below_the_threshold_is_named_not_hidden_by_same():
    c = compare(interleaved_frame(0.012), base="A", new="B")
    r = c.iloc[0].to_dict()
    assert r["verdict"] == "same" and r["change_called"] == "slower"
    assert 1.0 < r["ratio_ci_low"] < 1.012 < r["ratio_ci_high"] < 1.02, r
    want = (
        f"slower by {pct(r['change'], False)} [{pct(r['ratio_ci_low'] - 1)}, {pct(r['ratio_ci_high'] - 1)}] "
        f"— below the 2% threshold"
    )
    assert want.startswith("slower by 1.2% [+1.")
    assert change_text(r, 0.02) == want
    # the CLI's table: the verdict column keeps `same`, the change beside it is named
    line = table(c).splitlines()[-1]
    assert " same " in line and line.endswith(want), line
    # the review: its table and its summary count both answers
    assert verdict_table(c)["measured change"].iloc[0] == want
    assert verdict_counts(c) == (
        "1 configuration(s) compared: 1 same; a change measured (interval excluding no "
        "change) in 1 (slower in 1), past the threshold in 0"
    )
    text = " ".join(hl.verdict_sentences(c, "A", "B"))
    assert (
        "same in 1 of 1 configuration(s); a change measured (interval excluding no change) in 1 (slower in 1)" in text
    )
    assert f"Measured: 1 MiB, 1 rotating set, no flush: {want}." in text


def test_identical_code_reads_no_measurable_change_and_a_faster_change_is_named_faster():
    same = compare(interleaved_frame(0.0, seed=2), base="A", new="B").iloc[0].to_dict()
    assert same["verdict"] == "same" and same["change_called"] == "none"
    assert same["ratio_ci_low"] < 1 < same["ratio_ci_high"]
    assert change_text(same).startswith("no measurable change: ") and change_text(same).endswith("— within ±2%")
    fast = compare(interleaved_frame(-0.012, seed=3), base="A", new="B").iloc[0].to_dict()
    assert fast["verdict"] == "same" and fast["change_called"] == "faster"
    assert change_text(fast).startswith(f"faster by 1.2% [{pct(fast['ratio_ci_low'] - 1)}, ")
    assert change_text(fast).endswith("— below the 2% threshold")


def test_the_summary_counts_changes_measured_and_changes_past_the_threshold():
    frame = pd.concat(
        [
            interleaved_frame(0.012, size=1 << 20),
            interleaved_frame(0.05, size=16 << 20, seed=4),
            interleaved_frame(0.0, size=256 << 20, seed=5),
        ],
        ignore_index=True,
    )
    c = compare(frame, base="A", new="B")
    assert list(c["verdict"]) == ["same", "slower", "same"] and list(c["change_called"]) == ["slower", "slower", "none"]
    assert set(c["verdict"]) <= set(VERDICTS)  # verdict values unchanged for existing readers
    assert verdict_counts(c) == (
        "3 configuration(s) compared: 1 slower, 2 same; a change measured (interval "
        "excluding no change) in 2 (slower in 2), past the threshold in 1"
    )
    text = " ".join(hl.verdict_sentences(c, "A", "B"))
    assert "16 MiB: slower by 5.0% [" in text and "— past the 2% threshold" in text
    assert "1 MiB: slower by 1.2% [" in text and "256 MiB: no measurable change" in text


@pytest.mark.parametrize("shift", [0.012, 0.05])
def test_one_sided_rows_carry_no_change_called(shift):
    a = interleaved_frame(shift)
    b = a[a["kernel"] == "A"].assign(size_bytes=2 << 20)  # a configuration the other run lacks
    c = compare(a[a["kernel"] == "A"], pd.concat([a[a["kernel"] == "B"].assign(kernel="A"), b]))
    assert set(c["present"]) == {"both", "new only"}
    assert c.set_index("present").loc["new only", "change_called"] == ""


def test_the_cache_sentence_names_a_resolved_saving_below_the_threshold():
    """A replay whose cached pass is 1% faster in each of 5 alternated passes: `same` at ±2%, and
    the sentence says the time changed measurably instead of 'neither saves nor costs'."""
    from types import SimpleNamespace

    totals = {"off": [10.0, 10.01, 9.99, 10.0, 10.005], "memory": [9.9, 9.91, 9.89, 9.9, 9.905]}
    frame = pd.DataFrame(
        [
            {"scenario": s, "round": r, "seq": i, "lookup_seconds": t / 4}
            for s, per in totals.items()
            for r, t in enumerate(per)
            for i in range(4)
        ]
    )
    events = pd.DataFrame({"outcome": ["miss"] * 4 + ["memory-hit"] * 16})
    replay = SimpleNamespace(frame=frame, primary="memory", events=events, list_name="a list")
    text = " ".join(hl.cache_sentences(replay))
    assert "verdict: same (within ±2%), but the time measurably changed: faster by 1.0% [" in text, text
    assert "— below the 2% threshold." in text and "neither saves nor costs" not in text
    same = SimpleNamespace(
        frame=frame.assign(
            lookup_seconds=lambda f: np.where(
                f["scenario"] == "memory", f["lookup_seconds"] * 10.0 / 9.9, f["lookup_seconds"]
            )
        ),
        primary="memory",
        events=events,
        list_name="a list",
    )  # the cached pass as slow as the cache off, pass by pass
    assert "the cache neither saves nor costs time here" in " ".join(hl.cache_sentences(same))
