"""What a sweep returns (``SweepResult``) and the callbacks it calls (``SweepHooks``).

A leaf of its own so that the sweep worker's parent side (``bench.worker``) and the cluster runner
can name these types without importing the sweep loop (``bench.run``), which imports them back
through ``bench.passes``.
"""
from __future__ import annotations

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


@dataclass(frozen=True)
class SweepHooks:
    """Callbacks of a running sweep (all optional)."""

    on_result: Callable[[dict[str, Any]], None] | None = None
    on_samples: Callable[[pd.DataFrame], None] | None = None
    should_stop: Callable[[], bool] | None = None
    #: ``on_start(kernel, configuration)`` before each measurement (a sweep worker reports it, so a
    #: worker that dies names what it was measuring)
    on_start: Callable[[str, str], None] | None = None

    def started(self, where: Sequence[str]) -> None:
        if self.on_start is not None:
            self.on_start(where[0], where[1])

    def stop_now(self) -> bool:
        return self.should_stop is not None and bool(self.should_stop())


__all__ = ["SweepHooks", "SweepResult"]
