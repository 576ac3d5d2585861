"""The sweep's default numbers, in a module that imports nothing.

``SweepSpec``'s field defaults come from here, and ``hipexplore bench --help`` shows them: its parser
is built from ``SweepSpec``'s fields, so ``bench/spec.py`` is imported for every ``bench --help``. The
numbers lived beside the code that uses them (the timing loop, the rotating plan), and importing them
from there loaded that code and everything below it (the kernel catalog, the device layer, the
compiler front end: ~65 ms of a ~250 ms ``bench --help``; issue 48 item 6). They are still importable
from ``bench.timing`` and ``bench.rotating``.
"""

from __future__ import annotations

from typing import Any

#: Timed launches per stream hold: short chunks keep the queue depth behind every timed launch
#: equal (see ``bench.timing``'s docstring for the measurement that chose it).
DEFAULT_CHUNK = 4
#: Untimed launches at the head of each chunk: an int, or "random" (0 or 1 per chunk, seeded).
CHUNK_LEAD: int | str = "random"
#: Untimed samples (flush, events, kernel) after each chunk's last timed one: work queued behind it.
CHUNK_TRAIL = 1
#: Wall time of launches before each timed run (module load, first touch, clocks settle).
WARMUP_S = 0.02
#: The rotating buffer sets may take at most this fraction of the device's free memory.
DEFAULT_MEM_FRACTION = 0.5


def auto_or_count(value: Any) -> Any:
    """Text as a command line gives it: 'auto' (any case, spaces around) -> 'auto', digits -> int;
    anything else is returned as it is, for the caller's own check (rotating counts, units)."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "auto":
            return "auto"
        if v.isdigit():
            return int(v)
    return value
