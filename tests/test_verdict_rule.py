"""hipexplore.verdict_rule: the decision rule on an interval of new / base, the measured change
named beside it, and the words both are told in."""

from __future__ import annotations

import math

import pytest

from hipexplore.errors import ConfigError
from hipexplore.verdict_rule import change_called, change_text, check_threshold, rule_text, verdict


def test_the_decision_rule() -> None:
    assert verdict(0.90, 0.97) == "faster"
    assert verdict(1.03, 1.2) == "slower"
    assert verdict(0.99, 1.015) == "same"
    assert verdict(0.97, 1.01) == "undecided"  # crosses -2%
    assert verdict(0.95, 1.05) == "undecided"
    assert verdict(1.01, 1.05, threshold=0.005) == "slower"
    assert verdict(float("nan"), 1.0) == "undecided"


def test_sizes_read_the_same_in_the_cli_and_the_plots() -> None:
    from hipexplore.plots import format_bytes
    from hipexplore.verdicts import size_text

    for n in (1, 1000, 4096, 65536, 1.5 * 2**20, 2**30, 3 * 2**30 + 1):
        assert size_text(n) == format_bytes(n)


def test_the_change_named_whenever_its_interval_excludes_one():
    assert change_called(1.011, 1.013) == "slower" and change_called(0.98, 0.999) == "faster"
    assert change_called(0.99, 1.01) == "none" and change_called(math.nan, math.nan) == "none"
    assert change_called(1.0, 1.02) == "none"  # a bound at exactly no change: not excluded
    row = {"change": 0.023, "ratio_ci_low": 1.019, "ratio_ci_high": 1.027, "verdict": "undecided"}
    assert change_text(row) == "slower by 2.3% [+1.9%, +2.7%] — not resolved against the 2% threshold: undecided"
    row = {"change": 0.004, "ratio_ci_low": 0.97, "ratio_ci_high": 1.04, "verdict": "undecided"}
    assert change_text(row) == "no measurable change: +0.4% [-3.0%, +4.0%] — the interval reaches past ±2%: undecided"
    row = {"change": 0.3, "ratio_ci_low": math.nan, "ratio_ci_high": math.nan, "verdict": "undecided"}
    assert change_text(row) == "+30.0% (no interval: too few units) — undecided"
    assert change_text(
        {"change": 0.03, "ratio_ci_low": 1.02, "ratio_ci_high": 1.04, "verdict": "same"}, threshold=0.05
    ).endswith("below the 5% threshold")


def test_a_threshold_is_a_fraction_strictly_between_zero_and_one() -> None:
    assert check_threshold(0.02) == 0.02 and isinstance(check_threshold(1 - 0.5), float)
    for bad in (0, 1, 2, -0.1, math.nan, math.inf, True, "2%", None):
        with pytest.raises(ConfigError, match="threshold must be a fraction in"):
            check_threshold(bad)


def test_the_rule_in_words_names_its_threshold() -> None:
    assert "wholly below -2% / above +2%" in rule_text() and "within ±2%" in rule_text()
    assert "wholly below -2.5% / above +2.5%" in rule_text(0.025)
    assert "the measured change is named (faster/slower) whenever its interval excludes no change" in rule_text()
