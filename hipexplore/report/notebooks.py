"""Run the review notebooks with papermill and export one self-contained HTML report.

Where the notebooks come from: ``workspace.py`` (the jupytext scripts in ``notebooks/`` are the one
source; ``notebook_path`` makes an ``.ipynb`` from one in a temporary folder, never beside it).

Reports carry static figures (widget state does not survive an HTML export) and a provenance
table; every image is an inline ``data:`` URI and no script is left in the page, so the file reads
the same offline and in ten years. Every string in it that came from a run, a list or a source file
is HTML-escaped where it is written (``recorded.escaped_style``, ``review.Banner``/``Headline``,
``headline.HeadlineBox``/``Paragraph``),
and a Content-Security-Policy (``CSP``) forbids scripts in case one slips through.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import ConfigError, HipexploreError
from ..extras import require
from ..files import write_file
from ..interpreter import kernel_argv, safe_environ
from .workspace import KERNEL_NAME, NOTEBOOKS, notebook_path, notebooks_dir  # noqa: F401 (re-exported)


class ReportError(HipexploreError):
    """A notebook failed while running or the report could not be written; ``notebook`` holds
    the path of the executed (partial) notebook so nothing is lost."""

    def __init__(self, message: str, notebook: str | None = None) -> None:
        super().__init__(message)
        self.notebook = notebook


# ----------------------------------------------------------------------------------------------
# finding and parameterising notebooks


#: A parameters file is a few lines of names and values. Larger or deeper is not one, and papermill
#: writes every value into the notebook's source (a huge value hangs the report before it starts).
PARAMS_MAX_BYTES = 64 * 1024
PARAMS_MAX_DEPTH = 8


def load_params(path: str | os.PathLike | None) -> dict[str, Any]:
    """Notebook parameters from a YAML or JSON file (a mapping at the top level).

    YAML aliases are refused (``_yaml_without_aliases``), the file and its nesting are bounded
    (``PARAMS_MAX_BYTES``, ``PARAMS_MAX_DEPTH``), and ``tuning_data: none`` (or null, ``~``) means
    no tuning data, not a file named ``none`` next to the parameters file."""
    if path is None:
        return {}
    p = Path(path)
    where = f"parameters file {str(p)!r}"
    try:
        if p.is_file() and p.stat().st_size > PARAMS_MAX_BYTES:
            raise ConfigError(f"{where} is {p.stat().st_size} bytes; a parameters file is at most {PARAMS_MAX_BYTES}")
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read parameters file {str(p)!r}: {exc.strerror or exc}") from exc
    json_file = p.suffix.lower() == ".json"
    if not json_file:
        require("yaml", f"parameters file {str(p)!r} (YAML; a .json file needs nothing more)", "notebook")
    try:
        data = json.loads(text) if json_file else _yaml_without_aliases(text, where)
    except ConfigError:
        raise
    except Exception as exc:  # both parsers raise their own hierarchies (RecursionError for absurd nesting too)
        raise ConfigError(f"{where} is not valid {'JSON' if json_file else 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConfigError(f"{where} must hold a mapping of names to values; got {type(data).__name__}")
    _check_depth(data, where)
    no_tuning_data(data)
    base = p.resolve().parent  # `data: data/h200` means next to the parameters file, wherever the command runs
    for name in PATH_PARAMS:
        value = data.get(name)
        if isinstance(value, str) and value not in ("live", "none") and not Path(value).expanduser().is_absolute():
            data[name] = str(base / value)
    check_values(data, where)
    return data


def _yaml_without_aliases(text: str, where: str) -> Any:
    """``yaml.safe_load`` that refuses aliases (``*name``, merge keys ``<<: *name`` included).

    Why: an alias repeats its anchor's whole value, so nine anchors of nine aliases each (under
    400 bytes) expand to 9^9 items; PyYAML builds them all and papermill then writes them out.
    A parameters file has no use for them; refusing them at the first alias costs nothing."""
    import yaml

    class Loader(yaml.SafeLoader):  # the pure-Python composer: libyaml's gives no hook per node
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise ConfigError(
                    f"{where}: line {event.start_mark.line + 1}: YAML alias *{event.anchor} refused "
                    f"(aliases can expand a few bytes into gigabytes); write the value out"
                )
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass


def _check_depth(value: Any, where: str, depth: int = 0) -> None:
    if depth > PARAMS_MAX_DEPTH:
        raise ConfigError(
            f"{where} nests values more than {PARAMS_MAX_DEPTH} deep; parameters are names, numbers and short lists"
        )
    if isinstance(value, dict):
        for v in value.values():
            _check_depth(v, where, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_depth(v, where, depth + 1)


def no_tuning_data(params: dict[str, Any]) -> None:
    """``tuning_data`` given as none, null or ``~`` (YAML reads the last two as None; JSON's null
    is None too) becomes ``"none"``: the notebooks' word for "no tuning replay"."""
    value = params.get("tuning_data", "live")
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "~")):
        params["tuning_data"] = "none"


