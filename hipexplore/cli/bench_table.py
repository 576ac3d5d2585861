"""The ``hipexplore bench`` summary table: one line per configuration that reads at 120 columns.

Why its own shape: the summary's ``stop_reason`` joins every unit's reason (``noise 16.70% | ci
0.72% | ...``) and its ``warning`` every note (a timeout, its CI, the IQR figure the table already
shows, the two modes of a bimodal row), and printed as they are they made lines of 250+ characters.
The table shows one stop word per row (the most severe of its units') and, instead of the warning
text, the numbers of its notes; each distinct note is printed once, numbered, under the table,
with the per-row figures the table already has (or ``--json`` gives) left out of it. Every figure
is still in ``--json`` and the ``--out`` summary.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

#: the widest line the table and its notes are laid out for
WIDTH = 120

#: the table's ``stop`` column: the start of a stop reason (``bench.stats``) and its word, most
#: severe first (a row shows the most severe of its units': a timeout in one unit of three is a timeout)
_STOPS = (
    ("timeout", "TIMEOUT"),
    ("max_samples", "CAP"),
    ("converged: noise stabilised", "noise"),
    ("converged: rel stdev", "cv"),
    ("converged: 95% CI", "ci"),
    ("fixed iteration count", "fixed"),
)

#: a note as the table's footnote says it: the row's own figures (shown in the table, or in --json)
#: left out, so rows with the same kind of note share one footnote
_GENERAL = (
    (
        re.compile(r"^((?:very )?noisy): IQR/median [-0-9.]+% > ([0-9.]+%)$"),
        r"\1: IQR/median > \2 (the iqr_rel column)",
    ),
    (re.compile(r"^((?:timeout|max_samples) .*? reached before convergence) \(CI of the median \+-[0-9.]+%\)$"), r"\1"),
    (
        re.compile(r"^stopped by its ((?:timeout|max_samples) .*?) before convergence$"),
        r"\1 reached before convergence",
    ),
    (
        re.compile(r"^bimodal: modes at .*: another run may read the other mode$"),
        "bimodal: two modes further apart than the 95% interval: another run may read the other mode (the modes: --json)",
    ),
    (re.compile(r"^throttled: [0-9]+ sample\(s\) ran below"), "throttled: samples ran below"),
    (re.compile(r"^stream hold timed out in [0-9]+ chunk\(s\)"), "stream hold timed out in some chunks"),
)

#: the footnote of a row whose units stopped for different reasons (the column shows the most severe)
MIXED = (
    "its units stopped for different reasons; the stop column shows the most severe (each unit's: --json stop_reason)"
)


def stop_word(reason: Any) -> str:
    """A stop reason as the table's one word: the most severe of its units' (``' | '``-joined)
    reasons: TIMEOUT, CAP, noise, cv, ci or fixed ('-' for none, the first word of one unknown)."""
    words = [word_of(part) for part in str(reason or "").split(" | ") if part.strip()]
    if not words:
        return "-"
    order = [w for _, w in _STOPS]
    return min(words, key=lambda w: order.index(w) if w in order else -1)


def word_of(part: str) -> str:
    part = part.strip()
    return next((word for start, word in _STOPS if part.startswith(start)), part.split()[0] if part else "-")


def _mixed(reason: Any) -> bool:
    return len({word_of(p) for p in str(reason or "").split(" | ") if p.strip()}) > 1


def general_note(part: str) -> str:
    """One note of a row's warning as its footnote says it (``_GENERAL``)."""
    part = part.strip()
    for pattern, replacement in _GENERAL:
        if pattern.search(part):
            return pattern.sub(replacement, part)
    return part


def row_notes(warning: Any, reason: Any) -> list[str]:
    """A row's distinct footnote texts, in order: its warning's notes (``'; '``-joined), then the
    mixed-stop note where its units stopped for different reasons."""
    out = [general_note(p) for p in str(warning or "").split(";") if p.strip()]
    if _mixed(reason):
        out.append(MIXED)
    return list(dict.fromkeys(out))


def _state(word: Any, fraction: Any) -> str:
    """The table's ``state`` cell: ``cold 0.98``, ``warm 0.02``; empty where nothing was counted."""
    word = word if isinstance(word, str) else ""
    if not word:
        return ""
    return f"{word} {fraction:.2f}" if isinstance(fraction, float) and fraction == fraction else word


