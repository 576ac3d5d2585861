"""Ctrl-C and SIGTERM during a sweep: held while a (configuration, unit) is written, and never lost.

Why this module: an interrupt must end a sweep between two (configuration, unit)s, with what
finished on disk (``bench.record``). Two ways it went wrong, both seen:

- a signal landing between the units file and the summary left a pair the reader does not count
  (the rerun measured it again): ``held()`` defers SIGINT/SIGTERM while a pair is written;
- a cluster sweep Ctrl-C'd in CI ran to the end and exited 0 (1 of ~1700 tests, under load): the
  earlier hold blocked the signals with ``pthread_sigmask``, which only the calling thread obeys
  (the signal goes to a Dask thread instead) and which every thread or process started inside the
  hold inherits. ``held()`` now swaps the Python handlers for a recorder and runs the original
  handler once the write is whole: a handler only ever runs on the main thread, so nothing depends
  on which thread the kernel picked. And a signal the command's handler saw is ``note``d: the
  orchestrator calls ``check()`` at each (configuration, unit) boundary, so an interrupt whose
  ``KeyboardInterrupt`` was swallowed on the way (a ``__del__``, a library's broad ``except``)
  still ends the sweep at the next boundary instead of never.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_NOTED: dict[str, int | None] = {"signal": None}
_HOLDING = {"depth": 0}  # held() blocks open on the main thread: an inner one leaves the outer's recorder in place


def note(signum: int) -> None:
    """A sweep's command received ``signum`` (its handler calls this before raising)."""
    _NOTED["signal"] = int(signum)


def noted() -> int | None:
    """The signal noted since the last ``clear()``, if any."""
    return _NOTED["signal"]


def clear() -> None:
    """Forget a noted signal (a sweep starts; a command's handler is removed)."""
    _NOTED["signal"] = None


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a signal was noted: called between (configuration, unit)s."""
    if _NOTED["signal"] is not None:
        raise KeyboardInterrupt(f"signal {_NOTED['signal']}")


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """SIGINT and SIGTERM deferred while the block runs (a pair being written), then delivered
    to the handler that was installed: ``KeyboardInterrupt`` right after the block, not inside it.
    Off the main thread (no handler can run there), or inside another ``held()`` (whose recorder
    stays: an inner one took it for the handler to deliver to, and an ignored SIGINT became a noted
    one that ended the sweep), the block runs as it is."""
    if not _main() or _HOLDING["depth"]:
        yield
        return
    got: list[int] = []

    def later(signum: int, _frame: Any) -> None:
        got.append(signum)
        if old.get(signum) != signal.SIG_IGN:
            note(signum)

    old: dict[int, Any] = {}
    _HOLDING["depth"] += 1
    try:
        for s in SIGNALS:
            if signal.getsignal(s) is not None:  # None: a handler installed from C, left alone
                old[s] = signal.signal(s, later)
        yield
    finally:
        _HOLDING["depth"] -= 1
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            _deliver(got[0], old[got[0]])


def _deliver(signum: int, handler: Any) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)  # the default action (SIGTERM: the process ends), as it would have


__all__ = ["SIGNALS", "check", "clear", "held", "note", "noted"]
