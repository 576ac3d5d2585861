"""How numbers read: one convention for every table, plot and command-line line.

Why a module: byte counts were printed raw (``268435456``, ``16106127360000 B``) in some places
and as ``256 MiB`` in others, and the relative spreads (``bias``, ``iqr_rel``, ``cv``) were
fractions in tables and percentages in plots. The convention: sizes in binary units
(``format_bytes``: ``256 MiB``, ``14.6 TiB``); relative figures as percentages
(``RELATIVE_COLUMNS`` are stored as fractions in the frames, shown ×100 with a ``%`` header).
"""

from __future__ import annotations

import math
from typing import Any

#: summary columns stored as fractions and shown as percentages
RELATIVE_COLUMNS = ("iqr_rel", "cv", "bias")

_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (not a number, NaN, infinite): every formatter's first step."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def format_bytes(n: Any) -> str:
    """``268435456`` -> ``'256 MiB'``; ``1536`` -> ``'1.5 KiB'``; ``512`` -> ``'512 B'``."""
    try:
        v = float(n)
    except (TypeError, ValueError):
        return str(n)
    if not math.isfinite(v):
        return "?"
    sign = "-" if v < 0 else ""
    v = abs(v)
    for unit, size in _BINARY:
        if v >= size:
            q = v / size
            return f"{sign}{q:g} {unit}" if q == int(q) else f"{sign}{q:.1f} {unit}"
    return f"{sign}{int(v)} B"


def format_percent(fraction: Any, digits: int = 1, signed: bool = False) -> str:
    """``0.0123`` -> ``'1.2%'`` (``'+1.2%'`` when ``signed``); NaN/None -> ``''``."""
    v = _finite(fraction)
    if v is None:
        return ""
    return f"{100 * v:{'+' if signed else ''}.{digits}f}%"


def percent_columns(frame: Any) -> Any:
    """A copy of ``frame`` with ``RELATIVE_COLUMNS`` ×100 and renamed ``iqr_rel_%``, ``cv_%``,
    ``bias_%`` (the display form; the stored frames keep fractions)."""
    out = frame.copy()
    for c in RELATIVE_COLUMNS:
        if c in out.columns:
            out[c] = out[c].astype(float) * 100
    return out.rename(columns={c: f"{c}_%" for c in RELATIVE_COLUMNS if c in out.columns})


def format_number(value: Any, digits: int = 3, trim: bool = False) -> str:
    """A number in fixed notation with at least ``digits`` significant digits, never an exponent:
    ``1040.3`` -> ``'1040'``, ``12.345`` -> ``'12.3'``, ``-0.001654`` -> ``'-0.00165'``; NaN -> ``''``.

    Why not ``.3g``: it writes 1040 µs as ``1.04e+03``, which a reviewer has to decode, and
    loses the digits that tell an interval's ends apart. ``trim`` drops trailing zeros (``2`` for
    ``2.00``), as ``g`` would, for a figure's annotation."""
    v = _finite(value)
    if v is None:
        return ""
    text = f"{v:.{_decimals(v, digits)}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text


def _decimals(v: float, digits: int) -> int:
    if v == 0:
        return 0
    return max(0, digits - 1 - math.floor(math.log10(abs(v))))


def format_interval(mid: Any, low: Any, high: Any, digits: int = 3) -> str:
    """``'1040 [1035, 1046]'``: a value and its interval at one precision (the value's, see
    ``format_number``), with more decimals (up to three more) where the ends would otherwise read
    the same as the value although they differ."""
    got = _interval_texts(mid, low, high, digits)
    return f"{got[0]} [{got[1]}, {got[2]}]" if got else ""


def format_bounds(mid: Any, low: Any, high: Any, digits: int = 3) -> str:
    """``'[1035, 1046]'``: an interval alone, at the precision ``format_interval`` gives it beside ``mid``."""
    got = _interval_texts(mid, low, high, digits)
    return f"[{got[1]}, {got[2]}]" if got else ""


def _interval_texts(mid: Any, low: Any, high: Any, digits: int) -> tuple[str, str, str] | None:
    try:
        m, lo, hi = float(mid), float(low), float(high)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(m):
        return None
    d = _decimals(m, digits)
    ends = [x for x in (lo, hi) if math.isfinite(x) and x != m]
    for extra in range(4):
        if all(f"{x:.{d + extra}f}" != f"{m:.{d + extra}f}" for x in ends):
            break
    d += extra
    show = lambda x: f"{x:.{d}f}" if math.isfinite(x) else "?"  # noqa: E731
    return show(m), show(lo), show(hi)


def format_p(p: Any) -> str:
    """A p-value as a reader uses it: ``0.012``, ``0.43``; below 0.001 ``'< 0.001'``.

    Why a floor: thousands of chunk-correlated samples give p-values such as 2.5e-52 (the
    samples are not independent, so the test's p is too small); beyond "below 0.001" the digits
    carry no information."""
    v = _finite(p)
    if v is None:
        return ""
    return "< 0.001" if v < 0.001 else f"{v:.2g}"
