"""Run the review notebooks with papermill and export one self-contained HTML report.

Where the notebooks come from: the jupytext percent scripts in the repository's ``notebooks/``
are the reviewed source, paired with ``.ipynb`` files (outputs stripped). The package reaches them
as ``hipexplore/notebooks/``, a symlink to ``../notebooks`` in a checkout; setuptools follows it,
so a built wheel carries real copies (pyproject's package-data ``notebooks/*.ipynb``). Lookup
order: ``$HIPEXPLORE_NOTEBOOKS``, then ``hipexplore/notebooks/``, then ``<repo>/notebooks/``.

Reports carry static figures (widget state does not survive an HTML export) and a provenance
table; every image is an inline ``data:`` URI and no external script is left in the page, so the
file reads the same offline and in ten years.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from . import settings
from .errors import ConfigError, HipexploreError
from .schema import count_outcomes, require_columns

#: The notebooks that ship with hipexplore, by short name.
NOTEBOOKS = {
    "compile_cache": "compile_cache.ipynb",
    "rotating_buffers": "rotating_buffers.ipynb",
    "dashboard": "dashboard.ipynb",
}
#: The kernel papermill starts; a mismatch with the notebook's metadata is the classic CI failure.
KERNEL_NAME = "python3"
#: Provenance rows shown first, in this order; the rest follow sorted.
PROVENANCE_ORDER = (
    "recorded.note", "recorded.benchmark", "recorded.tuning", "recorded.replay_pass", "recorded.file",
    "device.name", "device.kind", "device.target", "device.driver", "device.runtime",
    "compiler.host", "compiler.hiprtc", "compiler.nvrtc",
    "hipexplore", "git_revision", "date", "command", "python", "platform", "cpu",
)


class ReportError(HipexploreError):
    """A notebook failed while running or the report could not be written; ``notebook`` holds
    the path of the executed (partial) notebook so nothing is lost."""

    def __init__(self, message: str, notebook: str | None = None) -> None:
        super().__init__(message)
        self.notebook = notebook


# ----------------------------------------------------------------------------------------------
# finding and parameterising notebooks


def notebooks_dir() -> Path:
    """The folder holding the shipped ``.ipynb`` files (see the module docstring for the order)."""
    env = settings.NOTEBOOKS.get()
    candidates = [env] if env is not None else []
    here = Path(__file__).resolve().parent
    candidates += [here / "notebooks", here.parent / "notebooks"]
    for cand in candidates:
        if (cand / NOTEBOOKS["dashboard"]).is_file():
            return cand
    raise ConfigError(f"no hipexplore notebooks found; looked for {NOTEBOOKS['dashboard']} in {[str(c) for c in candidates]}")


def notebook_path(name: str | os.PathLike) -> Path:
    """A shipped notebook by short name (``dashboard``), or an existing ``.ipynb`` path."""
    if str(name) in NOTEBOOKS:
        return notebooks_dir() / NOTEBOOKS[str(name)]
    path = Path(name)
    if path.suffix == ".ipynb" and path.is_file():
        return path
    raise ConfigError(f"notebook {str(name)!r} is neither one of {sorted(NOTEBOOKS)} nor an existing .ipynb file")


def load_params(path: str | os.PathLike | None) -> dict[str, Any]:
    """Notebook parameters from a YAML or JSON file (a mapping at the top level)."""
    if path is None:
        return {}
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read parameters file {str(p)!r}: {exc.strerror or exc}") from exc
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # both parsers raise their own hierarchies
        raise ConfigError(f"parameters file {str(p)!r} is not valid {'JSON' if p.suffix.lower() == '.json' else 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConfigError(f"parameters file {str(p)!r} must hold a mapping of names to values; got {type(data).__name__}")
    return data


def notebook_parameters(notebook: str | os.PathLike) -> dict[str, Any]:
    """The names of a notebook's ``parameters`` cell and their defaults (as source text)."""
    import papermill as pm

    path = notebook_path(notebook)
    found = pm.inspect_notebook(str(path))
    if not found:
        raise ConfigError(f"notebook {str(path)!r} has no cell tagged 'parameters'")
    return {name: info.get("default") for name, info in found.items()}


