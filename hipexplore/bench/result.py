"""What a sweep returns (``SweepResult``) and the callbacks it calls (``SweepHooks``).

A leaf of its own so that the sweep worker's parent side (``bench.worker``) and the cluster runner
can name these types without importing the sweep loop (``bench.run``), which imports them back
through ``bench.passes``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd


@dataclass
class SweepResult:
    samples: pd.DataFrame
    summary: pd.DataFrame
    metadata: dict[str, str]
    path: Path | None = None
    stopped: bool = False
    skipped: list[tuple] = field(default_factory=list)  #: (kernel, size, rotating, flush, timer) kept from the out file
    kept_from: str = ""  #: whose rows ``skipped`` are: "" this user's, else the other user's name (resume_from_others)

    @property
    def info(self) -> Any:
        """The metadata, typed (``bench.runinfo.RunInfo``: its units, its cluster, what it measured with)."""
        from .runinfo import RunInfo

        return RunInfo.from_metadata(self.metadata)


@dataclass(frozen=True)
class SweepProgress:
    """Where a running sweep stands, in (configuration, unit)s: ``done`` of ``total`` (a one-unit
    sweep's are its configurations; an adaptive sweep's total grows when extra units are planned),
    ``elapsed_s`` since this run started and ``left_s`` the time left at this run's pace (NaN before
    anything finished)."""

    done: int
    total: int
    elapsed_s: float
    left_s: float

    def text(self) -> str:
        """``12/42 (configuration, unit)s, 31 s, about 1 min 8 s left``."""
        left = "" if self.left_s != self.left_s else f", about {_duration(self.left_s)} left"
        return f"{self.done}/{self.total} (configuration, unit)s, {_duration(self.elapsed_s)}{left}"


def _duration(s: float) -> str:
    s = max(0.0, float(s))
    return f"{s:.0f} s" if s < 60 else f"{int(s // 60)} min {int(s % 60)} s"


@dataclass(frozen=True)
class SweepHooks:
    """Callbacks of a running sweep (all optional)."""

    on_result: Callable[[dict[str, Any]], None] | None = None
    on_samples: Callable[[pd.DataFrame], None] | None = None
    should_stop: Callable[[], bool] | None = None
    #: ``on_start(kernel, configuration)`` before each measurement (a sweep worker reports it, so a
    #: worker that dies names what it was measuring)
    on_start: Callable[[str, str], None] | None = None
    #: ``on_progress(SweepProgress)`` after each finished (configuration, unit)
    on_progress: Callable[["SweepProgress"], None] | None = None

    def started(self, where: Sequence[str]) -> None:
        if self.on_start is not None:
            self.on_start(where[0], where[1])

    def stop_now(self) -> bool:
        return self.should_stop is not None and bool(self.should_stop())


@dataclass(frozen=True)
class RunOptions:
    """How one sweep runs, beside what it measures (its ``SweepSpec``): the out file (``bench.io``) and
    whether to resume from it (from another user's only with ``resume_from_others``: ``io.check_owner``),
    the callbacks, the progress bar, the run's id and the command line recorded in its metadata."""

    out: str | os.PathLike | None = None
    resume: bool = True
    resume_from_others: bool = False
    hooks: SweepHooks | None = None
    progress: bool = True
    run_id: str | None = None
    command: str | Sequence[str] | None = None


__all__ = ["RunOptions", "SweepHooks", "SweepProgress", "SweepResult"]