def table(summary: Any) -> str:
    """The summary as a text table, every column sized to its widest cell (``auto=32`` included),
    then its numbered notes (``footnotes``). Optional columns appear only where they say something:
    ``timer`` where a row is not timed by events, ``floor_us`` where a floor was taken, ``state``
    where the counters counted."""
    from ..readable import format_bytes, format_percent
    from ..schema import Timer

    floor = "floor_s" in summary.columns and bool(summary["floor_s"].notna().any())  # the launch floor (bench.floor)
    # the counter pass (bench.counters): the state word with its cold fraction, when anything was counted
    state = "cache_state" in summary.columns and bool((summary["cache_state"].fillna("") != "").any())
    timers = "timer" in summary.columns and bool((~Timer.defaults_in(summary)).any())
    heads = [
        "kernel",
        "size",
        "rot",
        "flush",
        *(["timer"] if timers else []),
        "n",
        "median_us",
        "95% CI us",
        *(["floor_us"] if floor else []),
        "iqr_rel",
        "bias",
        "GB/s",
        *(["state"] if state else []),
        "stop",
        "notes",
    ]
    left = {"kernel", "flush", "timer", "state", "stop", "notes"}
    notes: dict[str, int] = {}
    rows = []
    for r in summary.itertuples():
        rot = (
            f"{r.rotating}" if str(r.rotating) == str(r.rotating_requested) else f"{r.rotating_requested}={r.rotating}"
        )
        reason = getattr(r, "stop_reason", "")
        refs = sorted(notes.setdefault(text, len(notes) + 1) for text in row_notes(r.warning, reason))
        d = _decimals(r.median_s * 1e6, 3)  # the interval in the median's digits
        cells = [
            str(r.kernel),
            format_bytes(r.size_bytes),
            rot,
            str(r.flush),
            *([str(r.timer)] if timers else []),
            str(r.n),
            f"{r.median_s * 1e6:.{d}f}",
            f"[{r.ci_low_s * 1e6:.{d}f}, {r.ci_high_s * 1e6:.{d}f}]",
        ]
        if floor:
            cells.append(f"{r.floor_s * 1e6:.{_decimals(r.floor_s * 1e6, 3)}f}" if r.floor_s == r.floor_s else "")
        gbs = r.bandwidth_gbs
        cells += [
            format_percent(r.iqr_rel, 2),
            format_percent(r.bias, 1, signed=True),
            f"{gbs:.{_decimals(gbs, 1)}f}",
            *([_state(r.cache_state, r.cold_fraction)] if state else []),
            stop_word(reason),
            ",".join(map(str, refs)),
        ]
        rows.append(cells)
    heads, rows, dropped = fit(heads, rows)
    widths = [max([len(h), *(len(c[i]) for c in rows)]) for i, h in enumerate(heads)]

    def line(cells: list[str]) -> str:
        return " ".join(c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cells, widths, heads)).rstrip()

    said = [f"(left out to fit {WIDTH} columns: {', '.join(dropped)}; every column: --json)"] if dropped else []
    return "\n".join([line(heads), *(line(c) for c in rows), *said, *footnotes(notes)])


#: columns left out, in this order, while a table is wider than ``WIDTH`` (the answer's columns stay)
DROPPABLE = ("GB/s", "floor_us", "iqr_rel", "bias")
#: a longer kernel name is cut to this many characters (its full name: --json)
KERNEL_CHARS = 28


def fit(
    heads: list[str], rows: list[list[str]], droppable: tuple[str, ...] = DROPPABLE, kernel_chars: int = KERNEL_CHARS
) -> tuple[list[str], list[list[str]], list[str]]:
    """The table's columns at ``WIDTH``: long kernel names cut (``…``), then the ``droppable``
    columns (``bench``'s: ``DROPPABLE``) left out one by one while the widest line is still wider;
    which were left out."""
    k = heads.index("kernel")
    rows = [
        [c[: kernel_chars - 1] + "…" if i == k and len(c) > kernel_chars else c for i, c in enumerate(r)] for r in rows
    ]
    dropped: list[str] = []

    def width() -> int:
        return sum(max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(heads)) + len(heads) - 1

    for name in droppable:
        if width() <= WIDTH:
            break
        if name in heads:
            i = heads.index(name)
            heads = heads[:i] + heads[i + 1 :]
            rows = [r[:i] + r[i + 1 :] for r in rows]
            dropped.append(name)
    return heads, rows, dropped


def _decimals(value: float, most: int) -> int:
    """Decimals that show ``value`` to 4 significant digits, at most ``most`` (1234.567 us reads
    1235: a thousandth of a microsecond of a millisecond kernel is noise, and width)."""
    import math

    if not (isinstance(value, (int, float)) and math.isfinite(value)) or value == 0:
        return most
    return max(0, min(most, 3 - math.floor(math.log10(abs(value)))))


def footnotes(
    notes: dict[str, int], title: str = "notes (every row's full warning and stop reason: --json):"
) -> list[str]:
    """The numbered notes under the table, each once, wrapped at ``WIDTH``; none without notes."""
    if not notes:
        return []
    out = ["", title]
    pad = len(str(len(notes))) + 3
    for text, number in notes.items():
        out += textwrap.wrap(
            text, WIDTH, initial_indent=f"{number:>{pad - 2}}  ", subsequent_indent=" " * pad, break_on_hyphens=False
        ) or [f"{number:>{pad - 2}}"]
    return out


__all__ = [
    "DROPPABLE",
    "KERNEL_CHARS",
    "MIXED",
    "WIDTH",
    "fit",
    "footnotes",
    "general_note",
    "row_notes",
    "stop_word",
    "table",
]