def check_parameters(notebook: str | os.PathLike, params: Mapping[str, Any]) -> None:
    """Refuse names the notebook does not declare: papermill would silently add them."""
    known = notebook_parameters(notebook)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(f"unknown parameters {unknown} for notebook {Path(notebook_path(notebook)).name}; expected some of {sorted(known)}")


# ----------------------------------------------------------------------------------------------
# running and exporting


@contextlib.contextmanager
def _this_python_kernel() -> Iterator[None]:
    """Make kernel ``python3`` this interpreter for the duration of a run.

    A ``python3`` kernelspec elsewhere on the machine (a user-wide one pointing at another Python)
    would start a kernel without hipexplore; a spec placed first on ``JUPYTER_PATH`` wins.
    """
    with tempfile.TemporaryDirectory(prefix="hipexplore-kernel-") as tmp:
        spec_dir = Path(tmp) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        # the kernel's own log only says "KeyboardInterrupt caught" when papermill stops it and
        # warns about TCP on 127.0.0.1; cell errors and a dying kernel still reach ReportError
        spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--IPKernelApp.log_level=CRITICAL"],
                "display_name": "Python 3 (hipexplore)", "language": "python"}
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = os.pathsep.join([tmp, *([old] if old else [])])
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


def execute_notebook(
    notebook: str | os.PathLike,
    params: Mapping[str, Any] | None = None,
    output: str | os.PathLike | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float | None = 600,
) -> Any:
    """Execute a notebook with papermill (kernel ``python3``) and return the executed node.

    Unknown parameters raise ``ConfigError``; a failing cell raises ``ReportError`` naming the
    cell's error, with the executed notebook (outputs up to the failure) kept at ``output``.
    """
    import nbformat
    import papermill as pm

    params = dict(params or {})
    path = notebook_path(notebook)
    check_parameters(path, params)
    out_path = Path(output) if output else Path(tempfile.mkdtemp(prefix="hipexplore-nb-")) / path.name
    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _this_python_kernel():
            pm.execute_notebook(
                str(path),
                str(out_path),
                parameters=params,
                kernel_name=KERNEL_NAME,
                cwd=str(cwd) if cwd else None,
                execution_timeout=timeout,
                progress_bar=False,
                report_mode=False,
                request_save_on_cell_execute=False,
            )
    except pm.PapermillExecutionError as exc:
        raise ReportError(
            f"notebook {path.name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue} "
            f"(executed notebook kept at {out_path})",
            notebook=str(out_path),
        ) from exc
    except Exception as exc:
        if isinstance(exc, HipexploreError):
            raise
        raise ReportError(f"could not run notebook {path.name} with kernel {KERNEL_NAME!r}: {type(exc).__name__}: {exc}", notebook=str(out_path)) from exc
    return nbformat.read(str(out_path), as_version=4)


_EXTERNAL_SCRIPT = re.compile(r'<script\b[^>]*\bsrc\s*=\s*["\']https?://[^"\']*["\'][^>]*>\s*</script>', re.I)
#: nbconvert's loaders that fetch from a CDN: MathJax (needs the removed script) and mermaid
_CDN_LOADERS = re.compile(r'<script type="text/x-mathjax-config">.*?</script>|<script type="module">(?:(?!</script>).)*?mermaid.*?</script>', re.S)
_EXTERNAL_REF = re.compile(
    r'<(?:img|script|link|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*["\'](?:https?:)?//[^"\']*["\']'
    r'|\bimport\s*\(\s*["\']https?://[^"\']*["\']|url\(\s*["\']?https?://[^)]*\)', re.I)


def external_references(html: str) -> list[str]:
    """What would fetch something from the network to render the page: image, script, style
    and frame sources, dynamic imports, CSS ``url(http...)``."""
    return [m.group(0) for m in _EXTERNAL_REF.finditer(html)]


