"""hipexplore.panel_fields: the sweep panel's text fields read by the sweep's own parsers, and the
choices its dropdowns offer."""

from __future__ import annotations

import pytest

from hipexplore.errors import ConfigError
from hipexplore.panel_fields import _kernel_choices, _resolution, parse_rotating, parse_size, parse_sizes


def test_parsers_accept_units_lists_and_auto():
    assert parse_size("16MiB") == 16 << 20
    assert parse_size("512k") == 512 << 10
    assert parse_size(4096) == 4096
    assert parse_sizes("256KiB, 1 MiB") == [256 << 10, 1 << 20]
    assert parse_rotating("1, 2 4,auto") == [1, 2, 4, "auto"]
    for bad, match in (("0", "positive integer or 'auto'"), ("two", "'two'"), ("", "empty")):
        with pytest.raises(ConfigError, match=match):
            parse_rotating(bad)
    with pytest.raises(ConfigError, match="'12 parsecs'"):
        parse_sizes("12 parsecs")


def test_the_resolution_field_is_the_sweeps_check_of_one_value():
    assert _resolution("1%") == pytest.approx(0.01) and _resolution(" 0.02 ") == pytest.approx(0.02)
    with pytest.raises(ConfigError, match="'60%'"):
        _resolution("60%")


def test_the_kernel_dropdown_offers_the_streaming_kernels_only():
    """The harness's own helpers (flush-*, spin) and the GEMM family are not streaming kernels."""
    from hipexplore.kernels import names

    offered = _kernel_choices()
    assert "triad" in offered and set(offered) <= set(names())
    assert not [n for n in offered if n.startswith(("gemm", "flush-")) or n == "spin"]
