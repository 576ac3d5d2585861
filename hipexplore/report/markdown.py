"""The review as a pull-request comment: GitHub-flavoured Markdown of at most 65,536 characters, its
plots as PNG files beside it and the HTML report as the full artefact.

Why: a reviewer attaches results to a pull request, and GitHub takes no ``.html`` attachment; teams
discuss performance in PR comments (asv, CodSpeed and Bencher post verdict tables there). What the
comment holds: the headline sentences (``headline``), this device's calibration where one is kept
(``calibrate.cite``), the verdict table (the measured change with its interval, the verdict, the
minimum detectable effect and the cache state of each row), the compile section's words, the plots
linked by relative path, and provenance and notes in ``<details>``. A comment starts with
``MARKER`` so a CI step can find and update its one comment.

Every text that comes from a run file (kernel names, labels, device names, provenance) reaches the
Markdown through ``md``: characters Markdown or HTML would read as syntax become character
references, so a kernel named ``<img src=x onerror=...>`` or `` `|` `` renders as that text, never
as a tag, a code span or a table break (GitHub sanitises HTML too; a renderer that does not, does
not need to). Budget: rows of the table are added while the whole stays within ``LIMIT``; the rest
are in the HTML report, and the comment says how many.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

#: GitHub's limit on a comment's body
LIMIT = 65_536
#: the first line of every comment: a CI step finds its own comment by it
MARKER = "<!-- hipexplore-review -->"
#: characters that Markdown or HTML read as syntax, as character references
_REFS = {c: f"&#{ord(c)};" for c in "&<>\"'`|*_[]()\\#!~:@{}$^="}
_REFS["&"] = "&amp;"
_REFS["<"] = "&lt;"
_REFS[">"] = "&gt;"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_WWW = re.compile(r"(?i)www\.")
#: GFM's autolink extension finds URLs, www. and e-mail addresses in the text after character
#: references are decoded: an empty HTML comment splits the text there, so nothing is linked
_SPLIT = "<!-- -->"


def md(text: Any) -> str:
    """``text`` as inline Markdown that renders as exactly that text (module docstring): one line,
    controls dropped, every syntax character a character reference, URLs, ``www.`` and addresses
    kept from autolinking (``_SPLIT``), a leading ``-``/``+``/``1.`` (a list item) neutralised."""
    s = _CONTROL.sub(" ", str(text))
    s = "".join(_REFS.get(c, c) for c in s)
    s = s.replace("&#64;", "&#64;" + _SPLIT).replace("&#58;", _SPLIT + "&#58;")
    s = _WWW.sub(lambda m: m.group()[:1] + _SPLIT + m.group()[1:], s)
    if s[:1] in ("-", "+"):
        s = f"&#{ord(s[0])};" + s[1:]
    return re.sub(r"^(\d+)([.])", r"\1&#46;", s)  # "1. x" after a bullet would open an ordered list


def _pct(v: float, signed: bool = True) -> str:
    return f"{v:+.1%}" if signed else f"{v:.1%}"


def cache_state(row: Mapping[str, Any], summaries: Sequence[Any]) -> str:
    """A row's cache state: what the counters counted on each side (``cold 0.98``), else what the
    configuration asks for (a flush or ``auto`` sets promise cold inputs) and that nothing counted it."""
    from ..bench.counters.record import asks_cold

    found = []
    for summary in summaries:
        if summary is None or "cache_state" not in getattr(summary, "columns", ()):
            continue
        hit = summary[
            (summary["size_bytes"] == row["size_bytes"])
            & (summary["flush"] == row["flush"])
            & (summary["rotating_requested"].astype(str) == str(row["rotating_requested"]))
        ]
        if "kernel" in row and isinstance(row.get("kernel"), str):
            hit = hit[hit["kernel"] == row["kernel"]]
        for r in hit.to_dict("records"):
            word, frac = str(r.get("cache_state") or ""), r.get("cold_fraction")
            if word and word != "nan":
                found.append(f"{word} {frac:.2f}" if isinstance(frac, float) and math.isfinite(frac) else word)
    if found:
        return " / ".join(dict.fromkeys(found)) + " (counted)"
    asked = asks_cold(row.get("rotating_requested"), str(row.get("flush", "")))
    return f"asks cold ({asked}); not counted" if asked else "not counted"


def table_rows(frame: Any, summaries: Sequence[Any]) -> list[str]:
    """One Markdown table row per configuration (the cold reference shown as a reference)."""
    from ..schema import Configuration
    from .review import config_label

    out = []
    for r in frame.to_dict("records"):
        label = md(
            config_label(r)
            if isinstance(r.get("kernel"), str)
            else f"{r.get('base_kernel')}→{r.get('new_kernel')} {config_label(r)}"
        )
        if r.get("present") != "both":
            out.append(f"| {label} | | {md(r['present'])} | | | {md(r.get('note', ''))} |")
            continue
        lo, hi = float(r.get("ratio_ci_low", math.nan)), float(r.get("ratio_ci_high", math.nan))
        change = (
            f"{_pct(float(r['change']))} [{_pct(lo - 1)}, {_pct(hi - 1)}]"
            if math.isfinite(lo) and math.isfinite(hi)
            else f"{_pct(float(r['change']))} (no interval)"
        )
        ref = Configuration.marks_reference(r)
        verdict = "reference" if ref else f"**{r['verdict']}**"
        mde = "" if ref else _pct(float(r["min_detectable"]), signed=False)
        note = "cold reference: no verdict of its own" if ref else str(r.get("note") or "")
        out.append(f"| {label} | {change} | {verdict} | {mde} | {md(cache_state(r, summaries))} | {md(note[:300])} |")
    return out


def provenance_rows(table: Any) -> list[str]:
    """The two-column provenance table (``review.provenance_pair``) in Markdown, cells escaped and cut."""
    cols = list(table.columns)
    out = [f"| item | {md(cols[0])} | {md(cols[1])} |", "|---|---|---|"]
    for item, row in table.iterrows():
        out.append(f"| {md(item)} | {md(str(row.iloc[0])[:200])} | {md(str(row.iloc[1])[:200])} |")
    return out


def comment(
    data: Any,
    *,
    headline: Sequence[str],
    compile_text: str = "",
    calibration: str = "",
    figures: Sequence[tuple[str, str]] = (),
    html_name: str = "report.html",
    summaries: Sequence[Any] = (),
    limit: int = LIMIT,
) -> str:
    """The comment's Markdown (module docstring); ``figures``: (alt text, relative file name)."""
    from .review import Banner, provenance_pair, verdict_counts

    frame = data.verdicts
    head = [
        MARKER,
        f"### hipexplore review: {md(data.new_label)} against {md(data.base_label)}",
        "",
        f"_{md(Banner(data.base_metadata, data.new_metadata).text())}_",
        "",
    ]
    head += [f"- {md(p)}" for p in headline] + [""]
    if calibration:
        head += [f"**Calibration:** {md(calibration)}.", ""]
    head += [
        f"**Verdicts:** {md(verdict_counts(frame))}.",
        "",
        "| configuration | change new/base [95%] | verdict | min. detectable | cache state | note |",
        "|---|---|---|---|---|---|",
    ]
    tail = [""]
    if compile_text:
        tail += [f"**Compile time:** {md(compile_text)}", ""]
    tail += [f"![{md(alt)}]({name})" for alt, name in figures] + ([""] if figures else [])
    notes = [f"- {md(frame.attrs.get('rule', ''))}"]
    notes += [f"- {md(frame.attrs[k])}" for k in ("caveat", "source_note", "hint") if frame.attrs.get(k)]
    details = [
        "<details><summary>Decision rule and notes</summary>",
        "",
        *notes,
        "",
        "</details>",
        "",
        "<details><summary>Provenance, both sides</summary>",
        "",
        *provenance_rows(provenance_pair(data)),
        "",
        "</details>",
        "",
        f"Full report (every row, figure and table): [{md(html_name)}]({html_name}), "
        f"the HTML artefact beside this comment.",
    ]
    rows = table_rows(frame, summaries)
    fixed = "\n".join(head + tail + details)
    kept: list[str] = []
    room = limit - len(fixed) - 400  # the line that says how many rows moved to the artefact
    for line in rows:
        if room - len(line) - 1 < 0:
            break
        kept.append(line)
        room -= len(line) + 1
    moved = len(rows) - len(kept)
    said = (
        [
            "",
            f"_{moved} more row(s) are in the full report ({md(html_name)}): this comment holds at most "
            f"{limit:,} characters._",
        ]
        if moved
        else []
    )
    text = "\n".join(head + kept + said + tail + details) + "\n"
    if len(text) > limit:  # the fixed parts alone (a huge provenance): cut them, saying so
        text = (
            text[: limit - 200].rsplit("\n", 1)[0]
            + f"\n\n_Cut at {limit:,} characters: the full report is {md(html_name)}._\n"
        )
    return text


__all__ = ["LIMIT", "MARKER", "cache_state", "comment", "md", "provenance_rows", "table_rows"]