def export_html(nb: Any, no_input: bool = False, title: str | None = None) -> str:
    """One self-contained HTML page: inline images, no widget state, no CDN scripts.

    nbconvert's lab template links require.js and MathJax from a CDN; the report needs neither
    (no math, no widgets), so those tags are removed and the result is checked for any other
    network reference.
    """
    import copy

    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    if title:
        nb.metadata["title"] = title
    for cell in nb.cells:  # widget views cannot render without their JS: say so instead
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and "application/vnd.jupyter.widget-view+json" in data:
                data.clear()
                data["text/plain"] = "(interactive widget: open the notebook in JupyterLab to use it)"
    exporter = HTMLExporter(embed_images=True, exclude_input=no_input, exclude_input_prompt=no_input, exclude_output_prompt=no_input)
    html, _ = exporter.from_notebook_node(nb)
    html = _EXTERNAL_SCRIPT.sub("", html)
    html = _CDN_LOADERS.sub("", html)
    left = external_references(html)
    if left:
        raise ReportError(f"exported HTML still references the network: {left[:3]}")
    return html


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # an ordinary file, not mkstemp's 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class ReportResult:
    html: Path
    notebook: Path | None  # the executed notebook, when ``notebook_out`` asked to keep it
    params: dict[str, Any] = field(default_factory=dict)


def build_report(
    params: Mapping[str, Any] | str | os.PathLike | None = None,
    out: str | os.PathLike = "report.html",
    no_input: bool = False,
    command: str | Sequence[str] | None = None,
    notebook_out: str | os.PathLike | None = None,
    timeout: float | None = 900,
) -> ReportResult:
    """Run the dashboard notebook and write ``out`` (HTML). ``params`` is a mapping or a YAML/JSON
    file; ``command`` is recorded in the provenance table (defaults to this process's argv)."""
    values = dict(params) if isinstance(params, Mapping) else load_params(params)
    if command is None:
        command = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    if not isinstance(command, str):
        command = shlex.join(str(c) for c in command)
    known = notebook_parameters("dashboard")
    if "command" in known and "command" not in values:
        values["command"] = command
    out_path = Path(out)
    if out_path.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"report output must be an .html file; got {str(out_path)!r}")
    # the executed notebook: where asked, else a temporary file that is removed after a success
    # and kept (named in the error) after a failure
    scratch = None if notebook_out else Path(tempfile.mkdtemp(prefix="hipexplore-report-"))
    nb_path = Path(notebook_out) if notebook_out else scratch / "dashboard.ipynb"
    # relative data paths in the parameters are taken from the caller's directory
    nb = execute_notebook("dashboard", values, output=nb_path, cwd=Path.cwd(), timeout=timeout)
    html = export_html(nb, no_input=no_input, title="hipexplore review report")
    _atomic_write(out_path, html)
    if scratch is not None:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return ReportResult(html=out_path, notebook=None if scratch is not None else nb_path, params=values)


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


