"""What every figure of ``plots`` is drawn with: its axes (a ``Figure`` not registered with pyplot),
the one (kernel, size) a noise figure compares settings on, a colour per flush mode, the time unit
its axis reads in, sizes in words and data text drawn literally.

Why a module of its own: the figure families (``bench_plots``, ``cache_plots``) and the report's own
figures (``rotating_need``) share these, and none of them needs the others' figures.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .errors import ConfigError
from .schema import Configuration, require_columns

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def _require(frame: Any, columns: Iterable[str], what: str) -> pd.DataFrame:
    return require_columns(frame, columns, what)


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _select(frame: pd.DataFrame, column: str, value: Any, what: str) -> pd.DataFrame:
    """Rows with ``column == value``; with ``value=None`` the column must hold a single value."""
    values = list(pd.unique(frame[column]))
    if value is None:
        if len(values) > 1:
            raise ConfigError(f"{what} holds several {column} values {sorted(values)}; pass {column}= one of them")
        return frame
    out = frame[frame[column] == value]
    if out.empty:
        raise ConfigError(f"{what} has no rows with {column}={value!r}; it holds {sorted(values)}")
    return out


def one_configuration(
    frame: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None, what: str = "frame"
) -> pd.DataFrame:
    """Rows of one (kernel, size): the unit the noise figures compare rotating/flush settings on."""
    from .bench.grouping import check_one_device

    _require(frame, ("kernel", "size_bytes"), what)
    return check_one_device(_select(_select(frame, "kernel", kernel, what), "size_bytes", size_bytes, what), what)


def flush_colors(modes: Iterable[str]) -> dict[str, str]:
    """A stable colour per flush mode (sorted order), grey for the cold reference."""
    out: dict[str, str] = {}
    i = 0
    for mode in sorted(set(modes)):
        if Configuration.marks_reference(mode):
            out[mode] = "#7f7f7f"
        else:
            out[mode] = _PALETTE[i % len(_PALETTE)]
            i += 1
    return out


def time_unit(seconds: Sequence[float] | np.ndarray | pd.Series) -> tuple[float, str]:
    """(scale, label) so that ``seconds * scale`` reads in ns, µs, ms or s."""
    arr = np.asarray(seconds, dtype=float)
    arr = arr[np.isfinite(arr)]
    typical = float(np.median(np.abs(arr))) if arr.size else 1.0
    for scale, label in ((1e9, "ns"), (1e6, "µs"), (1e3, "ms")):
        if typical * scale < 1000:
            return scale, label
    return 1.0, "s"


def format_bytes(n: float) -> str:
    from .readable import format_bytes as fmt

    return fmt(n)


def plain_text(text: Any) -> str:
    """``text`` as matplotlib draws it literally: every ``$`` escaped.

    Why: kernel names, device names, flush modes and file names in a figure come from run files,
    and matplotlib reads text between two ``$`` as mathtext; ``k$\\foo$`` in a recorded kernel
    name would make drawing the figure raise, and the whole report with it."""
    return str(text).replace("$", r"\$")


__all__ = ["flush_colors", "format_bytes", "one_configuration", "plain_text", "time_unit"]
