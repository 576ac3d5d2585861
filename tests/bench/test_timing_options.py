"""How every timed run is taken (bench.timing_options): ``TimingOptions`` built by the spec, its
overrides checked by name, and the chunk's untimed lead and trail, each bad value one line."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench.defaults import WARMUP_S
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.timing_options import (
    HOLD_TIMEOUT_S,
    TimingOptions,
    check_lead,
    check_trail,
    timing_options,
)
from hipexplore.errors import ConfigError


def test_timing_options_are_built_by_the_spec_and_refuse_unknown_overrides():
    spec = SweepSpec(chunk=3, chunk_lead=0, chunk_trail=2, warmup_s=0.5, flush_end_event=True)
    opts = spec.timing()
    assert (opts.chunk, opts.lead, opts.trail, opts.warmup_s, opts.flush_end_event) == (3, 0, 2, 0.5, True)
    assert SweepSpec().warmup_s == TimingOptions().warmup_s == WARMUP_S  # the warm-up default, written once
    assert opts.but(chunk=1).chunk == 1 and opts.but() is opts
    with pytest.raises(ConfigError, match="unknown timing option.*chunks.*expected .*chunk"):
        opts.but(chunks=2)
    with pytest.raises(ConfigError, match="chunk must be a positive number of samples, got 0"):
        TimingOptions(chunk=0)


@pytest.mark.parametrize(
    "field, bad",
    [("lead", b) for b in (-1, 1.5, True, "rand", None)] + [("trail", b) for b in (-1, 1.5, True, "1", "random", None)],
)
def test_a_bad_chunk_lead_or_trail_names_the_value(field, bad) -> None:
    check = check_lead if field == "lead" else check_trail
    with pytest.raises(ConfigError, match=f"chunk {field} must be an integer >= 0.*got {bad!r}"):
        check(bad)
    with pytest.raises(ConfigError, match=f"chunk {field}"):
        SweepSpec(**{f"chunk_{field}": bad})


def test_a_caller_s_overrides_replace_the_options_it_was_given():
    base = TimingOptions(chunk=2, lead=1)
    got = timing_options(base, {"trail": 3})
    assert (got.chunk, got.lead, got.trail, got.hold_timeout_s) == (2, 1, 3, HOLD_TIMEOUT_S)
    assert timing_options(None, {}) == TimingOptions() and timing_options(base, {}) is base
    assert TimingOptions(chunk=np.int64(3), lead=np.int64(0)).lead == 0 and check_lead("random") == "random"