def _kind_of(columns: Sequence[str]) -> str | None:
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
            try:
                out.update({str(a): str(b) for a, b in json.loads(val).items()})
            except (ValueError, AttributeError):
                continue
        elif key.startswith("provenance."):
            out[key[len("provenance."):]] = val
    return out


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
    or else the one with the most configurations (the latest on a tie), and a note says so;
    likewise the largest replay frame when there are several.
    """
    root = Path(path)
    if not root.exists():
        raise ConfigError(f"recorded data path {str(root)!r} does not exist (expected a parquet file or a folder of them)")
    files = _recorded_files(root)
    if not files:
        raise ConfigError(f"no .parquet files under {str(root)!r}")
    found: dict[str, list[tuple[Path, pd.DataFrame, dict[str, str]]]] = {"samples": [], "summary": [], "events": [], "passes": []}
    for f in files:
        frame = pd.read_parquet(f)
        kind = _kind_of(frame.columns)
        if kind is not None:
            found[kind].append((f, frame, parquet_provenance(f)))
    if not any(found.values()):
        raise ConfigError(f"no parquet file under {str(root)!r} holds benchmark samples, summary or cache events")
    rec = Recorded()
    if found["summary"]:
        summary = pd.concat([fr for _, fr, _ in found["summary"]], ignore_index=True)
        prov_by_run: dict[str, dict[str, str]] = {}
        for f, fr, prov in found["summary"]:
            for rid in (pd.unique(fr["run_id"]) if "run_id" in fr.columns else []):
                prov_by_run.setdefault(str(rid), {**prov, "recorded.file": str(f)})
        if "run_id" in summary.columns and summary["run_id"].nunique() > 1:
            runs = summary.groupby("run_id").size()
            if run_id is None:
                run_id = max(runs.index, key=lambda r: (int(runs[r]), prov_by_run.get(str(r), {}).get("date", "")))
                rec.notes.append(f"{root} holds {len(runs)} sweeps ({', '.join(f'{r}: {n} configurations' for r, n in runs.items())}); "
                                 f"showing run {run_id}. Pass one sweep's .parquet file to choose another.")
            elif run_id not in runs.index:
                raise ConfigError(f"run_id {run_id!r} is not under {str(root)!r}; it holds {sorted(runs.index)}")
        if run_id is not None and "run_id" in summary.columns:
            summary = summary[summary["run_id"] == run_id].reset_index(drop=True)
        rec.summary = summary
        chosen = str(run_id) if run_id is not None else (str(summary["run_id"].iloc[0]) if "run_id" in summary.columns and len(summary) else "")
        rec.provenance.update(prov_by_run.get(chosen, found["summary"][0][2]))
        rec.files += [str(f) for f, fr, _ in found["summary"] if "run_id" not in fr.columns or chosen in set(map(str, fr["run_id"]))]
    if found["samples"]:
        samples = pd.concat([fr for _, fr, _ in found["samples"]], ignore_index=True)
        if rec.summary is not None and "run_id" in samples.columns and "run_id" in rec.summary.columns:
            samples = samples[samples["run_id"].isin(set(rec.summary["run_id"]))].reset_index(drop=True)
        rec.samples = samples
    if found["events"]:
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
    return rec


def provenance_table(info: Mapping[str, Any], recorded: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Provenance as a two- or three-column table: the report's run and, when the figures come
    from recorded files, the run that recorded them."""
    keys = [k for k in PROVENANCE_ORDER if k in info or (recorded and k in recorded)]
    rest = sorted((set(info) | set(recorded or {})) - set(keys))
    keys += rest
    table = pd.DataFrame({"item": keys, "this run": [str(info.get(k, "")) for k in keys]})
    if recorded:
        table["recorded data"] = [str(recorded.get(k, "")) for k in keys]
    return table.set_index("item")


def full_width(table: pd.DataFrame) -> Any:
    """The table for display without pandas' 50-character cell truncation (provenance values
    such as the command line must appear whole in the report), left-aligned."""
    return table.style.set_properties(**{"text-align": "left", "white-space": "pre-wrap"})


def collect_provenance(device_properties: Mapping[str, Any] | None = None, command: str | Sequence[str] | None = None) -> dict[str, str]:
    """``provenance.collect`` plus the device's properties under ``device.*`` (empty or None
    ``command`` means this process's argv)."""
    from .provenance import collect

    info = collect(None, command=command or None)
    for k, v in (device_properties or {}).items():
        info[f"device.{k}"] = str(v)
    return info


# ----------------------------------------------------------------------------------------------
# the tuning replay, live or recorded

#: Which replay scenario the figures show, first present wins; ``off`` is the measured baseline.
PRIMARY_SCENARIOS = ("memory", "disk-cold", "disk", "disk-warm", "off")


@dataclass
class ReplayData:
    """A tuning replay split the way the figures need it."""

    frame: pd.DataFrame
    events: pd.DataFrame
    baseline: pd.DataFrame | None
    scenarios: pd.DataFrame
    primary: str
    source: str
    by_role: pd.DataFrame | None = None
    provenance: dict[str, str] = field(default_factory=dict)


