"""The ``hipexplore compare`` table: one line per configuration that reads at 120 columns.

Why its own shape (issue 49.4): each row carried its note on its own line, up to 584 columns, under
a 161-column header, and the cold-reference row got a verdict of its own although its two sides
are single launches taken apart from the interleaved rows (a yardstick for each side's bias, not a
change under review). Now, as ``bench``'s table does (``bench_table``): every column sized to its
widest cell, a row's notes by number, each distinct note printed once under the table and wrapped
at ``WIDTH``; the cold-reference row shows both medians and the word ``reference`` where a verdict
would stand. ``--json`` keeps every figure and the full note of every row.

Both answers stay on the row (``docs/guide/verdicts.md``): beside the verdict, the measured change in
words (``verdicts.change_text``: ``slower by 1.2% [+1.1%, +1.3%] — below the 2% threshold``). An
undecided row's sentence stops before its last clause (the verdict column says undecided, its note
why); where the table is still wider than ``WIDTH`` with its droppable columns gone, every row's does.
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any, Mapping

from .bench_table import WIDTH, fit, footnotes

#: the words of a row that is a reference, not a change (its ``verdict`` stays in --json)
REFERENCE = "reference"
#: the note every cold-reference row shares
REFERENCE_NOTE = (
    "cold reference: single launches after a cache flush, each side's yardstick for its bias; measured "
    "apart from the compared rows, it gets no verdict of its own (its change and interval: --json)"
)
#: columns left out, in this order, while the table is wider than ``WIDTH`` (the answer's columns stay)
DROPPABLE = ("p", "units", "min det.")


def is_reference(row: Mapping[str, Any]) -> bool:
    from ..schema import Configuration

    return bool(Configuration.marks_reference(row))


def _count(value: Any) -> str:
    """A unit count as a whole number: the column is float when a configuration present in one run
    only leaves it NaN, and "4.0" units read as a measured fraction."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


#: the answer column's head
ANSWER = "measured change new/base [95%]"
#: what separates the measured change from how it stands against the threshold (``verdicts.change_text``)
_AGAINST = " — "


def answer(r: Mapping[str, Any], threshold: float) -> tuple[str, str]:
    """(the row's measured change in words, the same without how it stands against the threshold):
    ``verdicts.change_text``, and its short form (``slower by 1.2% [+1.1%, +1.3%]``) that an undecided
    row, or every row of a table too wide for the whole sentences, shows beside its verdict."""
    from ..verdict_rule import change_text

    full = change_text(r, threshold)
    short = full.rsplit(_AGAINST, 1)[0]
    return (short if r.get("verdict") == "undecided" else full), short


def _medians(r: Mapping[str, Any]) -> str:
    """A reference row's two medians: ``12.3 / 12.5 us``."""
    from ..readable import format_number

    b, n = float(r.get("base_median_s", math.nan)), float(r.get("new_median_s", math.nan))
    scale, unit = (1e3, "ms") if max(b, n) >= 1e-3 else (1e6, "us")
    return f"medians {format_number(b * scale)} / {format_number(n * scale)} {unit}"


#: an undecided row's note as the footnote says it: its own figures (the min det. column has them) left
#: out, so rows undecided for the same reason share one footnote
_GENERAL = (
    (
        re.compile(
            r"^the noise allows no call at ±([^:]+): the interval over ([0-9]+) units is ±[-0-9.]+% wide; "
            r"changes of [-0-9.]+% or more could be called \((.*)\)$"
        ),
        r"the noise allows no call at ±\1: the interval over \2 units is too wide (the min det. column: the smallest "
        r"change it could call); \3",
    ),
)


def general(note: str) -> str:
    for pattern, replacement in _GENERAL:
        if pattern.search(note):
            return pattern.sub(replacement, note)
    return note


def row_notes(r: Mapping[str, Any], threshold: float) -> list[str]:
    """A row's notes: the reference's, or an undecided row's reason (with why a tiny p stands
    beside it, ``headline.p_note``), or a decided row's own note; a one-sided row's reason."""
    from ..report.headline import p_note

    if r.get("present") != "both":
        return [str(r.get("note") or "")]
    if is_reference(r):
        return [REFERENCE_NOTE]
    out = [p_note(r, threshold)] if r.get("verdict") == "undecided" else []
    out.append(general(str(r.get("note") or "")))
    return [t for t in dict.fromkeys(out) if t]


