"""What ``hipexplore --help`` and each subcommand's ``--help`` import: the real console script in a
fresh process under ``python -X importtime``, whose stderr names every module the process loaded.

Why imports and not milliseconds: start-up time on a shared machine is noise, the imports are not;
pandas alone cost every command 0.4-0.9 s when ``cli/bench_cmd.py`` reached it through an eager
``bench/__init__``, numpy cost ``bench --help`` 3x ``--help`` while ``bench/spec.py`` and the
modules its defaults come from imported it at module level, and the kernel catalog, the timing loop
and the device layer below them still cost it ~2x ``--help`` once numpy was gone (issue 48 item 6;
the before/after medians are in BENCHMARKS.md, "CLI start-up").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipexplore import cli

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("hipexplore")

#: never for a --help: each is imported by the command that needs it, when it runs. numpy too: bench's
#: options are SweepSpec's fields with SweepSpec's defaults, so ``bench --help`` imports bench/spec.py
#: and bench/stats.py (StopRule's defaults), which import numpy in the functions that compute
HEAVY = ("numpy", "pandas", "pyarrow", "matplotlib", "dask", "distributed", "redis", "triton", "scipy")
#: never for ``bench --help`` either: what SweepSpec checks and runs with (the kernel catalog and the
#: kernels' build, the timing loop, the rotating plan, the flush modes, the metadata keys, the device
#: layer and the compiler front end below them), imported by bench/spec.py where it is used; the
#: defaults the help shows come from bench/defaults.py, which imports nothing
SWEEP_INTERNALS = (
    "hipexplore.kernels.catalog",
    "hipexplore.kernels.spec",
    "hipexplore.kernels.build",
    "hipexplore.kernels.geometry",
    "hipexplore.bench.timing",
    "hipexplore.bench.rotating",
    "hipexplore.bench.flush",
    "hipexplore.bench.info",
    "hipexplore.schema",
    "hipexplore.untrusted",
    "hipexplore.devices.base",
    "hipexplore.devices.telemetry",
    "hipexplore.compile.base",
)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMANDS = list(_subparsers(cli.build_parser()))


def _imported(*argv: str, env: dict[str, str] | None = None, says: str = "usage: hipexplore") -> set[str]:
    """Every module the real ``hipexplore ARGV`` loaded, from ``-X importtime`` (stdout: the help)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    res = subprocess.run(
        [sys.executable, "-X", "importtime", str(CLI), *argv],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO,
    )
    assert res.returncode == 0 and says in res.stdout, (res.returncode, res.stdout[-1000:], res.stderr[-2000:])
    lines = [line for line in res.stderr.splitlines() if line.startswith("import time:") and "|" in line]
    assert len(lines) > 20, res.stderr[-2000:]  # -X importtime wrote its table: the check below can fail
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def _heavy(modules: set[str]) -> list[str]:
    tops = {m.split(".")[0] for m in modules}
    return sorted(t for t in tops if t in HEAVY)


def test_the_import_table_names_the_heavy_modules_a_command_does_load():
    """The check can fail: a command that probes the devices (``info``) does load numpy, and the
    table shows it (the same fresh-process table the other tests read)."""
    assert "numpy" in _heavy(_imported("info", says="compilers:"))


@pytest.mark.parametrize("argv", [("--help",), ("compile", "--help")], ids=["help", "compile-help"])
def test_help_and_compile_help_load_no_numpy_pandas_or_plotting(argv):
    modules = _imported(*argv)
    assert not _heavy(modules), f"hipexplore {' '.join(argv)} imported {_heavy(modules)}"
    assert "hipexplore.bench.spec" not in modules and "hipexplore.compile.cache" not in modules


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_help_loads_nothing_heavy(command):
    """numpy and pandas included, for ``bench --help`` too (its parser reads SweepSpec's fields)."""
    modules = _imported(command, "--help")
    assert not _heavy(modules), f"hipexplore {command} --help imported {_heavy(modules)}"
    if command == "bench":
        assert "hipexplore.bench.spec" in modules  # the parser was built from the spec, without numpy