def scenario_table(frame: pd.DataFrame, wall_seconds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per scenario: lookups, compiles, hits by tier, joins, failures, summed lookup
    seconds (serial cost) and, for live runs, the measured wall time of the pass."""
    require_columns(frame, ("scenario", "outcome", "lookup_seconds", "compile_seconds"), "replay frame")
    rows = []
    for name, grp in frame.groupby("scenario", sort=False):
        counts = count_outcomes(grp["outcome"])
        counts.pop("hits")
        rows.append({
            "scenario": name,
            **counts,
            "lookup_seconds_sum": float(grp["lookup_seconds"].sum()),
            "wall_seconds": float((wall_seconds or {}).get(name, float("nan"))),
        })
    return pd.DataFrame(rows).set_index("scenario")


def one_pass(frame: pd.DataFrame, jobs: int | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of one replay pass per scenario: a recorded benchmark may hold several job counts
    (``jobs``) and repetitions (``round``); keep ``jobs`` (default: the smallest, serial) and
    the first round. Returns the rows and a note saying what was kept, empty when nothing was
    dropped."""
    notes = []
    if "jobs" in frame.columns and frame["jobs"].nunique() > 1:
        have = sorted(int(j) for j in pd.unique(frame["jobs"]))
        pick = have[0] if jobs is None else int(jobs)
        if pick not in have:
            raise ConfigError(f"replay frame has no passes with jobs={jobs!r}; it holds jobs {have}")
        frame = frame[frame["jobs"] == pick]
        notes.append(f"jobs={pick} of {have}")
    if "round" in frame.columns and frame["round"].nunique() > 1:
        rounds = sorted(pd.unique(frame["round"]))
        frame = frame[frame["round"] == rounds[0]]
        notes.append(f"round {rounds[0]} of {len(rounds)}")
    return frame, ("showing the replay pass with " + ", ".join(notes)) if notes else ""


def split_replay(frame: pd.DataFrame, source: str, wall_seconds: Mapping[str, float] | None = None,
                 primary: str | None = None, jobs: int | None = None) -> ReplayData:
    """Pick the scenario to show (``primary``) and the measured cache-off pass as its baseline,
    from one pass (see ``one_pass``)."""
    require_columns(frame, ("scenario", "seq", "outcome", "lookup_seconds", "compile_seconds"), "replay frame")
    frame, note = one_pass(frame, jobs)
    present = list(pd.unique(frame["scenario"]))
    if primary is None:
        primary = next((s for s in PRIMARY_SCENARIOS if s in present), None)
    if primary not in present:
        raise ConfigError(f"replay frame has no scenario {primary!r}; it holds {present}")
    events = frame[frame["scenario"] == primary].sort_values("seq").reset_index(drop=True)
    baseline = None
    if primary != "off" and "off" in present:
        off = frame[frame["scenario"] == "off"].sort_values("seq").reset_index(drop=True)
        baseline = off if len(off) == len(events) else None
    by_role = None
    if "role" in frame.columns:
        by_role = pd.crosstab(events["role"], events["outcome"])
    data = ReplayData(frame, events, baseline, scenario_table(frame, wall_seconds), primary, source, by_role)
    if note:
        data.provenance["recorded.replay_pass"] = note
    return data


def replay_data(
    source: str = "live",
    compiler: str = "host",
    target: str = "host",
    problems: int | str | None = 1,
    candidates: int | None = 4,
    jobs: int = 1,
    cache: str = "memory",
) -> ReplayData:
    """Replay a (small) split-K tuning list through the cache, or load a recorded replay.

    source: ``"live"`` or a parquet file/folder holding a replay frame (cache event columns plus
    ``scenario``). problems: a count or names (see ``tuning.lists.select_problems``); candidates:
    how many candidates per problem to keep.
    """
    if source != "live":
        rec = load_recorded(source)
        if rec.events is None:
            raise ConfigError(f"no replay/cache-event parquet under {source!r} (expected columns seq, outcome, lookup_seconds, ...)")
        frame = rec.events if "scenario" in rec.events.columns else rec.events.assign(scenario="recorded")
        data = split_replay(frame, source=str(source), jobs=jobs)
        if rec.passes is not None and len(data.events):
            passes = rec.passes
            for col in ("jobs", "round"):
                if col in passes.columns and col in data.frame.columns:
                    passes = passes[passes[col] == data.frame[col].iloc[0]]
            walls = dict(zip(passes["scenario"], passes["seconds"].astype(float)))
            data.scenarios = scenario_table(data.frame, walls)
        data.provenance.update({**rec.provenance, **({"recorded.note": " ".join(rec.notes)} if rec.notes else {})})
        return data
    from .tuning.lists import build_list, select_problems
    from .tuning.replay import run_replay

    tl = build_list(compiler, target, problems=select_problems(None if problems is None else str(problems)), limit=candidates)
    rep = run_replay(tl, jobs=jobs, cache=cache, measure_without_cache=True)
    walls = {name: s.seconds for name, s in rep.scenarios.items()}
    frame = rep.frame
    data = split_replay(frame[frame["scenario"] != "ideal"], source="live", wall_seconds=walls, primary=rep.primary)
    data.scenarios = scenario_table(frame, walls)
    return data


def cache_demo(compiler: str = "host", target: str = "host") -> pd.DataFrame:
    """Three lookups through a fresh memory cache: a compile, a hit of the same request, and the
    same request with the ``trace`` diagnostic (which bypasses the cache). Returns the events."""
    from .compile.cache import CompileCache
    from .kernels.gemm import GemmConfig, GemmShape, kernel_request
    from .tuning.replay import make_compiler

    comp = make_compiler(compiler, 1)
    try:
        cache = CompileCache(disk_dir=False)
        req = kernel_request("fill", compiler, target, GemmShape(64, 64, 64), GemmConfig(split=1), label="demo fill")
        cache.get_or_compile(req, comp)
        cache.get_or_compile(req.with_(label="demo fill, again"), comp)
        cache.get_or_compile(req.with_(label="demo fill, traced", diagnostics=frozenset({"trace"})), comp)
    finally:
        comp.close()
    ev = cache.events()
    ev["digest"] = ev["digest"].str[:16]
    return ev[["seq", "kernel", "outcome", "digest", "lookup_seconds", "compile_seconds", "seconds_saved", "bytes"]]


# ----------------------------------------------------------------------------------------------
# benchmark sweeps, live or recorded


@dataclass
class BenchData:
    samples: pd.DataFrame
    summary: pd.DataFrame
    source: str
    device_properties: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)


