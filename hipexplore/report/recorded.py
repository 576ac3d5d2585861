"""Recorded data for the notebooks: parquet files sorted into samples, summary, cache/replay
events and replay passes, plus the provenance stored with them.

A file is recognised by the schema tag its writer stored in the parquet metadata
(``hipexplore.schema``, see ``hipexplore.schema``): the sweep writes ``samples``/``summary``, the
tuning replay ``tuning`` (and ``passes``). Files recorded before writers tagged them (the ones
under ``data/``) have no tag; for those, and only those, the kind is inferred from the columns
(``_legacy_kind_of``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from .. import schema
from ..bench import info as mk
from ..errors import ConfigError
from ..untrusted import load_json

#: Provenance rows shown first, in this order; the rest follow sorted.
PROVENANCE_ORDER = (
    "recorded.note",
    "recorded.revision",
    "recorded.benchmark",
    "recorded.tuning",
    "recorded.replay_pass",
    "recorded.file",
    *(k.name for k in (mk.DEVICE_NAME, mk.DEVICE_KIND, mk.DEVICE_TARGET, mk.DEVICE_DRIVER, mk.DEVICE_RUNTIME)),
    *(mk.COMPILER.key(c) for c in ("host", "hiprtc", "nvrtc")),
    *(k.name for k in (mk.HIPEXPLORE, mk.GIT_REVISION, mk.DATE, mk.COMMAND, mk.PYTHON, mk.PLATFORM, mk.CPU)),
)

# ----------------------------------------------------------------------------------------------
# data for the notebooks: recorded parquet files and provenance


@dataclass
class Recorded:
    """Frames found in recorded parquet files, sorted by their columns, plus the provenance
    stored in their metadata and notes on what was chosen among several runs."""

    samples: pd.DataFrame | None = None
    summary: pd.DataFrame | None = None
    events: pd.DataFrame | None = None
    passes: pd.DataFrame | None = None  # replay wall times, one row per scenario pass
    provenance: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


#: schema tag -> the kind load_recorded sorts a file into
_KIND_OF_TAG = {
    schema.SAMPLES: "samples",
    schema.SUMMARY: "summary",
    schema.EVENTS: "events",
    schema.TUNING: "events",
    schema.PASSES: "passes",
}


def _legacy_kind_of(columns: Sequence[str]) -> str | None:
    """LEGACY: files recorded before writers stored a schema tag (data/ holds some): guess the
    kind from the columns. New files never take this path."""
    cols = set(columns)
    if {"outcome", "lookup_seconds", "compile_seconds"} <= cols:
        return "events"
    if {"scenario", "lookups", "compiles", "seconds"} <= cols:
        return "passes"
    if {"median_s", "iqr_rel", "size_bytes", "flush"} <= cols:  # tuning candidate tables have no size_bytes
        return "summary"
    if {"time_s", "iteration", "size_bytes", "flush"} <= cols:
        return "samples"
    return None


def parquet_provenance(path: str | os.PathLike) -> dict[str, str]:
    """Provenance stored in a parquet file's key-value metadata (the JSON under ``hipexplore``
    that ``bench.sweep`` writes, or ``provenance.*`` keys), empty when there is none."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(str(path)).metadata or {}
    out: dict[str, str] = {}
    for k, v in meta.items():
        key, val = k.decode(errors="replace"), v.decode(errors="replace")
        if key in ("hipexplore", "hipexplore.provenance", "provenance"):
            try:  # bounded (deep nesting, huge integers): unreadable provenance is left out
                out.update({str(a): str(b) for a, b in load_json(val, str(path)).items()})
            except (ValueError, AttributeError):
                continue
        elif key.startswith("provenance."):
            out[key[len("provenance.") :]] = val
    return out


def _read_recorded(path: Path) -> tuple[pd.DataFrame, str | None]:
    """A recorded file's frame and kind (its writer's schema tag, else, legacy and untagged, its
    columns); a sweep's samples and summary are checked as untrusted
    input (``bench.readback``: types, physically possible times, printable names), by the columns
    they have when untagged (legacy files lack some), by all a reader needs when tagged."""
    from ..bench import readback

    readback.check_footer(path)
    try:
        frame = pd.read_parquet(path)
        tag = schema.schema_of(path)
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, OSError, ...: a truncated or foreign file
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"recorded file {str(path)!r} is not a readable parquet file ({first[:200]})") from None
    kind = _KIND_OF_TAG.get(tag) if tag is not None else _legacy_kind_of(frame.columns)
    if kind in ("samples", "summary"):
        readback.check_frame(
            frame, schema.SAMPLES if kind == "samples" else schema.SUMMARY, str(path), required=tag is not None
        )
    return frame, kind


