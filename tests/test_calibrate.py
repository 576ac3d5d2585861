"""hipexplore.calibrate and ``hipexplore calibrate``: the A/A counts on a byte-identical copy, their
Wilson intervals, the record kept per device, and ``compare`` citing it. The CLI run is a real host
calibration, shortened (--rounds 2 --iterations 16: the record says it is not at the defaults)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from hipexplore import calibrate as cal
from hipexplore.cli import calibrate_cmd, main


def test_wilson_interval_is_inside_0_1_and_not_empty_at_the_ends():
    lo, hi = cal.wilson(0, 16)
    assert lo == 0.0 and 0.15 < hi < 0.25  # "0 of 16" is not "never"
    lo, hi = cal.wilson(16, 16)
    assert hi == 1.0 and 0.75 < lo < 0.85
    lo, hi = cal.wilson(5, 10)
    assert math.isclose(0.5 - lo, hi - 0.5, rel_tol=1e-9) and 0.2 < lo < 0.25
    assert all(math.isnan(v) for v in cal.wilson(0, 0))


def run_of(rng, shift=0.0, units=3, per=32) -> pd.DataFrame:
    rows = []
    for size in (4096, 65536):
        for u in range(units):
            for i in range(per):
                for k, sh in (("A", 0.0), ("B", shift)):
                    rows.append(
                        {
                            "kernel": k,
                            "size_bytes": size,
                            "rotating_requested": "1",
                            "flush": "none",
                            "timer": "events",
                            "device_name": "dev",
                            "pass_index": u,
                            "dropped": False,
                            "chunk": 2 * (u * 1000 + (size // 4096) * 100 + i // 4) + (k == "B"),
                            "time_s": 1e-5 * (1 + sh) * (1 + rng.normal(0, 0.003)),
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.timeout(300)
def test_analyse_counts_false_verdicts_coverage_and_min_detectable():
    rng = np.random.default_rng(4)
    same = cal.analyse([run_of(rng) for _ in range(3)])
    kinds = {k["kind"]: k for k in same["kinds"]}
    assert (
        kinds["interleaved (95%)"]["rows"] == 6 and kinds["separate runs (99%)"]["rows"] == 8
    )  # 2 pairs x 2 kernels x 2
    assert same["all"]["rows"] == 14 and same["runs"] == 3
    assert set(same["min_detectable"]) == {"4096", "65536"} and all(
        0.02 < v < 0.2 for v in same["min_detectable"].values()
    )
    # a B that is 10% slower in every run: every interleaved row is a "false" verdict of identical code
    moved = cal.analyse([run_of(rng, shift=0.10) for _ in range(2)])
    inter = next(k for k in moved["kinds"] if k["kind"] == "interleaved (95%)")
    assert inter["false"] == inter["rows"] == 4 and inter["covered"] == 0
    text = cal.sentence({**moved, "device_name": "dev", "date": "d"})
    assert text.startswith("on this device (dev, hipexplore calibrate d) identical code was called different in 4 of")


@pytest.mark.timeout(1200)
def test_calibrate_cli_on_the_host_keeps_the_record_and_compare_and_the_report_cite_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HIPEXPLORE_CALIBRATION_DIR", str(tmp_path / "store"))
    out = tmp_path / "cal.json"
    assert (
        main(
            [
                "calibrate",
                "--device",
                "host",
                "--sizes",
                "4KiB",
                "--rounds",
                "2",
                "--iterations",
                "16",
                "--units",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    got = capsys.readouterr()
    assert "round 1/2" in got.err and "round 2/2" in got.err  # progress
    lines = got.out.splitlines()
    assert max(map(len, lines[:-1])) <= 120 and lines[-1].startswith("kept: ")  # the last: paths
    record = json.loads(out.read_text())
    assert record["format"] == cal.FORMAT and record["device_kind"] == "host" and record["runs"] == 2
    assert record["at_defaults"] is False and record["iterations"] == 16
    assert record["all"]["rows"] >= 3 and "4096" in record["min_detectable"]
    kept = list((tmp_path / "store").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == record
    assert cal.cite({"device.name": record["device_name"]}).startswith("on this device (")
    assert "not resolved at the calibration's own settings" in cal.sentence(record)
    # compare on a run of this device cites it
    import hipexplore as hx

    run = hx.sweep(
        ["triad", "copy"],
        ["4KiB"],
        [1],
        ["none"],
        device="host",
        iterations=16,
        units=3,
        interleave=True,
        progress=False,
        out=str(tmp_path / "ab.parquet"),
    )
    assert run.metadata["device.name"] == record["device_name"]
    assert main(["compare", str(tmp_path / "ab.parquet"), "--base", "triad", "--new", "copy"]) == 0
    text = capsys.readouterr().out
    assert "calibration: on this device (" in text and max(map(len, text.splitlines())) <= 120
    # the review report (the notebook, in its own kernel process) cites it too
    assert (
        main(
            [
                "report",
                "--run",
                str(tmp_path / "ab.parquet"),
                "--baseline",
                "triad",
                "--candidate",
                "copy",
                "--out",
                str(tmp_path / "r.html"),
                "--quiet",
            ]
        )
        == 0
    )
    html = (tmp_path / "r.html").read_text()
    assert "Calibration: on this device (" in html and "identical code was called different in" in html


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "argv, said",
    [
        (["--sizes", "4KB,zz"], "zz"),
        (["--rounds", "1"], "expected a whole number of rounds from 2 to 50"),
        (["--budget", "nan"], "expected seconds between 10 and 3600"),
    ],
)
def test_bad_values_are_one_line_exit_2_before_the_device(argv, said, capsys):
    assert calibrate_cmd.COMMAND == "calibrate"
    try:
        rc = main(["calibrate", "--device", "host", *argv])
    except SystemExit as exc:  # argparse's refusal
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
