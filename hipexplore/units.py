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
    try:
        v = float(fraction)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(v):
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
