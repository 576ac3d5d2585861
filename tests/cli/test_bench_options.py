"""hipexplore.cli.bench_options: ``hipexplore bench``'s options, registered by family on a parser of
their own here. What the full ``bench --help`` loads (no numpy, no kernel catalog) is checked in a
fresh process by tests/cli/test_startup.py; its text, against SweepSpec's defaults, there too."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from hipexplore.bench.spec import SweepSpec, options
from hipexplore.bench.stats import StopRule
from hipexplore.cli import bench_options


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench")
    bench_options.add_options(p)
    return p


def test_the_module_imports_nothing_heavy_at_its_top():
    """``bench --help`` builds this parser: what the defaults come from is imported inside the family
    that adds them (bench/stats.py, bench/spec.py), not when the module is loaded."""
    tree = ast.parse(Path(bench_options.__file__).read_text(encoding="utf-8"))
    top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    top |= {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    assert top <= {"__future__", "argparse", "typing", "bench_values"}, top


def test_the_options_come_in_the_order_the_help_shows_them():
    flags = [a.option_strings[0] if a.option_strings else a.dest for a in _parser()._actions[1:]]
    first_spec = "--" + next(iter(options())).name.replace("_", "-")
    assert flags[:6] == ["kernel", "--device", "--size", "--rotating", "--flush", "--iterations"]
    assert flags.index("--timeout") + 1 == flags.index(first_spec)  # the sampling, then SweepSpec's fields
    order = ["--llc-bytes", "--out", "--no-progress", "--worker", "--in-process", "--cluster", "--source"]
    assert [flags.index(f) for f in order] == sorted(flags.index(f) for f in order)
    assert flags[-1] == "--bytes-per-launch"
    titles = [g.title for g in _parser()._action_groups]
    assert titles[-2:] == ["measurement (SweepSpec fields)", "user kernel"]


def test_every_sweepspec_option_is_a_flag_named_after_its_field():
    p = _parser()
    for f in options():
        flag = f"--{f.name.replace('_', '-')}"
        assert flag in p._option_string_actions, flag
        if f.metadata.get("alias"):
            assert p._option_string_actions[f.metadata["alias"]].dest == f.name


def test_an_option_not_given_is_left_to_the_spec():
    args = _parser().parse_args(["triad"])
    assert bench_options.spec_fields(args) == {}
    assert (args.size, args.rotating, args.flush, args.iterations, args.block) == ([], "1", "none", None, "256")
    rule = StopRule()
    assert (args.min_samples, args.min_time, args.target_ci, args.target_cv, args.timeout) == (
        rule.min_samples,
        rule.min_time_s,
        rule.target_ci,
        rule.target_cv,
        rule.timeout_s,
    )


def test_the_options_given_are_the_spec_fields_a_sweepspec_takes():
    args = _parser().parse_args(
        ["triad", "--no-reference", "--chunk-lead", "2", "--timer", "events,in-kernel", "--counters", "--passes", "3"]
    )
    fields = bench_options.spec_fields(args)
    assert fields == {
        "reference": False,
        "chunk_lead": 2,
        "timers": ["events", "in-kernel"],
        "counters": next(f for f in options() if f.name == "counters").metadata["const"],
        "units": 3,
    }
    spec = SweepSpec(**fields)
    assert (spec.reference, spec.chunk_lead, spec.units) == (False, 2, 3)


def test_worker_and_in_process_exclude_each_other(capsys):
    p = _parser()
    assert p.parse_args(["triad", "--in-process"]).worker is False and p.parse_args(["triad"]).worker is None
    with pytest.raises(SystemExit):
        p.parse_args(["triad", "--worker", "--in-process"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_repeated_user_kernel_options_collect_in_order():
    args = _parser().parse_args(
        ["a,b", "--source", "a.cu", "--source", "b.cu", "-I", "inc", "--option=-O3", "--export", "pyperf", "x.json"]
    )
    assert (args.source, args.include_dir, args.option, args.export) == (
        ["a.cu", "b.cu"],
        ["inc"],
        ["-O3"],
        [["pyperf", "x.json"]],
    )