#: parameters naming files or folders: relative ones are taken from the parameters file's folder
PATH_PARAMS = ("data", "tuning_data")
#: parameters that must be positive integers (``iterations`` may also be null: adaptive)
_COUNT_PARAMS = ("iterations", "jobs", "candidates")


def check_values(params: Mapping[str, Any], where: str = "parameters") -> None:
    """Refuse values the notebook would misread (``iterations: abc``), also where the value
    would go unused (recorded data): a typo must not pass silently."""
    for name in _COUNT_PARAMS:
        if name not in params or (name == "iterations" and params[name] is None):
            continue
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"{where}: {name}: {value!r} is not a positive integer"
                + (" (or null for adaptive sampling)" if name == "iterations" else "")
            )


def notebook_parameters(notebook: str | os.PathLike) -> dict[str, Any]:
    """The names of a notebook's ``parameters`` cell and their defaults (as source text)."""
    pm = require("papermill", "running a notebook", "notebook")

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
        from .params import did_you_mean

        raise ConfigError(
            f"unknown parameters {unknown}{did_you_mean(unknown[0], set(known))} for notebook "
            f"{Path(notebook_path(notebook)).name}; expected some of {sorted(known)}"
        )


# ----------------------------------------------------------------------------------------------
# running and exporting


@contextlib.contextmanager
def _this_python_kernel() -> Iterator[None]:
    """Make kernel ``hipexplore`` this interpreter for the duration of a run.

    A ``hipexplore`` kernelspec elsewhere on the machine (a user-wide one pointing at another Python)
    would start a kernel without hipexplore; a spec placed first on ``JUPYTER_PATH`` wins.
    """
    with tempfile.TemporaryDirectory(prefix="hipexplore-kernel-") as tmp:
        spec_dir = Path(tmp) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        # the kernel's own log only says "KeyboardInterrupt caught" when papermill stops it and
        # warns about TCP on 127.0.0.1; cell errors and a dying kernel still reach ReportError
        # the kernel's path never holds its working directory (the report's folder): kernel_argv's -P
        spec = {
            "argv": [*kernel_argv(), "--IPKernelApp.log_level=CRITICAL"],
            "display_name": "Python (hipexplore)",
            "language": "python",
        }
        pythonpath = safe_environ().get("PYTHONPATH")
        if (
            pythonpath is not None or "PYTHONPATH" in os.environ
        ):  # the kernel's own: no empty/relative entry (= the cwd)
            spec["env"] = {"PYTHONPATH": pythonpath or ""}
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
    progress: bool = False,
) -> Any:
    """Execute a notebook with papermill (kernel ``hipexplore``) and return the executed node.

    Unknown parameters raise ``ConfigError``; a failing cell raises ``ReportError`` naming the
    cell's error, with the executed notebook (outputs up to the failure) kept at ``output``.
    papermill writes into a fresh private folder (it opens its output path as it is, following a
    link someone planted at that name); ``output`` gets a copy through ``files.write_file``.
    """
    require("nbformat", "running a notebook", "notebook")
    require("papermill", "running a notebook", "notebook")
    params = dict(params or {})
    path = notebook_path(notebook)
    check_parameters(path, params)
    import shutil

    scratch = Path(tempfile.mkdtemp(prefix="hipexplore-nb-")) / path.name
    if not output:  # kept (and named) only when a cell fails
        nb = _papermill(path, scratch, scratch, params, cwd, timeout, progress)
        shutil.rmtree(scratch.parent, ignore_errors=True)
        return nb
    out_path = Path(output)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _papermill(path, scratch, out_path, params, cwd, timeout, progress)
    finally:  # after a failing cell too: the outputs up to it
        try:
            if scratch.exists():
                write_file(out_path, scratch.read_bytes(), what="executed notebook")
        finally:
            shutil.rmtree(scratch.parent, ignore_errors=True)