def _recorded_files(root: Path) -> list[Path]:
    if root.is_dir():
        return sorted(root.rglob("*.parquet"))
    # a sweep's FILE.parquet comes with FILE.summary.parquet, and the other way round
    name = root.name
    stem = name[: -len(".summary.parquet")] if name.endswith(".summary.parquet") else root.stem
    pair = [root.with_name(stem + ".parquet"), root.with_name(stem + ".summary.parquet")]
    return [p for p in pair if p.is_file()] or [root]


def load_recorded(path: str | os.PathLike, run_id: str | None = None) -> Recorded:
    """Read recorded parquet files and sort them into samples, summary and cache/replay events.

    path: a folder (searched recursively) or one file (a sweep's ``FILE.parquet`` brings its
    ``FILE.summary.parquet``). A folder may hold several sweeps: one run is shown, ``run_id``
    or else, among the runs whose samples are there too, the one with the most configurations
    (the latest on a tie), and a note says so;
    likewise the largest replay frame when there are several.
    """
    root = Path(path)
    if not root.exists():
        raise ConfigError(
            f"recorded data path {str(root)!r} does not exist (expected a parquet file or a folder of them)"
        )
    found = _found_by_kind(root)
    rec = Recorded()
    if found["summary"]:
        _take_summary(rec, found, root, run_id)
    if found["samples"]:
        samples = pd.concat([fr for _, fr, _ in found["samples"]], ignore_index=True)
        if rec.summary is not None and "run_id" in samples.columns and "run_id" in rec.summary.columns:
            samples = samples[samples["run_id"].isin(set(rec.summary["run_id"]))].reset_index(drop=True)
        rec.samples = samples
    if found["events"]:
        _take_events(rec, found, root)
    return rec


#: recorded files by kind: each with its frame and provenance
_Found = dict[str, list[tuple[Path, pd.DataFrame, dict[str, str]]]]


def _found_by_kind(root: Path) -> _Found:
    """The recorded files under ``root`` read and sorted by kind; a path holding none of them is an
    error here, so that a notebook pointed at the wrong folder says so instead of plotting nothing."""
    files = _recorded_files(root)
    if not files:
        raise ConfigError(f"no .parquet files under {str(root)!r}")
    found: _Found = {"samples": [], "summary": [], "events": [], "passes": []}
    for f in files:
        frame, kind = _read_recorded(f)
        if kind is not None:
            found[kind].append((f, frame, parquet_provenance(f)))
    if not any(found.values()):
        raise ConfigError(f"no parquet file under {str(root)!r} holds benchmark samples, summary or cache events")
    return found


def _take_summary(rec: Recorded, found: _Found, root: Path, run_id: str | None) -> None:
    """The summary of one run into ``rec`` (``_chosen_run``), with that run's provenance and files: a
    folder of several sweeps must not mix their configurations in one plot."""
    summary = pd.concat([fr for _, fr, _ in found["summary"]], ignore_index=True)
    prov_by_run: dict[str, dict[str, str]] = {}
    for f, fr, prov in found["summary"]:
        for rid in pd.unique(fr["run_id"]) if "run_id" in fr.columns else []:
            prov_by_run.setdefault(str(rid), {**prov, "recorded.file": str(f)})
    if "run_id" in summary.columns and summary["run_id"].nunique() > 1:
        run_id = _chosen_run(rec, found, root, run_id, summary, prov_by_run)
    if run_id is not None and "run_id" in summary.columns:
        summary = summary[summary["run_id"] == run_id].reset_index(drop=True)
    rec.summary = summary
    chosen = (
        str(run_id)
        if run_id is not None
        else (str(summary["run_id"].iloc[0]) if "run_id" in summary.columns and len(summary) else "")
    )
    rec.provenance.update(prov_by_run.get(chosen, found["summary"][0][2]))
    rec.files += [
        str(f) for f, fr, _ in found["summary"] if "run_id" not in fr.columns or chosen in set(map(str, fr["run_id"]))
    ]


def _chosen_run(
    rec: Recorded,
    found: _Found,
    root: Path,
    run_id: str | None,
    summary: pd.DataFrame,
    prov_by_run: dict[str, dict[str, str]],
) -> str | None:
    """The run shown when the summaries hold several: ``run_id`` (which must be there), else the one
    picked with a note in ``rec`` saying which and how to show another."""
    runs = summary.groupby("run_id").size()
    if run_id is None:
        # a run whose samples were kept first (a summary without them cannot be plotted), then
        # the most configurations, then the latest
        sampled = {str(r) for _, fr, _ in found["samples"] if "run_id" in fr.columns for r in pd.unique(fr["run_id"])}
        run_id = max(
            runs.index,
            key=lambda r: (str(r) in sampled, int(runs[r]), prov_by_run.get(str(r), {}).get("date", "")),
        )
        # say "with samples" only where a run without them was passed over
        with_samples = (
            " with samples" if str(run_id) in sampled and any(str(r) not in sampled for r in runs.index) else ""
        )
        rec.notes.append(
            f"{root} holds {len(runs)} sweeps; showing run {run_id} ({int(runs[run_id])} configurations, "
            f"the most{with_samples}). Pass one sweep's .parquet file to show another."
        )
    elif run_id not in runs.index:
        raise ConfigError(f"run_id {run_id!r} is not under {str(root)!r}; it holds {sorted(runs.index)}")
    return run_id


