"""hipexplore.verdict_scenarios: the compile-cache A/B, replay scenarios against a base with the
time saved, the ratio's interval over repeated passes and the verdict of the same rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hipexplore.errors import ConfigError
from hipexplore.verdict_scenarios import compare_scenarios, saving_text


def replay_frame(totals: dict[str, list[float]], requests: int = 10) -> pd.DataFrame:
    rows = []
    for scenario, per_pass in totals.items():
        for rnd, total in enumerate(per_pass):
            for i in range(requests):
                rows.append({"scenario": scenario, "round": rnd, "seq": i, "lookup_seconds": total / requests})
    return pd.DataFrame(rows)


def test_cache_scenarios_are_verdicts_with_intervals_over_passes() -> None:
    frame = replay_frame(
        {"off": [10.0, 10.1, 9.95, 10.05], "memory": [2.0, 2.1, 1.9, 2.05], "disk": [10.02, 9.98, 10.05, 10.0]}
    )
    c = compare_scenarios(frame, "off").set_index("scenario")
    mem = c.loc["memory"]
    assert mem["verdict"] == "faster"
    assert mem["saved_s"] == pytest.approx(10.025 - 2.0125)
    assert mem["saved_ci_low_s"] < mem["saved_s"] < mem["saved_ci_high_s"]
    assert mem["saved_ci_high_s"] - mem["saved_ci_low_s"] < 0.6
    assert "4 passes" in mem["interval_over"]
    assert c.loc["disk", "verdict"] == "same"
    assert "saves 8.01 s ±" in saving_text({**mem.to_dict(), "scenario": "memory"})
    one = compare_scenarios(replay_frame({"off": [10.0], "memory": [2.0]}), "off")
    assert "requests resampled" in one["interval_over"].iloc[0]
    with pytest.raises(ConfigError, match="no scenario 'remote'"):
        compare_scenarios(frame, "off", "remote")


def replay(totals: dict[str, list[float]], requests: int = 5) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"scenario": s, "round": r, "seq": i, "lookup_seconds": t / requests}
            for s, per in totals.items()
            for r, t in enumerate(per)
            for i in range(requests)
        ]
    )


def test_the_replay_ratio_is_welch_over_log_pass_totals():
    # the H200's two ideal passes: 40.3 s and 29.1 s; a memory pass against them
    c = compare_scenarios(replay({"ideal": [40.3, 29.1], "memory": [33.0, 32.4]}), "ideal").iloc[0]
    ln, lb = np.log([33.0, 32.4]), np.log([40.3, 29.1])
    se = math.sqrt(ln.var(ddof=1) / 2 + lb.var(ddof=1) / 2)
    vn, vb = ln.var(ddof=1) / 2, lb.var(ddof=1) / 2
    df = (vn + vb) ** 2 / (vn**2 + vb**2)  # Welch-Satterthwaite with n - 1 = 1 on each side
    assert 1 <= df < 2  # floored to 1: t(0.975, 1) = 12.706
    d = ln.mean() - lb.mean()
    assert c["ratio_ci_low"] == pytest.approx(math.exp(d - 12.7062 * se), rel=1e-4)
    assert c["ratio_ci_high"] == pytest.approx(math.exp(d + 12.7062 * se), rel=1e-4)
    assert 0 < c["ratio_ci_low"] < 1 < c["ratio_ci_high"] and c["verdict"] == "undecided"
    assert c["change_called"] == "none"
    # many alternated passes: a resolved saving
    many = compare_scenarios(
        replay({"off": [10.0, 10.1, 9.95, 10.05, 10.02], "memory": [9.0, 9.1, 8.95, 9.05, 9.0]}), "off"
    ).iloc[0]
    assert many["verdict"] == "faster" and many["change_called"] == "faster" and 0.88 < many["ratio_ci_low"] < 0.9