def _papermill(
    path: Path,
    out_path: Path,
    shown: Path,
    params: dict[str, Any],
    cwd: str | os.PathLike | None,
    timeout: float | None,
    progress: bool,
) -> Any:
    """Run the notebook into ``out_path`` (a private scratch file); errors name ``shown``, where the
    caller keeps it."""
    import nbformat
    import papermill as pm

    try:
        with _this_python_kernel():
            pm.execute_notebook(
                str(path),
                str(out_path),
                parameters=params,
                kernel_name=KERNEL_NAME,
                cwd=str(cwd) if cwd else None,
                execution_timeout=timeout,
                progress_bar=progress,  # papermill's tqdm bar: one step per cell, on stderr
                report_mode=False,
                request_save_on_cell_execute=False,
            )
    except pm.PapermillExecutionError as exc:
        raise ReportError(
            f"notebook {path.name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue} "
            f"(executed notebook kept at {shown})",
            notebook=str(shown),
        ) from exc
    except Exception as exc:
        if isinstance(exc, HipexploreError):
            raise
        raise ReportError(
            f"could not run notebook {path.name} with kernel {KERNEL_NAME!r}: {type(exc).__name__}: {exc}",
            notebook=str(shown),
        ) from exc
    return nbformat.read(str(out_path), as_version=4)


