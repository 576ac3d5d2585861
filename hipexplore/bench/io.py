"""A sweep's files (FILE.parquet samples, FILE.summary.parquet, FILE.meta.json) and resuming them.

Why apart from the loop: what is on disk is a contract the report reads back (by the schema tag
each parquet file carries, see ``hipexplore.schema``) and that resume builds on; local and cluster
runs share one reader, one resume check and one writer here.

One unit: the summary file is the commit record. Every write replaces the samples file first and
the summary file second (each atomically and through no one's link: ``files.write_file``), and the summary carries the
run's metadata in its own parquet metadata. A process killed between the two leaves samples of a
configuration the summary does not name: the reader drops them (they were never committed), so
resuming measures that configuration once, not twice. The meta.json beside them is a readable copy,
written last; the reader prefers the summary's embedded copy, which is always the committed one.

A sweep in units also writes FILE.units.parquet (tag ``units``: one summary row per (configuration,
unit), ``pass_index`` the unit), between the samples and the summary: it is the commit record of
each (configuration, unit), written as each finishes. The samples of a (configuration, unit) it
does not name were never committed and are dropped; the summary's merged rows are derived from it
(``bench.record`` merges again what a kill left behind the summary). Readers that know only the
samples and summary files read them as before.

The frames are made here, and only here: a unit reports ``bench.outcome.ConfigurationResult``s, the
record keeps them per (configuration, unit), and ``sample_frame``, ``summary_row`` and ``write_results``
turn them into the files' rows (``schema``'s column lists are the contract); ``samples_by_configuration``
and ``unit_samples`` read a file's frames back into a result's samples.

The metadata becomes text here, and only here: the run's metadata travels typed (``bench.runinfo.RunInfo``,
with what the units measured with, ``bench.measured.MeasuredInfo``) from the executor and the units
through the orchestrator and the record; ``metadata_text`` turns it into the flat keys the files and
``SweepResult.metadata`` carry, through the formats the registry declares (``bench.info``).

Resume keeps a finished row only when it was measured the way a new row would be: the same device,
the same measurement settings (``SweepSpec.measurement()``, the LLC) and, per kernel, the same code,
compile options, arguments and geometry (``kernel_identity``, recorded as ``identity.<kernel>``).
Anything else is refused in one line that names what differs.

What is read back is checked as untrusted input (``bench.readback``: column types, physically
possible times and sizes, printable names, bounded JSON): a file someone else wrote or edited is
refused in one line naming the file, the column and the value, never measured against or compared.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..files import write_file
from ..schema import (
    CLUSTER_COLUMNS,
    COUNTER_COLUMNS,
    SAMPLE_COLUMNS,
    SAMPLES,
    SUMMARY,
    SUMMARY_COLUMNS,
    UNITS,
    Configuration,
    ReferenceKey,
    Timer,
    write_parquet,
)
from ..untrusted import shown
from . import readback
from .info import DEVICE_LLC_BYTES, IDENTITY, SWEEP_SPEC
from .outcome import ConfigurationResult, Samples
from .passes import merged_result, rebiased, stack, unstack
from .runinfo import RunInfo

_SAMPLE_DTYPES = {
    "size_bytes": "int64",
    "footprint_bytes": "int64",
    "rotating": "int64",
    "iteration": "int64",
    "pass_index": "int64",
    "chunk": "int64",
    "position": "int64",
    "lead": "int64",
    "buffer_set": "int64",
    "time_s": "float64",
    "flush_s": "float64",
    "gap_s": "float64",
    "clock_mhz": "float64",
    "temp_c": "float64",
    "power_w": "float64",
    "host_load": "float64",
    "host_busy": "float64",
    "host_steal": "float64",
    "throttled": "bool",
    "dropped": "bool",
}
#: columns older files lack, and the value every old row had (written before the column existed)
_UPGRADES_SAMPLES = {
    "timer": Timer.EVENTS.name,
    "pass_index": 0,
    "lead": 0,
    "host_load": float("nan"),
    "host_busy": float("nan"),
    "host_steal": float("nan"),
}
_UPGRADES_SUMMARY = {"timer": Timer.EVENTS.name, "passes": 1}


def units_path(paths: tuple[Path, Path, Path]) -> Path:
    """FILE.units.parquet beside FILE.parquet: a sweep in units' rows per (configuration, unit)."""
    return paths[0].with_name(paths[0].name[: -len(".parquet")] + ".units.parquet")


