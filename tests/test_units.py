"""hipexplore.units: the old name of hipexplore.readable, kept until bench/ moves (bench/sweeprun.py and
bench/rotating.py import format_bytes from it); it re-exports readable's names, the same objects."""
from __future__ import annotations

import pytest

import hipexplore.readable as readable
import hipexplore.units as units


@pytest.mark.timeout(30)
def test_the_old_name_re_exports_the_same_objects():
    public = {n for n in vars(readable) if not n.startswith("_") and n not in ("annotations", "math", "Any")}
    assert public >= {"format_bytes", "format_percent", "format_number", "format_p", "RELATIVE_COLUMNS"}
    assert {n: getattr(units, n) for n in public} == {n: getattr(readable, n) for n in public}
    assert units.format_bytes(268435456) == "256 MiB"
