"""hipexplore.cli.compare_table and ``compare --fail-on``: the table reads at 120 columns (issue 49.4:
rows were up to 584 columns, each note on its row's line), the cold reference is shown as a
reference, notes are numbered under the table, --json keeps everything; --fail-on exits 3 exactly
when a compared row has a named verdict, 2 for a bad input.

The frames are real ``verdicts.compare`` frames of samples built in units (a fake timer for
statistics: the verdict machinery itself runs)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hipexplore.cli import main
from hipexplore.cli.compare_table import REFERENCE, table
from hipexplore.verdicts import compare

SIZES = (64 << 10, 1 << 20, 16 << 20)
FLUSHES = ("none", "l2-write")


def interleaved(rng, shift_of, units=3, per_unit=48, chunk=4, noise=0.002) -> pd.DataFrame:
    """Two kernels A and B of one interleaved run: 3 sizes x 2 flush modes + the cold reference,
    B at A's time x (1 + shift_of(size, flush)); chunks of a unit shared by both kernels (interleaved)."""
    rows = []
    for size in SIZES:
        for flush in (*FLUSHES, "cold-reference"):
            for u in range(units):
                for i in range(per_unit):
                    c = (
                        u * 100_000
                        + (SIZES.index(size) * 10 + (FLUSHES + ("cold-reference",)).index(flush)) * 1000
                        + i // chunk
                    )
                    for k, sh in (("A", 0.0), ("B", shift_of(size, flush))):
                        rows.append(
                            {
                                "kernel": k,
                                "size_bytes": size,
                                "rotating_requested": "1",
                                "flush": flush,
                                "timer": "events",
                                "device_name": "dev",
                                "pass_index": u,
                                "dropped": False,
                                "chunk": 2 * c + (k == "B"),
                                "time_s": 1e-5 * (1 + size / (1 << 24)) * (1 + sh) * (1 + rng.normal(0, noise)),
                            }
                        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory):
    """Undecided rows with notes (noise of 8% at 3 units) and one clearly slower configuration."""
    rng = np.random.default_rng(5)
    frame = interleaved(rng, lambda size, flush: 0.3 if (size, flush) == (1 << 20, "none") else 0.0, noise=0.08)
    path = tmp_path_factory.mktemp("ab") / "ab.parquet"
    frame.to_parquet(path)
    return frame, path


@pytest.mark.timeout(180)
def test_widest_line_fits_120_columns_with_notes_under_the_table(noisy_run):
    frame, _ = noisy_run
    rows = compare(frame, base="A", new="B")
    text = table(rows)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 120, max(lines, key=len)
    assert len(rows) == 9  # 3 sizes x (2 flush modes + the cold reference)
    head = next(i for i, line in enumerate(lines) if line.startswith("kernel"))
    body = lines[head + 1 : head + 10]
    assert len(body) == 9 and all(line.startswith("A→B") for line in body)
    assert "notes (every row's full note and figures: --json):" in lines
    notes = lines[lines.index("notes (every row's full note and figures: --json):") + 1 :]
    assert notes and notes[0].lstrip().startswith("1  ")
    # every note a row points to is printed once under the table
    refs = {int(n) for line in body for n in line.split()[-1].split(",") if n.isdigit()}
    assert refs == {int(line.split()[0]) for line in notes if line[:3].strip().isdigit()}


@pytest.mark.timeout(180)
def test_the_cold_reference_is_a_reference_not_a_verdict(noisy_run):
    frame, _ = noisy_run
    text = table(compare(frame, base="A", new="B"))
    refs = [line for line in text.splitlines() if "cold-reference" in line and line.startswith("A→B")]
    assert len(refs) == 3
    for line in refs:
        assert f" {REFERENCE} " in line and "medians" in line
        assert not any(f" {v} " in line for v in ("faster", "slower", "same", "undecided"))


@pytest.mark.timeout(180)
def test_json_keeps_every_row_and_marks_the_reference(noisy_run, capsys):
    _, path = noisy_run
    assert main(["compare", str(path), "--base", "A", "--new", "B", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert len(got["rows"]) == 9
    refs = [r for r in got["rows"] if r["reference"]]
    assert {r["flush"] for r in refs} == {"cold-reference"} and all(r["verdict"] for r in refs)  # kept in --json
    assert all(r["note"] is not None for r in got["rows"])


@pytest.mark.timeout(240)
def test_fail_on_exits_3_exactly_when_a_row_has_the_verdict(noisy_run, capsys):
    frame, path = noisy_run
    verdicts = compare(frame, base="A", new="B")
    compared = verdicts[verdicts["flush"] != "cold-reference"]
    assert (compared["verdict"] == "slower").sum() == 1  # the +30% configuration
    for words, expect in (
        ("slower", 3),
        ("faster", 3 if (compared["verdict"] == "faster").any() else 0),
        ("undecided", 3 if (compared["verdict"] == "undecided").any() else 0),
        ("any", 3),
    ):
        rc = main(["compare", str(path), "--base", "A", "--new", "B", "--fail-on", words])
        err = capsys.readouterr().err
        assert rc == expect, (words, rc, err)
        named = [line for line in err.splitlines() if "--fail-on" in line]
        if rc == 3 and words == "slower":
            assert (
                len(named) == 1 and "size=1048576" in named[0] and "flush=none" in named[0] and "is slower" in named[0]
            )
    assert main(["compare", str(path), "--base", "A", "--new", "B"]) == 0  # no --fail-on: 0 whatever the verdicts


def test_fail_on_refuses_an_unknown_word_with_exit_2(noisy_run, capsys):
    _, path = noisy_run
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(path), "--base", "A", "--new", "B", "--fail-on", "slowr"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected one or more of slower, faster, undecided, any" in err[0]


@pytest.mark.timeout(180)
def test_same_rows_pass_fail_on_any(tmp_path, capsys):
    """Identical kernels at low noise: every compared row 'same', so even --fail-on any passes."""
    rng = np.random.default_rng(2)
    frame = interleaved(rng, lambda size, flush: 0.0, units=4, noise=0.0005)
    frame = frame[frame["flush"] != "cold-reference"]
    path = tmp_path / "same.parquet"
    frame.to_parquet(path)
    assert main(["compare", str(path), "--base", "A", "--new", "B", "--fail-on", "any"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("A→B")]
    assert len(rows) == 6 and all(" same " in line for line in rows)