def output_paths(out: str | os.PathLike) -> tuple[Path, Path, Path]:
    """FILE.parquet -> (FILE.parquet, FILE.summary.parquet, FILE.meta.json)."""
    p = Path(out)
    if p.suffix != ".parquet":
        raise ConfigError(f"sweep output must be a .parquet file name, got {str(p)!r}")
    stem = p.with_suffix("")
    return p, Path(f"{stem}.summary.parquet"), Path(f"{stem}.meta.json")


def empty_frame(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_SAMPLE_DTYPES.get(c, "object")) for c in columns})


def samples_frame(parts: list[pd.DataFrame], columns: Sequence[str] = SAMPLE_COLUMNS) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True).reindex(columns=list(columns)) if parts else empty_frame(columns)


def summary_frame(rows: list[dict[str, Any]], columns: Sequence[str] = SUMMARY_COLUMNS) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)) if rows else empty_frame(columns)


# -- results as the files' rows and frames, and back ------------------------------------------------
def sample_frame(samples: Samples) -> pd.DataFrame:
    """A result's raw samples as the samples file's rows."""
    return pd.DataFrame(dict(samples.columns), columns=list(samples.columns))


def summary_row(result: ConfigurationResult) -> dict[str, Any]:
    """A result as the summary file's row (every column its parts fill; a frame takes the file's)."""
    return result.columns()


