"""A running sweep's progress, in (configuration, unit)s, with the time left.

Why a unit of progress smaller than a configuration: a sweep in units (3 by default) finishes a
configuration only with its last unit, so a bar counting configurations sat at 0/42 for most of a
run. The orchestrator (``bench.orchestrator``) calls ``advance()`` after every finished
(configuration, unit); the bar (tqdm, on stderr: the CLI's and a notebook's) and the
``on_progress`` hook (the sweep panel) both show it, with the time left at this run's pace.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from .result import SweepProgress


class Progress:
    """``done`` of ``total`` (configuration, unit)s; ``bar``: show a tqdm bar; ``hook``: called with a
    ``SweepProgress`` after every step (``clock``: for tests)."""

    def __init__(
        self,
        total: int,
        done: int = 0,
        *,
        bar: bool = False,
        units: bool = False,
        hook: Callable[[SweepProgress], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.total, self.done, self.start = int(total), min(int(done), int(total)), min(int(done), int(total))
        self.hook, self.clock = hook, clock
        self.t0 = clock()
        self.bar = _bar(self.total, self.done, "config" if not units else "config-unit") if bar else None

    def state(self) -> SweepProgress:
        elapsed = self.clock() - self.t0
        ran = self.done - self.start
        left = elapsed / ran * (self.total - self.done) if ran > 0 else math.nan
        return SweepProgress(self.done, self.total, elapsed, left)

    def grow(self, more: int) -> None:
        """More steps planned (an adaptive sweep's extra units)."""
        if more > 0:
            self.total += int(more)
            if self.bar is not None:
                self.bar.total = self.total
                self.bar.refresh()

    def advance(self, k: int = 1) -> None:
        self.count(k)
        self.show()

    def count(self, k: int = 1) -> None:
        """``k`` more steps done (the bar moves; the hook is ``show``'s): counted with the write that kept them."""
        self.done = min(self.total, self.done + k)
        if self.bar is not None:
            self.bar.update(k)

    def show(self) -> None:
        """The hook, with the state now."""
        if self.hook is not None:
            self.hook(self.state())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _bar(total: int, done: int, unit: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, initial=done, desc="hipexplore sweep", unit=unit, leave=False)


__all__ = ["Progress"]
