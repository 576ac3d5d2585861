"""The decision rule of a verdict and the words it is told in (``verdicts``' module docstring says
why a rule on an interval and not a p-value).

On an interval of the ratio new / base and a practical threshold (default 2%):

* ``faster`` / ``slower``: the whole interval lies below ``1 - threshold`` / above ``1 + threshold``;
* ``same``: the whole interval lies within ``[1 - threshold, 1 + threshold]``;
* ``undecided``: otherwise.

Beside it, ``change_called`` names the measured change whenever its interval excludes 1, whatever
the threshold. Kept apart from the comparisons so that the tables, reports and the calibration that
only word a verdict import neither pandas' grouping nor the interval statistics.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .errors import ConfigError

DEFAULT_THRESHOLD = 0.02
VERDICTS = ("faster", "slower", "same", "undecided")


def size_text(n: float) -> str:
    """Bytes human-readable (``64 KiB``), as ``plots.format_bytes`` writes them, without matplotlib
    (the GPU machine, where verdict tables are printed, has none)."""
    n = float(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def check_threshold(threshold: Any) -> float:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
        or not 0 < threshold < 1
    ):
        raise ConfigError(f"threshold must be a fraction in (0, 1) (0.02 is 2%), got {threshold!r}")
    return float(threshold)


def verdict(low: float, high: float, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The decision rule (module docstring) on an interval of the ratio new / base."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if high < 1 - threshold:
        return "faster"
    if low > 1 + threshold:
        return "slower"
    if low >= 1 - threshold and high <= 1 + threshold:
        return "same"
    return "undecided"


#: ``change_called`` of a row: the direction of the measured change whenever its interval excludes 1,
#: whatever the threshold says (the second answer beside ``verdict``; "none": the interval holds 1)
CHANGES = ("faster", "slower", "none")


def change_called(low: float, high: float) -> str:
    """The measured change's direction: ``slower`` / ``faster`` when the whole interval of new / base
    lies above / below 1, else ``none``. Why beside ``verdict``: a change of +1.2% measured to ±0.1%
    is ``same`` at a 2% threshold, and a reviewer told only "same" hears "no change" (pyperf reports
    every significant change with its size and judges it against ``--min-speed`` separately)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "none"
    return "slower" if low > 1 else "faster" if high < 1 else "none"


def change_text(row: Mapping[str, Any], threshold: float = DEFAULT_THRESHOLD) -> str:
    """Both answers of a compared row in words: ``slower by 1.2% [+1.1%, +1.3%] — below the 2%
    threshold``; ``no measurable change: +0.1% [-0.3%, +0.4%] — within ±2%``."""
    t = _thr(threshold)
    lo, hi, v = float(row["ratio_ci_low"]), float(row["ratio_ci_high"]), str(row["verdict"])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{row['change']:+.1%} (no interval: too few units) — {v}"
    ci = f"[{lo - 1:+.1%}, {hi - 1:+.1%}]"
    called = change_called(lo, hi)
    if called == "none":
        judged = {"same": f"within ±{t}", "undecided": f"the interval reaches past ±{t}: undecided"}.get(v, v)
        return f"no measurable change: {row['change']:+.1%} {ci} — {judged}"
    judged = {
        "same": f"below the {t} threshold",
        "faster": f"past the {t} threshold",
        "slower": f"past the {t} threshold",
    }.get(v, f"not resolved against the {t} threshold: undecided")
    return f"{called} by {abs(row['change']):.1%} {ci} — {judged}"


def _thr(threshold: float) -> str:
    """``2%`` for 0.02, ``2.5%`` for 0.025."""
    return f"{threshold:.0%}" if round(threshold * 100, 6) == round(threshold * 100) else f"{threshold:.1%}"


def rule_text(threshold: float = DEFAULT_THRESHOLD) -> str:
    t = _thr(threshold)
    return (
        f"faster/slower only when the 95% interval of new/base lies wholly below -{t} / above +{t}; "
        f"same when it lies wholly within ±{t}; otherwise undecided. Beside it, the measured change is named "
        f"(faster/slower) whenever its interval excludes no change, whatever its size"
    )


__all__ = [
    "CHANGES",
    "DEFAULT_THRESHOLD",
    "VERDICTS",
    "change_called",
    "change_text",
    "check_threshold",
    "rule_text",
    "size_text",
    "verdict",
]
