"""Device-aware grouping: configurations are comparable only on identical devices.

Why: a cluster sweep (``bench.cluster``) can put an H200 and an MI300X, or a GPU and the host, in
one file. A median pooled over two device kinds describes neither, and a bias against a reference
taken on another kind of device is meaningless. So every figure and table of one configuration
refuses frames that hold more than one ``device_name`` (a ``ConfigError`` naming both), the
run-to-run comparison keys on ``device_name``, and the report shows one device kind at a time.
Workers of the *same* kind (two H200s) may be compared: ``per_gpu`` lays their medians side by
side and says whether their intervals agree.
"""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from ..errors import ConfigError
from ..schema import Configuration


def device_names(frame: pd.DataFrame) -> list[str]:
    """The device kinds of a frame, by rows (most first); [] when it has no ``device_name``."""
    if "device_name" not in frame.columns or frame.empty:
        return []
    return [str(n) for n in frame["device_name"].value_counts(sort=True).index]


def check_one_device(frame: pd.DataFrame, what: str = "frame") -> pd.DataFrame:
    """``frame`` when it holds one device kind; else a ConfigError naming two of them."""
    names = device_names(frame)
    if len(names) > 1:
        raise ConfigError(
            f"{what} holds samples from different device kinds ({names[0]!r} and {names[1]!r}"
            f"{f' and {len(names) - 2} more' if len(names) > 2 else ''}); they are not pooled: "
            f"select one device_name (bench.grouping.by_device)"
        )
    return frame


def by_device(frame: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """(device_name, its rows) per device kind, most rows first."""
    for name in device_names(frame):
        yield name, frame[frame["device_name"].astype(str) == name]


def per_gpu(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (device kind, configuration) measured by several workers/GPUs of that kind:
    ``gpus``, ``medians_s`` (per gpu), ``spread_rel`` ((max - min) / min of the medians) and
    ``agree`` (every pair of 95% intervals overlaps)."""
    need = [*Configuration.COLUMNS, "device_name", "median_s", "ci_low_s", "ci_high_s"]
    missing = [c for c in need if c not in summary.columns]
    if missing:
        raise ConfigError(f"per_gpu needs summary columns {missing}")
    who = "gpu" if "gpu" in summary.columns else "worker"
    rows = []
    for (name, *key), g in summary.groupby(["device_name", *Configuration.COLUMNS], sort=False, dropna=False):
        if g[who].nunique() < 2:
            continue
        meds = {str(w): float(m) for w, m in zip(g[who], g["median_s"])}
        agree = bool(g["ci_low_s"].max() <= g["ci_high_s"].min())
        rows.append(
            {
                "device_name": name,
                **dict(zip(Configuration.COLUMNS, key)),
                "gpus": len(meds),
                "medians_s": meds,
                "spread_rel": (max(meds.values()) - min(meds.values())) / min(meds.values())
                if min(meds.values()) > 0
                else float("nan"),
                "agree": agree,
            }
        )
    return pd.DataFrame(
        rows, columns=["device_name", *Configuration.COLUMNS, "gpus", "medians_s", "spread_rel", "agree"]
    )


__all__ = ["by_device", "check_one_device", "device_names", "per_gpu"]
