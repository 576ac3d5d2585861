"""``CounterSummary``: what the counters say of one configuration, as one typed value.

Why a type of its own, low in the layers (it imports ``schema`` alone): a configuration's counter
figures used to travel as a dict of ``schema.COUNTER_COLUMNS`` built in three places (a record's
columns, a row read back, the NaN row of a configuration nothing counted) and joined to the summary
rows by a four-column key. Here they are one frozen value per (configuration, unit), made where they
are known: in the counting unit's worker by a backend that counts in process (``counters.cupti``),
at the executor's finish step from a backend's report (``counters.counting``), or from a summary row
read back (``of_row``). ``columns()`` turns it into the file's columns, in ``COUNTER_COLUMNS``'s
order; the files on disk do not change. A result type (issue 48's ``ConfigurationResult``) keeps it
as one of a configuration's named summaries.
"""
from __future__ import annotations

import math
from dataclasses import astuple, dataclass, fields
from typing import Any, Mapping

from ...schema import COUNTER_COLUMNS

#: the text columns among the counter columns (a configuration nothing counted has "" there, NaN elsewhere)
TEXT_COLUMNS = ("cache_state", "cold_promise", "counter_warning", "counter_backend", "counter_note")


@dataclass(frozen=True)
class CounterSummary:
    """One configuration's counters (per launch: the mean over its counted launches); the fields are
    ``schema.COUNTER_COLUMNS``, in that order."""

    dram_read_bytes: float
    dram_write_bytes: float
    #: L2 hits / lookups, 0..1
    l2_hit_rate: float
    #: bytes of the launch's in/inout buffers
    input_bytes: int
    #: DRAM bytes read per launch / ``input_bytes``
    cold_fraction: float
    #: cold / partial / warm (n/a without inputs)
    cache_state: str
    #: "" (not asked cold), "kept", "broken", or "unverified"
    cold_promise: str
    #: the promise check's one line ("" unless broken or unverified)
    counter_warning: str
    #: the backend that counted ("ncu 2025.3.1", "CUPTI range profiler (libcupti.so.13)")
    counter_backend: str
    #: launches counted
    counter_launches: int
    #: what the backend said about how it counted ("" when nothing is to be said)
    counter_note: str = ""

    def columns(self) -> dict[str, Any]:
        """The summary row's counter columns (``COUNTER_COLUMNS``, in order)."""
        return dict(zip(COUNTER_COLUMNS, astuple(self)))

    @classmethod
    def of_columns(cls, columns: Mapping[str, Any]) -> "CounterSummary":
        """From the counter columns (every one of ``COUNTER_COLUMNS``; others are ignored)."""
        return cls(**{c: columns[c] for c in COUNTER_COLUMNS})

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> "CounterSummary | None":
        """The counters a summary row read back holds, its values as they were read; None when
        nothing counted it (no counter columns, or an empty backend: a file written without
        counters, a configuration not counted, the cold reference)."""
        backend = row.get("counter_backend")
        if not isinstance(backend, str) or not backend:
            return None
        return cls(**{c: row.get(c, "" if c in TEXT_COLUMNS else math.nan) for c in COUNTER_COLUMNS})


def uncounted_columns() -> dict[str, Any]:
    """The counter columns of a row nothing counted: NaN, and "" in the text columns."""
    return {c: ("" if c in TEXT_COLUMNS else math.nan) for c in COUNTER_COLUMNS}


def with_counters(row: Mapping[str, Any], summary: CounterSummary | None) -> dict[str, Any]:
    """``row`` (a summary row) with the counter columns of its configuration (None: nothing counted
    it), its ``warning`` joined with the broken promise's line once."""
    out = {**row, **(summary.columns() if summary is not None else uncounted_columns())}
    line = str(out.get("counter_warning") or "")
    warning = str(row.get("warning") or "")
    if line and line not in warning:
        out["warning"] = "; ".join(filter(None, [warning, line]))
    return out


assert tuple(f.name for f in fields(CounterSummary)) == COUNTER_COLUMNS, "its fields are schema.COUNTER_COLUMNS"

__all__ = ["CounterSummary", "TEXT_COLUMNS", "uncounted_columns", "with_counters"]
