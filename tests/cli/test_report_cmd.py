"""hipexplore.cli.report_cmd: ``hipexplore report``'s own parts: the --timeout value, the command
line it records in the report, the A/B review's parameters, and its refusals (one line, exit 2,
before any notebook runs). Building the report itself: tests/report/."""

from __future__ import annotations

import argparse

import pytest

from hipexplore.cli import main
from hipexplore.cli.report_cmd import positive_seconds, command_line, register, review_parameters
from hipexplore.errors import ConfigError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["report", *argv])


@pytest.mark.timeout(30)
def test_seconds_takes_positive_finite_numbers_only():
    assert positive_seconds("900") == 900.0 and positive_seconds("0.5") == 0.5 and positive_seconds("1e3") == 1000.0
    for bad in ("0", "-1", "nan", "inf", "-inf", "ten", ""):
        with pytest.raises(argparse.ArgumentTypeError, match=f"^expected a positive number of seconds, got {bad!r}$"):
            positive_seconds(bad)


@pytest.mark.timeout(30)
def test_command_line_is_the_command_as_parsed():
    assert command_line(parse()) == ["hipexplore", "report", "--out", "report.html"]
    args = parse(
        "--params",
        "p.yaml",
        "--baseline",
        "a.parquet",
        "--candidate",
        "b.parquet",
        "--threshold",
        "5%",
        "--out",
        "r.html",
        "--show-input",
        "--device",
        "host",
        "--notebook-out",
        "nb.ipynb",
        "--timeout",
        "60",
        "--quiet",
        "--no-input",
    )
    assert command_line(args) == [
        "hipexplore",
        "report",
        "--params",
        "p.yaml",
        "--baseline",
        "a.parquet",
        "--candidate",
        "b.parquet",
        "--threshold",
        "0.05",
        "--out",
        "r.html",
        "--show-input",
        "--device",
        "host",
        "--notebook-out",
        "nb.ipynb",
        "--timeout",
        "60",
    ]
    assert "--timeout" not in command_line(parse("--timeout", "900"))  # the default is not repeated


@pytest.mark.timeout(30)
def test_review_parameters_for_two_runs_or_two_kernels_of_one():
    assert review_parameters(parse()) == {}
    assert review_parameters(parse("--baseline", "a.parquet", "--candidate", "b.parquet")) == {
        "baseline": "a.parquet",
        "candidate": "b.parquet",
    }
    assert review_parameters(
        parse("--run", "r.parquet", "--baseline", "w1", "--candidate", "w4", "--threshold", "0.03")
    ) == {"threshold": 0.03, "baseline": "r.parquet", "candidate": "none", "base_kernel": "w1", "new_kernel": "w4"}
    with pytest.raises(ConfigError, match="^--run needs --baseline KERNEL and --candidate KERNEL$"):
        review_parameters(parse("--run", "r.parquet", "--baseline", "w1"))
    with pytest.raises(ConfigError, match="^an A/B review needs both --baseline and --candidate$"):
        review_parameters(parse("--candidate", "b.parquet"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "argv, said",
    [
        (["--threshold", "0.05"], "--threshold belongs to an A/B review: give --baseline and --candidate too"),
        (["--baseline", "a.parquet"], "an A/B review needs both --baseline and --candidate"),
        (["--run", "r.parquet", "--candidate", "k"], "--run needs --baseline KERNEL and --candidate KERNEL"),
    ],
)
def test_refusals_are_one_line_exit_2_and_write_nothing(argv, said, tmp_path, capsys, need_module_papermill):
    out = tmp_path / "r.html"
    assert main(["report", *argv, "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"hipexplore report: error: {said}"]
    assert not out.exists()


@pytest.mark.timeout(120)
def test_a_bad_timeout_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "--timeout", "0"])
    assert exc.value.code == 2
    assert "argument --timeout: expected a positive number of seconds, got '0'" in capsys.readouterr().err


@pytest.fixture
def need_module_papermill():
    """``run`` checks the notebook extra first (``extras.require_modules``): the refusals after it need it here."""
    from conftest import need_module

    need_module("papermill")
