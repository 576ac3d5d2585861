"""``Recorder``: the parent's end of a running sweep — its results as they grow, its files, its hooks.

Why apart from the unit that measures (``bench.sweeprun``): the process that measures may be a
worker (a faulting kernel must not take the caller down) or one pass among several; the process
that owns the out file, the caller's hooks and the progress bar is always the caller's. A unit
reports through the ``Channel`` interface, which this class implements in-process and which a
sweep worker's pipe relays to it (``bench.worker``), so both see exactly the same calls.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..schema import SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration
from .io import Previous, samples_frame, summary_frame, write_results
from .result import SweepHooks, SweepResult


class Recorder:
    """Previous rows plus what the units add; rewritten to ``paths`` (when given; after every change
    when ``write``, else only by ``write(final=True)``), as one unit (``bench.io``); hooks and the progress bar called as rows come."""

    def __init__(self, metadata: dict[str, str], *, previous: Previous | None = None, paths: tuple[Path, Path, Path] | None = None,
                 hooks: SweepHooks | None = None, total: int = 0, progress: bool = False, write: bool = True,
                 columns: tuple[Sequence[str], Sequence[str]] = (SAMPLE_COLUMNS, SUMMARY_COLUMNS)) -> None:
        self.metadata = metadata
        self.paths = paths
        self.live = write  # rewrite the files after every change (a sweep in passes writes once, at the end)
        self.hooks = hooks or SweepHooks()
        self.columns = columns
        self.samples: list[pd.DataFrame] = [previous.samples] if previous is not None and len(previous.samples) else []
        self.rows: list[dict[str, Any]] = previous.summary.to_dict("records") if previous is not None else []
        done = len(previous.done) if previous is not None else 0
        self.bar = _progress(total, progress, done_count=min(done, total))

    # -- the Channel a unit reports through --------------------------------------------------------
    def started(self, where: list[str]) -> None:
        self.hooks.started(where)

    def stop_now(self) -> bool:
        return self.hooks.stop_now()

    def meta(self, entries: dict[str, str]) -> None:
        self.metadata.update(entries)

    def add(self, rows: pd.DataFrame, row: dict[str, Any]) -> None:
        self.samples.append(rows)
        self.rows.append(row)
        self.write()
        if self.hooks.on_samples is not None:
            self.hooks.on_samples(rows.copy())
        if self.hooks.on_result is not None:
            self.hooks.on_result(dict(row))
        self.bar.update(1)

    def add_group(self, samples: pd.DataFrame, rows: list[dict[str, Any]]) -> None:
        """Several configurations at once (a cluster group): recorded, written once, hooks called."""
        self.samples.append(samples)
        self.rows.extend(rows)
        self.write()
        if self.hooks.on_samples is not None:
            self.hooks.on_samples(samples.copy())
        for r in rows:
            if self.hooks.on_result is not None:
                self.hooks.on_result(dict(r))
            self.bar.update(1)

    def update(self, rows: list[dict[str, Any]]) -> None:
        """Summary rows measured earlier, filled in again (their biases, once the reference is whole)."""
        new = {Configuration.of(r): r for r in rows}
        self.rows = [new.get(Configuration.of(r), r) for r in self.rows]

    # -- the parent's own --------------------------------------------------------------------------
    def write(self, final: bool = False) -> None:
        """The files, after a change when ``live``; ``final``: the last write, live or not."""
        if self.paths is not None and (self.live or final):
            write_results(self.paths, self.samples, self.rows, self.metadata, columns=self.columns)

    def close(self) -> None:
        self.bar.close()

    def result(self, stopped: bool = False, skipped: list[tuple] | None = None) -> SweepResult:
        return SweepResult(samples_frame(self.samples, self.columns[0]), summary_frame(self.rows, self.columns[1]), self.metadata,
                           self.paths[0] if self.paths else None, stopped, list(skipped or []))


class _NullBar:
    def update(self, k: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


def _progress(total: int, enabled: bool, done_count: int) -> Any:
    if not enabled:
        return _NullBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NullBar()
    return tqdm(total=total, initial=done_count, desc="hipexplore sweep", unit="config", leave=False)


__all__ = ["Recorder"]
