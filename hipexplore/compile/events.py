"""Cache events: one row per ``get_or_compile`` call, so every claim about the cache is a sum
over recorded lookups rather than a guess (how many compiles, how many hits, seconds saved).

The columns are the contract in docs/ARCHITECTURE.md ("Cache events"); the tuning replay adds its
own columns to the same frame.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Iterable

from ..errors import ConfigError

# the outcomes and columns are the shared contract in hipexplore.schema (re-exported here)
from ..schema import EVENT_COLUMNS, HIT_OUTCOMES, OUTCOMES, Outcome

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EVENT_COLUMNS", "HIT_OUTCOMES", "OUTCOMES", "CacheEvent", "Outcome", "events_frame"]

_DTYPES = {
    "seq": "int64",
    "time": "float64",
    "digest": "object",
    "kernel": "object",
    "compiler": "object",
    "target": "object",
    "mode": "object",
    "outcome": "object",
    "lookup_seconds": "float64",
    "compile_seconds": "float64",
    "seconds_saved": "float64",
    "bytes": "int64",
    "error": "object",
    "compiler_cache": "object",
}


@dataclass(frozen=True)
class CacheEvent:
    """One lookup. ``compile_seconds`` is the entry's recorded compile time (the original
    compile's on hits); ``seconds_saved`` is ``compile_seconds - lookup_seconds`` on hits and
    joins (kept signed: a slow disk hit of a fast compile shows up negative), 0 otherwise.
    ``compiler_cache``: the compiler's own cache as this lookup's compile would use it
    (``compiler_cache.OwnCache.label``)."""

    seq: int
    time: float
    digest: str
    kernel: str
    compiler: str
    target: str
    mode: str
    outcome: Outcome
    lookup_seconds: float
    compile_seconds: float
    seconds_saved: float
    bytes: int
    error: str = ""
    compiler_cache: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ConfigError(f"cache event outcome must be one of {OUTCOMES}; got {self.outcome!r}")


def events_frame(events: Iterable[CacheEvent]) -> pd.DataFrame:
    """A tidy frame with exactly ``EVENT_COLUMNS`` and stable dtypes, also when empty. pandas is
    imported here, when a frame is asked for: a compile (``hipexplore compile``) records events
    without one."""
    import pandas as pd

    rows = [astuple(e) for e in events]
    frame = pd.DataFrame.from_records(rows, columns=list(EVENT_COLUMNS))
    return frame.astype(_DTYPES)