def benchmark_data(
    source: str = "live",
    device: str = "auto",
    kernel: str = "triad",
    sizes: Sequence[int | str] | str = ("1MiB",),
    rotating: Sequence[int | str] | str = (1, 2, 4, "auto"),
    flush: Sequence[str] | str = ("none", "l2-read"),
    iterations: int | None = 40,
    progress: bool = False,
    command: str | Sequence[str] | None = None,
) -> BenchData:
    """A rotating x flush sweep of one kernel on ``device`` (``hipexplore.bench.sweep``), or the
    frames recorded under ``source`` (a parquet file or folder). ``iterations`` must be at least
    the largest rotating count (``auto`` included); None lets the adaptive stop rule decide."""
    if source != "live":
        rec = load_recorded(source)
        if rec.summary is None:
            raise ConfigError(f"no benchmark summary parquet under {source!r} (expected columns median_s, iqr_rel, ...)")
        samples = rec.samples if rec.samples is not None else pd.DataFrame()
        props = {k[len("device."):]: v for k, v in rec.provenance.items() if k.startswith("device.")}
        prov = {**rec.provenance, **({"recorded.note": " ".join(rec.notes)} if rec.notes else {})}
        return BenchData(samples, rec.summary, str(source), props, prov)
    from .bench.sweep import sweep
    from .devices import get_device

    dev = get_device(device)
    try:
        props = dev.properties
        props = props.as_dict() if hasattr(props, "as_dict") else dict(props)
        note = ""
        if iterations is not None:  # 'auto' can want more sets than the notebook's iteration count on a large LLC
            try:
                needed = _most_sets(kernel, sizes, rotating, dev.llc_bytes)
            except HipexploreError:  # a bad argument: let the sweep itself report it
                needed = iterations
            if needed > iterations:
                note = (f"iterations raised from {iterations} to {needed}: rotating 'auto' wants {needed} buffer sets "
                        f"on this device (LLC {dev.llc_bytes} B), and every set must be timed at least once")
                iterations = needed
        result = sweep(kernel, sizes, rotating, flush, device=dev, iterations=iterations, progress=progress, command=command)
        if note:
            result.metadata["report.iterations_note"] = note
    finally:
        close = getattr(dev, "close", None)
        if callable(close):
            close()
    if result.summary.empty:
        raise HipexploreError(f"the sweep on {device!r} returned no summary rows")
    return BenchData(result.samples, result.summary, "live", props, dict(result.metadata))


def _most_sets(kernel: str, sizes: Sequence[int | str] | str, rotating: Sequence[int | str] | str, llc_bytes: int) -> int:
    """The largest buffer-set count the sweep will ask for (before the memory cap)."""
    from .bench import rotating as rot
    from .bench.sweep import parse_size
    from .kernels import catalog

    spec = catalog.get(kernel)
    size_list = [sizes] if isinstance(sizes, (int, str)) else list(sizes)
    rot_list = [rotating] if isinstance(rotating, (int, str)) else list(rotating)
    counts = [1]
    for size in size_list:
        n = spec.elements(parse_size(size))
        for r in rot_list:
            req = rot.parse_rotating(r)
            counts.append(rot.auto_count(llc_bytes, spec.footprint(n)) if req == "auto" else int(req))
    return max(counts)


