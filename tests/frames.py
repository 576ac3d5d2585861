"""Synthetic sweep frames shared by test files (the plots' and the report's tests draw the same one)."""

from __future__ import annotations

import pandas as pd


def summary_rows(sizes=(1 << 16, 1 << 18), rotating=(1, 2, 342), flush=("none", "l2-read")) -> pd.DataFrame:
    """A summary frame of the triad: one row per (size, flush, rotating); 342 sets read as ``auto``.
    Median, IQR and bias grow with the rotating count, so a plot or table that mixes rows up shows it."""
    rows = []
    for size in sizes:
        for f in flush:
            for i, r in enumerate(rotating):
                rows.append(
                    dict(
                        kernel="triad",
                        size_bytes=size,
                        rotating=r,
                        rotating_requested="auto" if r > 100 else str(r),
                        flush=f,
                        median_s=1e-5 * (i + 1),
                        iqr_rel=0.05 * (i + 1),
                        bias=0.1 * i - 0.05,
                        reference_median_s=1e-5,
                        cv=0.02,
                        n=400,
                    )
                )
    return pd.DataFrame(rows)
