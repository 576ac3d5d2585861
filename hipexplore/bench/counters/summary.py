"""``CounterSummary``: what the counters say of one configuration, as one typed value.

Why a type of its own, low in the layers (``bench.outcome``, beside a result's other parts, imports
``schema`` and ``stats`` alone; this module names it for the counters): a configuration's counter
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
from dataclasses import fields
from typing import Any, Mapping

from ...schema import COUNTER_COLUMNS
from ..outcome import COUNTER_TEXT_COLUMNS as TEXT_COLUMNS
from ..outcome import CounterSummary


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
