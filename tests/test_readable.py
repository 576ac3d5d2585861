"""hipexplore.readable: how numbers read in every table, plot and command-line line: binary sizes,
percentages from fractions, fixed-notation numbers that never turn into exponents, intervals whose
ends read apart from their value, and p-values floored at 0.001."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hipexplore.readable import (
    RELATIVE_COLUMNS,
    format_bounds,
    format_bytes,
    format_interval,
    format_number,
    format_p,
    format_percent,
    percent_columns,
)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (268435456, "256 MiB"),
        (16106127360000, "14.6 TiB"),
        (1 << 30, "1 GiB"),
        (-2048, "-2 KiB"),
        (3 * (1 << 20) + 1, "3.0 MiB"),
        ("4096", "4 KiB"),
        (math.nan, "?"),
        (math.inf, "?"),
        ("big", "big"),
        (None, "None"),
    ],
)
def test_format_bytes_in_binary_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.timeout(30)
def test_format_percent_from_fractions():
    assert format_percent(0.0123) == "1.2%" and format_percent(0.0123, signed=True) == "+1.2%"
    assert format_percent(-0.05, signed=True) == "-5.0%" and format_percent(0.5, digits=0) == "50%"
    assert format_percent(math.nan) == format_percent(None) == format_percent("x") == format_percent(math.inf) == ""


@pytest.mark.timeout(30)
def test_percent_columns_scale_and_rename_only_the_relative_ones():
    frame = pd.DataFrame({"iqr_rel": [0.01, 0.2], "cv": [0.5, None], "median_s": [1e-6, 2e-6]})
    out = percent_columns(frame)
    assert list(out.columns) == ["iqr_rel_%", "cv_%", "median_s"] and "bias" in RELATIVE_COLUMNS
    assert out["iqr_rel_%"].tolist() == pytest.approx([1.0, 20.0]) and out["median_s"].tolist() == [1e-6, 2e-6]
    assert math.isnan(out["cv_%"].iloc[1])
    assert list(frame.columns) == ["iqr_rel", "cv", "median_s"] and frame["iqr_rel"].iloc[0] == 0.01  # a copy


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "value, text",
    [
        (1040.3, "1040"),
        (12.345, "12.3"),
        (-0.001654, "-0.00165"),
        (0, "0"),
        (1.0, "1.00"),
        (123456789.0, "123456789"),
        (9.9996, "10.00"),
        (2e-9, "0.00000000200"),
    ],
)
def test_format_number_is_fixed_notation_with_the_significant_digits(value, text):
    assert format_number(value) == text and "e" not in text


@pytest.mark.timeout(30)
def test_format_number_trim_and_missing_values():
    assert (
        format_number(2.0, trim=True) == "2"
        and format_number(2.50, trim=True) == "2.5"
        and format_number(1040, trim=True) == "1040"
    )
    assert format_number(math.nan) == format_number(None) == format_number("n/a") == ""
    assert format_number(12.345, digits=5) == "12.345"


@pytest.mark.timeout(30)
def test_intervals_gain_decimals_only_where_the_ends_would_read_as_the_value():
    assert format_interval(1040.3, 1035.2, 1046.0) == "1040 [1035, 1046]"
    assert format_interval(10.0, 9.98, 10.03) == "10.00 [9.98, 10.03]"  # "10.0 [10.0, 10.0]" would hide the spread
    assert format_bounds(10.0, 9.98, 10.03) == "[9.98, 10.03]"
    assert format_interval(5.0, 5.0, 5.0) == "5.00 [5.00, 5.00]"  # ends equal to the value: no extra digits
    assert format_interval(1.0, 1.0 - 1e-12, 1.0 + 1e-12) == "1.00000 [1.00000, 1.00000]"  # at most three more decimals
    assert format_interval(2.0, math.nan, 2.5) == "2.00 [?, 2.50]"
    assert format_interval(math.nan, 1, 2) == format_bounds("x", 1, 2) == ""


@pytest.mark.timeout(30)
def test_p_values_floor_at_a_thousandth():
    assert format_p(2.5e-52) == "< 0.001" and format_p(0.0009999) == "< 0.001"
    assert (
        format_p(0.001) == "0.001" and format_p(0.0123) == "0.012" and format_p(0.43) == "0.43" and format_p(1.0) == "1"
    )
    assert format_p(math.nan) == format_p(None) == ""
