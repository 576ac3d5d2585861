"""bench/defaults.py: the sweep's default numbers, in a module that imports nothing of the library, read
by SweepSpec (and so shown by ``hipexplore bench --help``), the timing loop and the rotating plan alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hipexplore.bench import defaults, rotating, timing
from hipexplore.bench.spec import SweepSpec, check_units
from hipexplore.errors import ConfigError


def test_the_module_imports_nothing_of_the_library():
    tree = ast.parse(Path(defaults.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "typing"}, imported


def test_the_spec_the_timing_loop_and_the_rotating_plan_take_the_same_numbers():
    spec, opts = SweepSpec(), timing.TimingOptions()
    assert (spec.chunk, spec.chunk_lead, spec.chunk_trail, spec.warmup_s, spec.mem_fraction) == (
        defaults.DEFAULT_CHUNK,
        defaults.CHUNK_LEAD,
        defaults.CHUNK_TRAIL,
        defaults.WARMUP_S,
        defaults.DEFAULT_MEM_FRACTION,
    )
    assert (opts.chunk, opts.lead, opts.trail, opts.warmup_s) == (
        spec.chunk,
        spec.chunk_lead,
        spec.chunk_trail,
        spec.warmup_s,
    )
    # still importable where they were declared before
    assert (timing.DEFAULT_CHUNK, timing.CHUNK_LEAD, timing.CHUNK_TRAIL, timing.WARMUP_S) == (
        defaults.DEFAULT_CHUNK,
        defaults.CHUNK_LEAD,
        defaults.CHUNK_TRAIL,
        defaults.WARMUP_S,
    )
    assert (
        rotating.DEFAULT_MEM_FRACTION == defaults.DEFAULT_MEM_FRACTION
        and rotating.auto_or_count is defaults.auto_or_count
    )


@pytest.mark.parametrize(
    "text, value", [(" Auto ", "auto"), ("4", 4), (3, 3), ("4x", "4x"), ("-1", "-1"), (None, None)]
)
def test_auto_or_count_reads_the_command_lines_text_and_leaves_the_rest_to_the_caller(text, value):
    assert defaults.auto_or_count(text) == value


def test_the_callers_check_what_auto_or_count_leaves():
    assert check_units(" AUTO ") == "auto" and check_units("6") == 6 and rotating.parse_rotating("auto") == "auto"
    with pytest.raises(ConfigError, match="units must be 'auto' or an integer"):
        check_units("4x")
