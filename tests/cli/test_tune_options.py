"""hipexplore.cli.tune_options: ``hipexplore tune-replay``'s options, registered by family on a parser
of their own here: their order, defaults and the bounds of the counts (the same refusals through the
command line, one line each: tests/cli/test_inputs.py)."""

from __future__ import annotations

import argparse

import pytest

from hipexplore.cli import tune_options
from hipexplore.compile.request import COMPILERS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tune-replay")
    tune_options.add_options(p)
    return p


def test_the_compilers_offered_are_the_compile_caches():
    assert tune_options.COMPILERS == COMPILERS


def test_the_options_come_in_the_order_the_help_shows_them():
    flags = [a.option_strings[0] for a in _parser()._actions[1:]]
    assert flags[:6] == ["--compiler", "--target", "--jobs", "--granularity", "--cache", "--cluster"]
    order = [
        "--list",
        "--export-list",
        "--ideal-repeats",
        "--no-ideal",
        "--tokens",
        "--d-model",
        "--no-salt",
        "--frame",
    ]
    assert [flags.index(f) for f in order] == sorted(flags.index(f) for f in order)
    assert flags[-4:] == ["--frame", "--force", "--json", "--quiet"]


def test_the_defaults_leave_the_mode_and_the_list_to_the_command():
    args = _parser().parse_args(["--compiler", "host"])
    assert (args.target, args.jobs, args.granularity, args.cache, args.list, args.passes) == (
        None,
        1,
        "auto",
        None,
        None,
        None,
    )
    assert (args.tokens, args.d_model, args.ideal_repeats, args.dry_run, args.no_salt) == (512, 512, 1, False, False)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--jobs", "0"], "expected a positive integer, got '0'"),
        (["--jobs", str(tune_options.MAX_JOBS + 1)], f"is more than the maximum, {tune_options.MAX_JOBS}"),
        (["--tokens", "9" * 60], "99999999999999999999... (60 digits) is more than the maximum, 1,048,576"),
        (["--limit", "many"], "expected a positive integer, got 'many'"),
        (["--cache", "remote"], "invalid choice: 'remote'"),
    ],
)
def test_a_count_out_of_bounds_is_refused_by_name(capsys, argv, says):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--compiler", "host", *argv])
    assert says in capsys.readouterr().err


def test_the_epilog_names_every_measured_quantity():
    for name in ("seconds_ideal", "seconds_floor", "seconds_without_cache", "Exit status: 0 ok"):
        assert name in tune_options.EPILOG
    assert _parser().parse_args(["--compiler", "host", "--passes", "100"]).passes == 100