#: The page's Content-Security-Policy: no script of any kind (inline, event handler, remote), no
#: fetch, frame, form or base URL; images only as ``data:`` URIs (the figures, the theme's icons),
#: styles only inline (nbconvert's theme, pandas' table styles). A string from a run file that
#: escaped escaping still cannot run or phone home.
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; form-action 'none'"
)
#: nbconvert's lab template without what a static report does not need: require.js, MathJax and
#: mermaid from a CDN, the widget manager; with the CSP first in <head>, before anything it governs.
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.hipexplore_csp }}">
<meta name="generator" content="hipexplore report">
{{ super() }}
{%- endblock html_head -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
"""
_SCRIPT = re.compile(r"<script\b", re.I)
_EXTERNAL_REF = re.compile(
    r'<(?:img|script|link|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*["\'](?:https?:)?//[^"\']*["\']'
    r'|\bimport\s*\(\s*["\']https?://[^"\']*["\']|url\(\s*["\']?https?://[^)]*\)',
    re.I,
)


def external_references(html: str) -> list[str]:
    """What would fetch something from the network to render the page: image, script, style
    and frame sources, dynamic imports, CSS ``url(http...)``."""
    return [m.group(0) for m in _EXTERNAL_REF.finditer(html)]


#: the report must read at 900 px without sideways scrolling: figures scale down, long table
#: cells (warnings, provenance values, command lines) and code wrap instead of widening the page;
#: printed lines wrap between words (JupyterLab's ``word-break: break-all`` cut "in|ferred"), a word
#: only where it is wider than the page
_NARROW_CSS = """<style>
.jp-RenderedImage img, .jp-OutputArea-output img { max-width: 100%; height: auto; }
.jp-RenderedHTMLCommon table { max-width: 100%; font-size: 0.85em; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { white-space: normal !important; overflow-wrap: break-word;
  padding: 0.25em 0.4em !important; }
.jp-RenderedHTMLCommon tbody th { white-space: nowrap !important; }
.jp-RenderedHTMLCommon td.hx-wrap { overflow-wrap: anywhere; }
.jp-OutputArea-output pre, .jp-InputArea pre { white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }
.jp-OutputArea-output { overflow-x: visible; }
</style>
"""


def export_html(nb: Any, no_input: bool = False, title: str | None = None) -> str:
    """One self-contained HTML page: inline images, no widget state, no script at all, and a
    Content-Security-Policy (``CSP``) that would stop one.

    Why no script: a report is made from other people's runs and opened in a reviewer's browser;
    the static page needs none (no math, no widgets), so nbconvert's lab template is used without
    its require.js, MathJax, mermaid and widget loaders (``_TEMPLATE``), and the result is checked
    for any ``<script>`` and any network reference.
    """
    import copy

    import jinja2
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
    exporter = HTMLExporter(
        embed_images=True,
        exclude_input=no_input,
        exclude_input_prompt=no_input,
        exclude_output_prompt=no_input,
        extra_loaders=[jinja2.DictLoader({"hipexplore-report.html.j2": _TEMPLATE})],
        template_file="hipexplore-report.html.j2",
    )
    html, _ = exporter.from_notebook_node(nb, resources={"hipexplore_csp": CSP})
    html = html.replace("</head>", _NARROW_CSS + "</head>", 1)
    left = external_references(html)
    if left:
        raise ReportError(f"exported HTML still references the network: {left[:3]}")
    if _SCRIPT.search(html):
        raise ReportError(
            "exported HTML holds a <script> element; a report must hold none (a notebook output that is code?)"
        )
    if CSP not in html:
        raise ReportError(
            "exported HTML lost its Content-Security-Policy; is nbconvert's lab template 'index.html.j2' still there?"
        )
    return html


def is_report(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is a report hipexplore wrote (its generator tag, or
    the title every report had before the tag)."""
    return b'<meta name="generator" content="hipexplore report">' in head or b"<title>hipexplore " in head


def is_executed_notebook(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is a notebook (JSON with cells) that uses hipexplore."""
    return head.lstrip().startswith(b"{") and b'"cells"' in head and b"hipexplore" in head


def _check_writable(path: Path) -> None:
    """Create and remove a scratch file beside ``path``: the only sure test (``/proc`` is
    ``W_OK`` for root and still refuses new files)."""
    if path.is_dir():
        raise ConfigError(f"report output {str(path)!r} is a directory; expected an .html file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"report output {str(path)!r}: directory {str(parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".check", dir=parent)
    except OSError as exc:
        from ..files import why_no_new_file

        raise ConfigError(
            f"report output {str(path)!r}: cannot create a file in the folder {str(parent)!r} "
            f"({why_no_new_file(exc, parent)}); give --out a path in a folder you can write"
        ) from None
    os.close(fd)
    os.unlink(tmp)


#: what each report notebook is, for the line ``build_report`` prints before running it
_WHAT = {
    "dashboard": "the dashboard notebook (noise | compile time saved | cache hits)",
    "review": "the A/B review notebook (verdicts of a candidate against a baseline)",
}


def announcement(notebook: str, values: Mapping[str, Any], out: Path) -> str:
    """The progress line before a report runs: the notebook that will run (``report --run`` was
    announced as the dashboard while the review ran), where its data come from, where it writes."""
    what = _WHAT.get(notebook, f"notebook {notebook}")
    if notebook == "review":
        base, cand = values.get("baseline", "live"), values.get("candidate", "none")
        source = (
            f"two runs: {base} against {cand}"
            if cand not in (None, "", "none")
            else f"kernels {values.get('base_kernel')} and {values.get('new_kernel')} of "
            + ("a live interleaved sweep" if base == "live" else str(base))
        )
    else:
        data = values.get("data", "live")
        source = (
            f"device {values.get('device', 'auto')!r}; about 20 s on the host"
            if data == "live"
            else f"recorded data {data}"
        )
    return f"hipexplore report: running {what}: {source}; then writing {out}"


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
    notebook: str = "dashboard",
    progress: bool = False,
    force: bool = False,
) -> ReportResult:
    """Run the dashboard notebook (or ``notebook="review"``: the A/B review) and write ``out``
    (HTML). ``params`` is a mapping or a YAML/JSON file; ``command`` is recorded in the provenance
    table (defaults to this process's argv). An existing ``out`` or ``notebook_out`` that is not a
    report or notebook hipexplore wrote is refused before anything runs (``force``: replaced)."""
    values = dict(params) if isinstance(params, Mapping) else load_params(params)
    no_tuning_data(values)
    check_values(values)
    if timeout is not None and not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise ConfigError(f"timeout must be a positive number of seconds per cell, got {timeout!r}")
    if command is None:
        command = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    if not isinstance(command, str):
        command = shlex.join(str(c) for c in command)
    if notebook not in NOTEBOOKS:
        raise ConfigError(f"report notebook {notebook!r} is unknown; expected one of {sorted(NOTEBOOKS)}")
    from .params import check_report_params

    check_report_params(notebook, values)  # every name and value now, before papermill or a device starts
    known = notebook_parameters(notebook)
    if notebook == "dashboard" and values.get("tuning_data") == "none":
        raise ConfigError(
            "tuning_data: 'none' (no tuning data) is for the A/B review; the dashboard's compile-time and "
            "cache-hit panels need 'live' or a folder of recorded replay parquet files"
        )
    if "command" in known and "command" not in values:
        values["command"] = command
    out_path = Path(out)
    if out_path.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"report output must be an .html file; got {str(out_path)!r}")
    _check_writable(out_path)  # before the notebook runs, not after
    from ..files import check_replace

    check_replace(out_path, "report output", "a hipexplore report", is_report, force)
    if notebook_out:
        check_replace(notebook_out, "--notebook-out", "a notebook hipexplore executed", is_executed_notebook, force)
    if progress:
        print(announcement(notebook, values, out_path), file=sys.stderr)
    # the executed notebook: where asked, else a temporary file that is removed after a success
    # and kept (named in the error) after a failure
    scratch = None if notebook_out else Path(tempfile.mkdtemp(prefix="hipexplore-report-"))
    nb_path = Path(notebook_out) if notebook_out else scratch / NOTEBOOKS[notebook]
    # relative data paths in the parameters are taken from the caller's directory
    nb = execute_notebook(notebook, values, output=nb_path, cwd=Path.cwd(), timeout=timeout, progress=progress)
    html = export_html(
        nb,
        no_input=no_input,
        title="hipexplore review report" if notebook == "dashboard" else f"hipexplore {notebook} report",
    )
    write_file(out_path, html, what="report output")
    if scratch is not None:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return ReportResult(html=out_path, notebook=None if scratch is not None else nb_path, params=values)