def results_frames(
    results: Sequence[ConfigurationResult], columns: tuple[Sequence[str], Sequence[str]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(samples, summary) frames of ``results``, in their order, with ``columns`` (default: the schema's)."""
    sample_cols, summary_cols = columns or (SAMPLE_COLUMNS, SUMMARY_COLUMNS)
    return (
        samples_frame([sample_frame(r.samples) for r in results if r.samples.n], sample_cols),
        summary_frame([summary_row(r) for r in results], summary_cols),
    )


def samples_of(frame: pd.DataFrame, columns: Sequence[str]) -> Samples:
    """A frame's rows (one configuration's) as a result's samples, in ``columns``' order."""
    frame = frame.reindex(columns=list(columns))
    return Samples({c: frame[c].to_numpy() for c in columns})


def samples_by_configuration(frame: pd.DataFrame, columns: Sequence[str]) -> dict[Configuration, Samples]:
    """``frame``'s rows per configuration, in the order the configurations first appear."""
    if not len(frame):
        return {}
    if "timer" not in frame.columns:
        frame = frame.assign(timer=Timer.EVENTS.name)
    return {
        Configuration.of_key(key): samples_of(g.reset_index(drop=True), columns)
        for key, g in frame.groupby(list(Configuration.COLUMNS), sort=False, dropna=False)
    }


def unit_samples(
    samples: pd.DataFrame, held: set[Configuration], columns: Sequence[str]
) -> dict[int, dict[Configuration, Samples]]:
    """The samples of a sweep in units (of the configurations ``held`` in its units file) per unit,
    each with its own chunk ids (``passes.unstack``)."""
    mine = samples[[c in held for c in Configuration.of_frame(samples)]] if len(samples) else samples
    return {
        k: samples_by_configuration(f, columns)
        for k, f in (unstack(mine.reset_index(drop=True)) if len(mine) else {}).items()
    }


def merge_passes(
    samples: list[pd.DataFrame], summaries: list[pd.DataFrame], *, peak_bandwidth_gbs: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One sweep's frames from its passes' frames (samples and summary frames in pass order): the
    samples stacked (``passes.stack``), each configuration's result merged from its passes' rows
    (``passes.merged_result``), its bias against the merged reference."""
    merged = stack(samples)
    stacked = samples_by_configuration(merged, list(merged.columns))
    rows = (
        pd.concat([s for s in summaries if len(s)], ignore_index=True)
        if any(len(s) for s in summaries)
        else summaries[0]
    )
    none = Samples({c: np.empty(0, dtype=object) for c in merged.columns})
    results = []
    for key, g in rows.groupby(list(Configuration.COLUMNS), sort=False):
        c = Configuration.of_key(key)
        if c in stacked:
            units = [ConfigurationResult.of_columns(r, none, k) for k, r in enumerate(g.to_dict("records"))]
            results.append(merged_result(units, stacked[c], peak_bandwidth_gbs))
    refs = {r.configuration.reference_key: r.measurement for r in results if r.configuration.is_reference}
    return merged, summary_frame([summary_row(rebiased(r, refs.get(r.configuration.reference_key))) for r in results])


def metadata_text(info: RunInfo | Mapping[str, str] | None) -> dict[str, str]:
    """The run's metadata as the flat text the files and ``SweepResult.metadata`` carry: the one place
    it becomes text (``RunInfo.to_metadata``). A file's flat metadata, as read back, is read as a
    ``RunInfo`` first, so it is written back as it was."""
    return RunInfo.of(info).to_metadata()


def write_results(
    paths: tuple[Path, Path, Path],
    results: Sequence[ConfigurationResult],
    info: RunInfo | Mapping[str, str],
    columns: tuple[Sequence[str], Sequence[str]] | None = None,
    units: Sequence[ConfigurationResult] | None = None,
) -> None:
    """Rewrite the files as one unit (module docstring): samples, then (a sweep in units) the rows
    per (configuration, unit) of ``units``, then the summary (the commit record, carrying the run's
    metadata, ``info``, as text: ``metadata_text``) of ``results``, then meta.json (``columns``: the
    samples' and the summary's columns, when not the schema's: a cluster sweep adds ``CLUSTER_COLUMNS``)."""
    metadata = metadata_text(info)
    samples_path, summary_path, meta_path = paths
    samples_path.parent.mkdir(parents=True, exist_ok=True)
    sample_cols, summary_cols = columns or (SAMPLE_COLUMNS, SUMMARY_COLUMNS)
    samples, summary = results_frames(results, (sample_cols, summary_cols))
    write_parquet(samples, samples_path, SAMPLES, metadata)
    if (
        units is not None
    ):  # the timings of each (configuration, unit); the counters are the configuration's, in the summary
        unit_cols = [c for c in summary_cols if c not in COUNTER_COLUMNS]
        rows = [{**summary_row(r), "pass_index": r.unit} for r in units]
        write_parquet(summary_frame(rows, [*unit_cols, "pass_index"]), units_path(paths), UNITS, metadata)
    else:  # a one-unit sweep over an older file (--no-resume): no stale rows per unit may stay beside it
        units_path(paths).unlink(missing_ok=True)
    write_parquet(summary, summary_path, SUMMARY, metadata)
    write_file(meta_path, json.dumps(metadata, indent=1, sort_keys=True), what="sweep metadata")


read_metadata = readback.read_metadata  # typed by bench.runinfo.RunInfo.read


def read_results(paths: tuple[Path, Path, Path]) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str] | None] | None:
    """(samples, summary, meta.json's metadata: None when absent, {} when unreadable) of an earlier
    sweep, None when there is none; samples of configurations the summary does not name (an
    interrupted write) are dropped."""
    if not (paths[0].exists() and paths[1].exists()):
        return None
    readback.check_footer(paths[0])
    readback.check_footer(paths[1])
    try:
        samples, summary = pd.read_parquet(paths[0]), pd.read_parquet(paths[1])
    except Exception as exc:  # pyarrow's ArrowInvalid & co: a truncated or foreign file; leave it as it is
        raise ConfigError(
            f"cannot resume from {str(paths[0])!r}: it or {paths[1].name} is not a readable parquet file "
            f"({type(exc).__name__}: {shown(str(exc), 200)}); nothing was changed: move it away, or "
            f"start over with --no-resume (resume=False)"
        ) from None
    readback.check_frame(samples, SAMPLES, str(paths[0]))
    readback.check_frame(summary, SUMMARY, str(paths[1]))
    meta = readback.metadata_file(paths[2]) if paths[2].exists() else None
    if len(samples) and Configuration.in_frame(samples):
        units = read_units(paths)
        samples = _committed(samples, summary, units)
    return samples, summary, meta


def read_units(paths: tuple[Path, Path, Path]) -> pd.DataFrame | None:
    """The rows per (configuration, unit) of a sweep in units (FILE.units.parquet), None when there are none."""
    path = units_path(paths)
    if not path.exists():
        return None
    readback.check_footer(path)
    try:
        units = pd.read_parquet(path)
    except Exception as exc:  # a truncated or foreign file: say so, change nothing
        raise ConfigError(
            f"cannot resume from {str(paths[0])!r}: {path.name} is not a readable parquet file "
            f"({type(exc).__name__}: {shown(str(exc), 200)}); nothing was changed: move it away, or start over "
            f"with --no-resume (resume=False)"
        ) from None
    readback.check_frame(units, SUMMARY, str(path))  # summary rows per (configuration, unit): the same checks
    return units


def _committed(samples: pd.DataFrame, summary: pd.DataFrame, units: pd.DataFrame | None) -> pd.DataFrame:
    """The samples a commit record names: of a (configuration, unit) in the units file, or (a
    configuration it does not hold) of a configuration in the summary."""
    named = set(Configuration.of_frame(summary))
    if units is None or not len(units):
        return Configuration.select(samples, named)
    pairs = set(zip(Configuration.of_frame(units), units["pass_index"].astype(int)))
    held = {c for c, _ in pairs}
    passes = samples["pass_index"].astype(int) if "pass_index" in samples.columns else [0] * len(samples)
    keep = [(c, k) in pairs if c in held else c in named for c, k in zip(Configuration.of_frame(samples), passes)]
    return samples[keep].reset_index(drop=True)


def user_name(uid: int) -> str:
    """``bob (uid 1001)``, or ``uid 1001`` where the user has no name here."""
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def foreign_files(paths: tuple[Path, Path, Path]) -> tuple[Path, int] | None:
    """The first of an out file's files (samples, summary, meta.json, units) that another user owns,
    and that user's uid; None when every one there is this user's. A link at one of the names is
    judged by its own owner (``lstat``), not by what it points at."""
    me = os.geteuid()
    for p in (*paths, units_path(paths)):
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if st.st_uid != me:
            return p, st.st_uid
    return None


#: the command line's and the library's word for keeping another user's rows
OTHERS_FLAG = "--resume-from-others (resume_from_others=True)"


def check_owner(paths: tuple[Path, Path, Path], resume_from_others: bool = False) -> str:
    """Whose results a resume of ``paths`` would keep: ``""`` (this user's, or none), or the other
    user's name when ``resume_from_others`` allows it; otherwise a ``ConfigError`` line naming the
    file, its owner and the flag.

    Why: in a team results folder (setgid, group-writable) another member's files at the out name
    were resumed without a word: their numbers became rows of this user's run, in files this user
    then owned, and the resume line said only that configurations were kept."""
    found = foreign_files(paths)
    if found is None:
        return ""
    path, uid = found
    if not resume_from_others:
        raise ConfigError(
            f"cannot resume {str(paths[0])!r}: {path.name} there is another user's, {user_name(uid)}; "
            f"their results are not taken into yours unless you pass {OTHERS_FLAG}; nothing was changed: "
            f"use another out file, or pass the flag to keep their rows"
        )
    return user_name(uid)


def upgraded(frame: pd.DataFrame, defaults: dict[str, Any]) -> pd.DataFrame:
    """``frame`` with the columns older writers did not have, filled with what their rows had."""
    missing = {c: v for c, v in defaults.items() if c not in frame.columns}
    if not missing:
        return frame
    return frame.assign(
        **{
            c: np.full(len(frame), v, dtype=np.int64) if isinstance(v, int) else [v] * len(frame)
            for c, v in missing.items()
        }
    )


@dataclass
class Previous:
    """What an out file already holds, upgraded to the current columns: its frames, metadata, the
    configurations done, the cold references (kernel, size, timer) -> their sample rows, and (a
    sweep in units) its rows per (configuration, unit)."""

    samples: pd.DataFrame
    summary: pd.DataFrame
    metadata: dict[str, str] | None
    done: set[Configuration] = field(default_factory=set)
    units: pd.DataFrame | None = None
    owner: str = ""  #: whose files these are: "" for this user's, else the other user (``check_owner``)

    @property
    def run_id(self) -> str | None:
        return str(self.summary["run_id"].iloc[0]) if len(self.summary) else None

    def references(self) -> dict[ReferenceKey, pd.DataFrame]:
        cold = (
            self.samples[Configuration.marks_reference(self.samples).to_numpy()] if len(self.samples) else self.samples
        )
        return (
            {
                ReferenceKey(str(k), int(s), Timer.of_cell(t)): g
                for (k, s, t), g in cold.groupby(list(Configuration.REFERENCE_COLUMNS))
            }
            if len(cold)
            else {}
        )

    def with_cluster_columns(self) -> "Previous":
        """Rows of a one-device run inside a cluster file: not measured by a worker (``''``)."""
        fill = lambda f: f.assign(**{c: f[c].fillna("") if c in f else "" for c in CLUSTER_COLUMNS})  # noqa: E731
        return Previous(
            fill(self.samples),
            fill(self.summary),
            self.metadata,
            set(self.done),
            None if self.units is None else fill(self.units),
            self.owner,
        )


def previous_results(paths: tuple[Path, Path, Path] | None, resume: bool, resume_from_others: bool = False) -> Previous:
    """The out file's finished results (none without ``paths`` or with ``resume=False``); another
    user's files are refused unless ``resume_from_others`` (``check_owner``)."""
    owner = check_owner(paths, resume_from_others) if paths is not None and resume else ""
    got = read_results(paths) if paths is not None and resume else None
    if got is None:
        return Previous(empty_frame(SAMPLE_COLUMNS), empty_frame(SUMMARY_COLUMNS), None)
    samples, summary, meta = got
    try:  # the commit record's own copy first: meta.json is written after it, and may be a write behind
        meta = readback.embedded_metadata(paths[1]) or meta  # type: ignore[index]
    except Exception:  # noqa: BLE001 - unreadable metadata: what meta.json says
        pass
    summary = upgraded(summary, _UPGRADES_SUMMARY)
    units = read_units(paths)  # type: ignore[arg-type]
    return Previous(
        upgraded(samples, _UPGRADES_SAMPLES),
        summary,
        meta,
        set(Configuration.of_frame(summary)),
        None if units is None else upgraded(units, _UPGRADES_SUMMARY),
        owner,
    )


def _stable(obj: Any) -> str:
    """``repr`` without object addresses (a lambda's repr differs between processes); an object
    without a repr of its own is described by its attributes (a ``grid_stride``'s block and blocks)."""
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"
    if type(obj).__repr__ is object.__repr__ and hasattr(obj, "__dict__"):
        return f"{type(obj).__qualname__}({', '.join(f'{k}={_stable(v)}' for k, v in sorted(vars(obj).items()))})"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(obj))


def kernel_identity(kspec: Any, device: Any) -> str:
    """A digest of everything that decides what a kernel's rows measure on ``device``: the compile
    request (source and its include closure, entry, options, target) or code object (path, size,
    mtime), the arguments, the geometry and the traffic; plus the device's name."""
    from ..kernels.build import request_for

    if kspec.call is not None:
        code = _stable(kspec.call)
    elif kspec.code_object:
        st = Path(kspec.code_object).stat()
        code = f"{kspec.code_object}:{st.st_size}:{st.st_mtime_ns}"
    else:
        code = json.dumps(request_for(kspec, device.compiler, device.target).record(), sort_keys=True, default=str)
    parts = [
        code,
        _stable(kspec.args),
        _stable(kspec.geometry),
        _stable(kspec.bytes_per_launch),
        kspec.element_dtype,
        str(device.name),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def check_resume(path: str, previous: Previous, now: RunInfo, device_names: set[str] | None = None) -> None:
    """Refuse (one line) to add rows to ``previous`` that would be measured otherwise than its own:
    ``now`` is the new run's measurement (its ``spec``: ``SweepSpec.measurement()``; its measured
    ``llc_bytes`` where known) and kernel identities, compared with the file's as text;
    ``device_names`` the devices that will measure."""
    names = set(previous.summary["device_name"].unique()) if len(previous.summary) else set()
    if names and device_names is not None and not names <= device_names:
        now_text = repr(next(iter(device_names))) if len(device_names) == 1 else repr(sorted(device_names))
        raise ConfigError(
            f"cannot resume {path!r}: it holds results from {sorted(names)}, not {now_text}; use another out file"
        )
    meta = previous.metadata
    if meta is None:
        return
    from .spec import SweepSpec

    flat_now = metadata_text(now)
    llc = DEVICE_LLC_BYTES.name
    then = {**SweepSpec.recorded_measurement(meta), **{k: v for k, v in meta.items() if k == llc}}
    measure_now = {k: v for k, v in flat_now.items() if not IDENTITY.owns(k)}
    # a recorded spec is compared whole (a flush factor set only now differs too); a legacy file's
    # loose keys only where it has them, as before specs were recorded
    keys = sorted(set(then) | set(measure_now)) if meta.get(SWEEP_SPEC.name) else sorted(then)
    keys = [k for k in keys if k != llc or (llc in then and k in measure_now)]
    differ = [
        f"{k}: {then.get(k, '')!r} then, {measure_now.get(k, '')!r} now"
        for k in keys
        if then.get(k, "") != measure_now.get(k, "")
    ]
    if differ:
        raise ConfigError(
            f"cannot resume {path!r}: its finished rows were measured with other settings "
            f"({'; '.join(differ)}); use the same settings, --no-resume, or another out file"
        )
    kernels = {c.kernel for c in previous.done}
    ident_then, ident_now = IDENTITY.of(meta), IDENTITY.of(flat_now)
    changed = [
        f"{k} ({ident_then[k]} then, {ident_now[k]} now)"
        for k in sorted(kernels)
        if k in ident_now
        and k in ident_then  # older files: not recorded
        and ident_then[k] != ident_now[k]
    ]
    if changed:
        raise ConfigError(
            f"cannot resume {path!r}: its rows of {', '.join(changed)} were measured with other code, "
            f"options, arguments or geometry; --no-resume measures them again, or use another out file"
        )
