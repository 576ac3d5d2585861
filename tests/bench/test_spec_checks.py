"""The checks of a sweep's values (bench.spec_checks): sizes in every unit, the options' command-line
text (units, resolution, budget, counters), and the named steps ``SweepSpec.__post_init__`` runs, each
bad value one ``ConfigError`` line naming it; the first bad field in the fields' order is the one named."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import spec_checks as ck
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.spec_checks import parse_size
from hipexplore.errors import ConfigError


@pytest.mark.parametrize(
    "text,want",
    [
        ("4096", 4096),
        (" 64KiB ", 65536),
        ("64k", 65536),
        ("1kb", 1000),
        ("1MiB", 1 << 20),
        ("256M", 256 << 20),
        ("2mb", 2 * 10**6),
        ("1GiB", 1 << 30),
        ("1g", 1 << 30),
        ("3gb", 3 * 10**9),
        ("1TiB", 1 << 40),
        ("1t", 1 << 40),
        ("1tb", 10**12),
        ("1.5KiB", 1536),
        ("7b", 7),
        ("1 MiB", 1 << 20),
        (np.int64(8), 8),
    ],
)
def test_sizes_parse_with_every_unit(text, want):
    assert parse_size(text) == want and type(parse_size(text)) is int


@pytest.mark.parametrize("bad", [0, -1, "0", "-4KiB", "inf", "nan", "1 apples", "KiB", "", True])
def test_sizes_that_are_not_positive_byte_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="size"):
        parse_size(bad)


@pytest.mark.parametrize(
    "check, text, want",
    [
        (ck.check_units, " Auto ", "auto"),
        (ck.check_units, "64", 64),
        (ck.check_resolution, "1%", 0.01),
        (ck.check_resolution, "0", 0.0),
        (ck.check_budget, "2", 2.0),
        (ck.check_counters, "OFF", False),
        (ck.check_counters, "on", True),
        (ck.check_counters, "ncu", "ncu"),
    ],
)
def test_an_options_command_line_text_reads_as_its_value(check, text, want):
    assert check(text) == want


@pytest.mark.parametrize(
    "check, text, needle",
    [
        (ck.check_units, "65", "units must be 'auto' or an integer in \\[1, 64\\], got '65'"),
        (ck.check_resolution, "50%", "resolution must be 0 \\(off\\) or a half-width below 50%"),
        (ck.check_budget, "0", "resolution_budget must be a positive multiple"),
        (ck.check_budget, "lots", "got 'lots'"),
        (ck.check_counters, "perf", "counters must be on, off or a backend \\(cupti, ncu, rocprofv3\\)"),
    ],
)
def test_an_options_bad_text_is_one_line_naming_it(check, text, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        check(text)
    assert "\n" not in str(err.value)


def test_the_steps_name_the_first_bad_field_in_the_fields_order():
    """Two bad fields: the one the steps meet first is named (the axes before the chunk, the chunk
    before the memory share, the units before the switches, the timers before the throttle)."""
    with pytest.raises(ConfigError, match="size"):
        SweepSpec(sizes="0", chunk=0)
    with pytest.raises(ConfigError, match="chunk"):
        SweepSpec(chunk=0, mem_fraction=2)
    with pytest.raises(ConfigError, match="units"):
        SweepSpec(units=0, floor="yes")
    with pytest.raises(ConfigError, match="timers"):
        SweepSpec(timers=(), throttle_threshold=2)


def test_each_step_checks_its_own_fields():
    assert ck.checked_axes("triad", "1KiB", "auto", "none") == (("triad",), (1024,), ("auto",), ("none",))
    assert ck.checked_flush_factors({"l2-read": 2}) == (("l2-read", 2),)
    with pytest.raises(ConfigError, match="flush factor for 'l3-read': unknown flush mode; expected one of"):
        ck.checked_flush_factors((("l3-read", 2),))
    assert ck.checked_chunks(4, "random", 1) == {"chunk_lead": "random", "chunk_trail": 1}
    with pytest.raises(ConfigError, match="trail"):
        ck.checked_chunks(4, 0, -1)
    assert ck.checked_timers(["events", "events"], ("triad",)) == ("events",)
    assert ck.listed("a", (str,)) == ["a"] and ck.listed(("a", "b"), (str,)) == ["a", "b"]
    with pytest.raises(ConfigError, match="stop must be a StopRule"):
        ck.check_stop(10)