def cells(
    r: Mapping[str, Any], kernel: str, heads: list[str], threshold: float, notes: dict[str, int], short: bool = False
) -> list[str]:
    """The row's cells under ``heads`` (``short``: its answer without the threshold clause)."""
    from ..verdict_rule import size_text

    refs = sorted(notes.setdefault(t, len(notes) + 1) for t in row_notes(r, threshold))
    size = "-" if not r.get("size_bytes") or int(r["size_bytes"]) <= 1 else size_text(r["size_bytes"])
    out = {
        "kernel": kernel,
        "size": size,
        "rot": str(r.get("rotating_requested", "")),
        "flush": str(r.get("flush", "")),
        "timer": str(r.get("timer", "")),
        "notes": ",".join(map(str, refs)),
    }
    if r.get("present") != "both":
        out.update({"verdict": f"{r['present']}"})
    elif is_reference(r):
        out.update({"verdict": REFERENCE, ANSWER: _medians(r)})
    else:
        b, n = _count(r.get("base_units", 1)), _count(r.get("new_units", 1))
        out.update(
            {
                "units": b if b == n else f"{b}/{n}",
                "p": f"{float(r['p_value']):.2g}",
                "min det.": f"{float(r['min_detectable']):.1%}",
                "verdict": str(r["verdict"]),
                ANSWER: answer(r, threshold)[short],
            }
        )
    return [out.get(h, "") for h in heads]


def table(frame: Any) -> str:
    """The rule, the caveat, the table at ``WIDTH`` columns, then its numbered notes."""
    from ..verdict_rule import DEFAULT_THRESHOLD

    thr = float(frame.attrs.get("threshold", DEFAULT_THRESHOLD))
    rows = frame.to_dict("records")
    from ..schema import Timer

    timers = any(not Timer.of_cell(r.get("timer")).default for r in rows)
    heads = [
        "kernel",
        "size",
        "rot",
        "flush",
        *(["timer"] if timers else []),
        "units",
        "p",
        "min det.",
        "verdict",
        ANSWER,
        "notes",
    ]
    left = {"kernel", "flush", "timer", "verdict", ANSWER, "notes"}
    kernels = [
        str(
            r.get("kernel")
            if isinstance(r.get("kernel"), str) and r.get("kernel")
            else f"{r.get('base_kernel')}→{r.get('new_kernel')}"
        )
        for r in rows
    ]
    for short in (False, True):  # the whole sentences, or where they do not fit, without the threshold clause
        notes: dict[str, int] = {}
        shown, body, dropped = _fitted(heads, [cells(r, k, heads, thr, notes, short) for r, k in zip(rows, kernels)])
        widths = [max([len(h), *(len(c[i]) for c in body)]) for i, h in enumerate(shown)]
        if sum(widths) + len(widths) - 1 <= WIDTH:
            break

    def line(cs: list[str]) -> str:
        return " ".join(c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cs, widths, shown)).rstrip()

    said = [f"(left out to fit {WIDTH} columns: {', '.join(dropped)}; every column: --json)"] if dropped else []
    head = _wrapped("decision rule: ", frame.attrs.get("rule", ""))
    head += _wrapped("note: ", frame.attrs.get("caveat", "")) + _wrapped(
        "calibration: ", frame.attrs.get("calibration", "")
    )
    head += _wrapped("source: ", frame.attrs.get("source_note", ""))
    tail = _wrapped("hint: ", frame.attrs.get("hint", ""))
    return "\n".join(
        [
            *head,
            line(shown),
            *(line(c) for c in body),
            *said,
            *footnotes(notes, title="notes (every row's full note and figures: --json):"),
            *([""] + tail if tail else []),
        ]
    )


def _fitted(heads: list[str], body: list[list[str]]) -> tuple[list[str], list[list[str]], list[str]]:
    """``bench_table.fit`` of the cells; another tool's file (nvbench, pyperf) has no size, sets or
    flush: those columns go first, and the benchmark's name (its axes in it) gets their room."""
    empty = [h for h in ("size", "rot", "flush") if all(c[heads.index(h)] in ("-", "") for c in body)]
    if len(empty) == 3:
        keep = [i for i, h in enumerate(heads) if h not in empty]
        heads, body = [heads[i] for i in keep], [[c[i] for i in keep] for c in body]
    return fit(heads, body, droppable=DROPPABLE, kernel_chars=56 if len(empty) == 3 else 28)


def _wrapped(label: str, text: Any) -> list[str]:
    text = str(text or "").strip()
    if not text:
        return []
    return textwrap.wrap(label + text, WIDTH, subsequent_indent=" " * 2, break_on_hyphens=False)


__all__ = ["ANSWER", "DROPPABLE", "REFERENCE", "REFERENCE_NOTE", "answer", "is_reference", "row_notes", "table"]
