"""hipexplore.cli.compare_cmd: ``hipexplore compare``'s table, its JSON and its refusals.
The verdicts themselves are hipexplore.verdicts' (tests/test_verdicts.py); here the command's own
parts on real ``verdicts.compare`` frames of samples built in passes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hipexplore.cli import main
from hipexplore.cli.compare_cmd import check_readable_parquet, table
from hipexplore.errors import ConfigError
from hipexplore.verdicts import compare


def samples(rng, shifts, *, kernel="triad", size=4096, per_pass=40, chunk=4) -> pd.DataFrame:
    """One configuration's samples in len(shifts) passes, pass p at 10 us * (1 + shifts[p])."""
    rows = [
        {
            "kernel": kernel,
            "size_bytes": size,
            "rotating_requested": "1",
            "flush": "none",
            "timer": "events",
            "device_name": "dev",
            "time_s": 10e-6 * (1 + sh) * (1 + rng.normal(0, 0.002)),
            "chunk": p * 1000 + i // chunk,
            "pass_index": p,
            "dropped": False,
        }
        for p, sh in enumerate(shifts)
        for i in range(per_pass)
    ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    rng = np.random.default_rng(1)
    base = pd.concat([samples(rng, [0] * 4), samples(rng, [0] * 4, size=8192)], ignore_index=True)
    new = pd.concat([samples(rng, [0.2] * 4), samples(rng, [0, 0], size=16384)], ignore_index=True)
    folder = tmp_path_factory.mktemp("runs")
    base.to_parquet(folder / "base.parquet")
    new.to_parquet(folder / "new.parquet")
    return base, new, folder


def rows_of(text: str) -> list[str]:
    """The table's body: the lines under its header, up to the notes."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("kernel"))
    return [
        line
        for line in lines[head + 1 :]
        if line
        and not line.startswith(("(left out", "notes", " "))
        and not line[:3].strip().isdigit()
        and not line.startswith("hint:")
    ]


@pytest.mark.timeout(120)
def test_table_rows_verdicts_and_configurations_in_one_run_only(runs):
    base, new, _ = runs
    text = table(compare(base, new))
    lines = text.splitlines()
    assert lines[0].startswith("decision rule: faster/slower only when the 95% interval")
    assert any(line.startswith("note: two separate runs") for line in lines[:6])
    head = next(line for line in lines if line.startswith("kernel")).split()
    assert head[:5] == ["kernel", "size", "rot", "flush", "units"] and "verdict" in head and "timer" not in head
    body = rows_of(text)
    row = body[0].split()
    assert row[:5] == ["triad", "4", "KiB", "1", "none"] and "slower" in row  # the verdict
    assert body[0].endswith("slower by 20.0% [+19.9%, +20.2%] — past the 2% threshold")  # the measured change in words
    assert row[5] == "4"  # units: a whole number even when another row's units are missing (NaN)
    assert body[1].split()[:3] == ["triad", "8", "KiB"] and "base only" in body[1]
    assert "new only" in body[2]
    assert "only in the base run: not compared" in text and "only in the new run: not compared" in text  # as notes
    assert max(map(len, lines)) <= 120


@pytest.mark.timeout(120)
def test_table_units_that_differ_and_an_interval_too_few_units_give():
    rng = np.random.default_rng(2)
    body = rows_of(table(compare(samples(rng, [0] * 4), samples(rng, [0, 0.001, 0, 0.002, 0]))))
    assert body[-1].split()[5] == "4/5"
    one = table(compare(samples(rng, [0]).drop(columns="pass_index"), samples(rng, [0.1]).drop(columns="pass_index")))
    assert "undecided" in rows_of(one)[-1] and "unit(s)" in one  # the note says why: too few units


@pytest.mark.timeout(120)
def test_json_has_the_rule_and_strict_nulls(runs, capsys):
    _, _, folder = runs
    assert main(["compare", str(folder / "base.parquet"), str(folder / "new.parquet"), "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text  # strict JSON: a missing value is null
    out = json.loads(text)
    assert out["threshold"] == 0.02 and "wholly" in out["rule"] and out["hint"] == ""
    assert [r["present"] for r in out["rows"]] == ["both", "base only", "new only"]
    assert out["rows"][1]["ratio"] is None and out["rows"][0]["verdict"] == "slower"
    assert (
        main(["compare", str(folder / "base.parquet"), str(folder / "new.parquet"), "--json", "--threshold", "25%"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["rows"][0]["verdict"] == "same"  # +20% lies within +-25%


@pytest.mark.timeout(120)
def test_a_file_that_is_no_parquet_is_one_line(tmp_path, capsys):
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(b"PAR1 this is not a whole parquet file")
    with pytest.raises(ConfigError) as exc:
        check_readable_parquet(str(bad))
    text = str(exc.value)
    assert text.startswith(f"run {str(bad)!r} is not a readable parquet file (") and "\n" not in text
    assert text.endswith("expected a sweep's samples .parquet file (hipexplore bench --out)")
    check_readable_parquet(str(tmp_path / "missing.parquet"))  # left to verdicts.compare, which names what it expected
    check_readable_parquet(str(tmp_path))  # a folder too
    assert main(["compare", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hipexplore compare: error: run ")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "argv, said",
    [
        (
            ["a.parquet", "b.parquet", "c.parquet"],
            "compare takes one or two runs; got 3: ['a.parquet', 'b.parquet', 'c.parquet']",
        ),
        (
            ["a.parquet", "b.parquet", "--new", "k"],
            "--base/--new compare two kernels of one run; with two runs give neither",
        ),
        (
            ["a.parquet", "--base", "k"],
            "one run needs --base KERNEL and --new KERNEL (or give two runs: BASE.parquet NEW.parquet)",
        ),
    ],
)
def test_refused_command_lines_exit_2_with_one_line(argv, said, capsys):
    assert main(["compare", *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"hipexplore compare: error: {said}"]


@pytest.mark.timeout(60)
def test_an_undecided_row_with_a_tiny_p_says_why_both_stand():
    """The table prints each row's Mann-Whitney p: an ``undecided`` row with p = 1e-12 must say why
    the p does not decide (the report's ``p_note``), not leave the two side by side unexplained."""
    row = {
        "kernel": "",
        "base_kernel": "A",
        "new_kernel": "B",
        "size_bytes": 1 << 20,
        "rotating_requested": "1",
        "flush": "none",
        "timer": "events",
        "present": "both",
        "base_units": 3,
        "new_units": 3,
        "p_value": 1e-12,
        "min_detectable": 0.05,
        "verdict": "undecided",
        "ratio": 1.01,
        "ratio_ci_low": 0.98,
        "ratio_ci_high": 1.04,
        "change": 0.01,
        "change_called": "none",
        "half_width": 0.03,
        "note": "the noise allows no call at ±2%: the interval over 3 units is ±3.0% wide",
    }
    frame = pd.DataFrame([row])
    frame.attrs.update(threshold=0.02, rule="r", caveat="")
    text = table(frame)
    assert "undecided" in rows_of(text)[0]
    notes = " ".join(
        line.strip()
        for line in text.splitlines()[
            text.splitlines().index("notes (every row's full note and figures: --json):") + 1 :
        ]
    )
    assert "significant (p < 0.001" in notes and "includes no change" in notes, notes
    assert "the interval over 3 units is ±3.0% wide" in notes, notes
    decided = frame.assign(verdict="same", ratio_ci_low=0.99, ratio_ci_high=1.01)
    assert "significant" not in table(decided)  # the rule decided: nothing to explain