def _take_events(rec: Recorded, found: _Found, root: Path) -> None:
    """The largest replay frame into ``rec`` (a note says so when there are several), with its
    provenance where the summary gave none and its passes file beside it."""
    f, frame, prov = max(found["events"], key=lambda item: len(item[1]))
    if len(found["events"]) > 1:
        rec.notes.append(f"{root} holds {len(found['events'])} replay frames; showing {f.name} ({len(frame)} lookups)")
    rec.events = frame
    rec.files.append(str(f))
    for k, v in prov.items():
        rec.provenance.setdefault(k, v)
    # the wall times of that replay's passes, written next to it as FILE.passes.parquet
    twin = f.with_name(f.stem + ".passes.parquet")
    match = [fr for p, fr, _ in found["passes"] if p == twin]
    if match:
        rec.passes = match[0]
        rec.files.append(str(twin))


def revision_note(this: str, recorded: str) -> str:
    """A warning when recorded data came from another revision of hipexplore than this report."""

    def short(rev: str) -> str:
        return rev.split("+")[0][:7]

    if not recorded or recorded == "unknown" or not this or this == "unknown" or short(this) == short(recorded):
        return ""
    return (
        f"DIFFERENT REVISION: recorded with hipexplore {short(recorded)}, this report is {short(this)}; "
        f"the measurement code may have changed since"
    )


def provenance_table(info: Mapping[str, Any], recorded: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Provenance as a two- or three-column table: the report's run and, when the figures come
    from recorded files, the run that recorded them."""
    if recorded:
        recorded = dict(recorded)
        note = revision_note(str(info.get("git_revision", "")), str(recorded.get("git_revision", "")))
        if note:
            recorded["recorded.revision"] = note
    keys = [k for k in PROVENANCE_ORDER if k in info or (recorded and k in recorded)]
    rest = sorted((set(info) | set(recorded or {})) - set(keys))
    keys += rest
    table = pd.DataFrame({"item": keys, "this run": [str(info.get(k, "")) for k in keys]})
    if recorded:
        table["recorded data"] = [str(recorded.get(k, "")) for k in keys]
    return table.set_index("item")


def escaped_style(table: pd.DataFrame) -> Any:
    """``table.style`` with every cell, row label and column label HTML-escaped.

    Why: unlike ``DataFrame.to_html``, a pandas ``Styler`` writes cells into the page as they
    are, and the tables of a report hold strings from other people's run files (kernel names,
    the recorded command, file names, metadata). Unescaped, ``<img onerror=...>`` in a run's
    metadata is a script in the reviewer's browser. Every Styler the notebooks show starts here;
    a later ``.format`` must pass ``escape="html"`` again (dashboard.styled_summary does)."""
    import html

    shown = table.copy(deep=False)  # the axis names head the label columns; Styler writes them unescaped too
    shown.index = shown.index.set_names([None if n is None else html.escape(str(n)) for n in shown.index.names])
    shown.columns = shown.columns.set_names([None if n is None else html.escape(str(n)) for n in shown.columns.names])
    sty = shown.style.format(escape="html").format_index(escape="html", axis=0).format_index(escape="html", axis=1)
    # the report's CSS keeps row labels on one line; a label as long as a paragraph (a recorded kernel
    # name can be anything) wraps instead of pushing the values off the page
    return sty.map_index(_long_label, axis=0).map_index(_long_label, axis=1)


def _long_label(label: Any) -> str:
    return "white-space: normal !important; overflow-wrap: anywhere; min-width: 12em" if len(str(label)) > 48 else ""


def full_width(table: pd.DataFrame) -> Any:
    """The table for display without pandas' 50-character cell truncation (provenance values
    such as the command line must appear whole in the report), left-aligned, escaped."""
    # hx-wrap: long tokens (paths, the JSON spec) may break anywhere, so the table fits 900 px
    return (
        escaped_style(table)
        .set_properties(**{"text-align": "left", "white-space": "pre-wrap"})
        .set_td_classes(pd.DataFrame("hx-wrap", index=table.index, columns=table.columns))
    )


def collect_provenance(
    device_properties: Mapping[str, Any] | None = None, command: str | Sequence[str] | None = None
) -> dict[str, str]:
    """``provenance.collect`` plus the device's properties under ``device.*`` (empty or None
    ``command`` means this process's argv)."""
    from ..provenance import collect, describe_value

    info = collect(None, command=command or None)
    props = dict(device_properties or {})
    for k, v in props.items():
        info[mk.DEVICE.key(k)] = describe_value(k, v, props)
    return info