def provenance_for(bench: BenchData | None, replay: ReplayData | None = None, command: str | Sequence[str] | None = None) -> pd.DataFrame:
    """The report's provenance table: this run (device properties included) and, when figures
    come from recorded files, what those files say about the run that recorded them."""
    live = bench is not None and bench.source == "live"
    info = collect_provenance(bench.device_properties if live else None, command)
    if live:  # how the sweep measured: stop rule, timing method, flush sizes, run id
        info.update({k: v for k, v in bench.provenance.items() if k.startswith(("sweep.", "timing.", "flush.", "run_id"))})
    recorded: dict[str, str] = {}
    if replay is not None and replay.source != "live":
        recorded.update(replay.provenance)
        recorded["recorded.tuning"] = replay.source
    if bench is not None and bench.source != "live":
        recorded.update(bench.provenance)
        recorded["recorded.benchmark"] = bench.source
    return provenance_table(info, recorded or None)


# ----------------------------------------------------------------------------------------------
# what the dashboard shows

#: Summary columns a reviewer reads first.
SUMMARY_VIEW = ("flush", "rotating_requested", "rotating", "n", "median_s", "iqr_rel", "cv", "bias",
                "bandwidth_gbs", "n_outliers", "warning")


def bench_configuration(bench: BenchData) -> dict[str, Any]:
    """The one (kernel, size) the single-configuration figures show: the first kernel and its
    smallest size, where launch overhead and cache state move the numbers most."""
    summary = bench.summary
    kernel = list(pd.unique(summary["kernel"]))[0]
    size = int(summary.loc[summary["kernel"] == kernel, "size_bytes"].min())
    device_name = str(summary["device_name"].iloc[0]) if "device_name" in summary.columns else str(bench.device_properties.get("name", ""))
    return {"kernel": kernel, "size_bytes": size, "device_name": device_name}


def dashboard_configuration(bench: BenchData, replay: ReplayData) -> dict[str, Any]:
    """``bench_configuration`` plus the composite figure's title."""
    from .plots import format_bytes

    cfg = bench_configuration(bench)
    kernel, size, device_name = cfg["kernel"], cfg["size_bytes"], cfg["device_name"]
    ev = replay.events
    comp = f"{ev['compiler'].iloc[0]}/{ev['target'].iloc[0]}" if {"compiler", "target"} <= set(ev.columns) and len(ev) else ""
    title = (f"{device_name} — {kernel}, {format_bytes(size)} per array   |   "
             f"tuning replay {comp}: {len(ev)} requests, cache '{replay.primary}'")
    return {"kernel": kernel, "size_bytes": size, "device_name": device_name, "title": title}


def summary_table(summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> pd.DataFrame:
    """The reviewer's columns of one configuration's summary rows, sorted by flush and rotating."""
    from .plots import one_configuration

    from .plots import time_unit

    rows = one_configuration(summary, kernel, size_bytes, "summary frame")
    cols = [c for c in SUMMARY_VIEW if c in rows.columns]
    table = rows.sort_values(["flush", "rotating"])[cols].reset_index(drop=True)
    scale, unit = time_unit(table["median_s"])  # seconds with six decimals hide the differences
    table["median_s"] = table["median_s"] * scale
    return table.rename(columns={"median_s": f"median_{unit.replace('µ', 'u')}"})


__all__ = [
    "BenchData",
    "KERNEL_NAME",
    "ReplayData",
    "bench_configuration",
    "benchmark_data",
    "cache_demo",
    "dashboard_configuration",
    "summary_table",
    "collect_provenance",
    "full_width",
    "provenance_for",
    "replay_data",
    "scenario_table",
    "split_replay",
    "NOTEBOOKS",
    "Recorded",
    "ReportError",
    "ReportResult",
    "build_report",
    "check_parameters",
    "execute_notebook",
    "export_html",
    "external_references",
    "load_params",
    "load_recorded",
    "notebook_parameters",
    "notebook_path",
    "notebooks_dir",
    "parquet_provenance",
    "provenance_table",
]