@pytest.mark.parametrize("command", COMMANDS)
def test_a_subcommand_built_alone_is_the_one_the_full_parser_builds(command):
    """Only the named subcommand is built in full (``cli.build_parser(argv)``); its parser, its help
    and the top-level help are those of the parser with every subcommand built."""
    full, alone = cli.build_parser(), cli.build_parser([command, "--help"])
    assert alone.format_help() == full.format_help()
    assert _subparsers(alone)[command].format_help() == _subparsers(full)[command].format_help()
    others = [name for name in COMMANDS if name != command]
    assert all(not _subparsers(alone)[name]._actions[1:] for name in others)  # the rest: a name and a help line


def test_a_command_line_still_parses_to_the_chosen_command():
    args = cli.build_parser(["compile", "k.c", "--compiler", "host"]).parse_args(
        ["compile", "k.c", "--compiler", "host"]
    )
    assert (args.command, args.source, args.compiler, args.target) == ("compile", "k.c", "host", None)
    assert args.func.__module__ == "hipexplore.cli.compile_cmd"


def test_a_compile_through_the_cache_loads_no_pandas_or_numpy(tmp_path, need_host_cc):
    """The command itself, not only its help: a host compile through both cache tiers (compiled,
    then a disk hit in a second process) records its events without building a frame."""
    src = tmp_path / "k.c"
    src.write_text("void k(float* a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = 1; }\n")
    env = {"HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    for outcome in ("compiled", "disk-hit"):
        modules = _imported("compile", str(src), "--compiler", "host", env=env, says=outcome)
        assert not _heavy(modules), f"hipexplore compile ({outcome}) imported {_heavy(modules)}"


def test_bench_help_loads_none_of_what_the_sweep_runs_with():
    """``bench --help`` builds its options from SweepSpec (bench/spec.py is loaded) but not the kernel
    catalog, the timing loop or the device layer; a SweepSpec built, recorded and read back, and the
    unit that measures it (bench/sweeprun.py), do load them (the list names modules that exist and
    that a sweep does reach: the check can fail)."""
    modules = _imported("bench", "--help")
    assert "hipexplore.bench.spec" in modules and "hipexplore.bench.defaults" in modules
    assert not sorted(set(SWEEP_INTERNALS) & modules), f"bench --help imported {sorted(set(SWEEP_INTERNALS) & modules)}"
    code = (
        "import sys; from hipexplore.bench.spec import SweepSpec; SweepSpec.recorded_measurement(SweepSpec().record()); "
        "from hipexplore.bench.sweeprun import SweepRun; print(' '.join(sys.modules))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert set(SWEEP_INTERNALS) <= set(res.stdout.split()), sorted(set(SWEEP_INTERNALS) - set(res.stdout.split()))


def test_bench_help_shows_the_defaults_a_sweepspec_takes():
    """Each SweepSpec option's help ends with the value a ``SweepSpec()`` holds (after its own checks),
    and that help is what the real ``hipexplore bench --help`` prints: the defaults are the spec's, not a
    copy (they come from bench/defaults.py, which the timing loop and the rotating plan read too)."""
    from hipexplore.bench.spec import SweepSpec, options
    from hipexplore.bench.timing_options import TimingOptions
    from hipexplore.cli.bench_values import shown

    spec, parser = SweepSpec(), _subparsers(cli.build_parser(["bench", "--help"]))["bench"]
    printed = "".join(
        subprocess.run(
            [sys.executable, str(CLI), "bench", "--help"],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
        ).stdout.split()
    )
    helps = {a.dest: a.help.replace("%%", "%") for a in parser._actions}
    for f in options():
        assert helps[f.name].endswith(f"(default {shown(getattr(spec, f.name))})"), (f.name, helps[f.name])
        assert "".join(helps[f.name].split()) in printed, f.name  # argparse wraps lines (at hyphens too)
    timing = spec.timing()
    assert (timing.chunk, timing.lead, timing.trail, timing.warmup_s) == (
        TimingOptions().chunk,
        TimingOptions().lead,
        TimingOptions().trail,
        TimingOptions().warmup_s,
    )
