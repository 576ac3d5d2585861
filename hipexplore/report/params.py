"""The report notebooks' parameters, checked before a notebook starts.

Why here and not in the notebook: a value the notebook refuses (``flush: [none, l2-raed]``,
``device: bogus``) used to surface as ``notebook dashboard.ipynb failed in cell 3: ConfigError: ...``
10 s (45 s on a loaded host) after papermill had started a kernel, and a misspelt *name* was refused
by papermill's own check, also after the notebook was made, without a hint. Here the names a
notebook declares are read from its ``parameters`` cell as text (``ast``: no papermill, no
jupytext, no kernel), a misspelt one gets a "did you mean", and every value is checked with the
functions the notebook's own calls use (``parse_device``, ``parse_size``, ``parse_rotating``,
``flush_mode``, ``check_counters``, ``select_problems``, ``check_threshold``): one line naming the
parameter, the value and what is allowed, before any device, compiler or notebook starts. Values
are checked also where they would go unused (recorded data): a typo must not pass silently.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import ConfigError
from ..untrusted import shown
from .workspace import NOTEBOOKS, source_path

_CELL = re.compile(r"^# %%.*\btags\s*=\s*\[[^\]]*['\"]parameters['\"]", re.M)


def declared(notebook: str) -> dict[str, Any]:
    """The names the ``parameters`` cell of shipped notebook ``notebook`` assigns, with their
    defaults (a literal's value; None for an expression)."""
    path = source_path(notebook)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        m = _CELL.search(text)
        if not m:
            raise ConfigError(f"notebook {path.name} has no cell tagged 'parameters'")
        body = text[m.end() :].split("\n", 1)[-1]
        cell = re.split(r"^# %%", body, maxsplit=1, flags=re.M)[0]
    else:
        cells = [c for c in json.loads(text).get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
        if not cells:
            raise ConfigError(f"notebook {path.name} has no cell tagged 'parameters'")
        src = cells[0].get("source", "")
        cell = "".join(src) if isinstance(src, list) else str(src)
    out: dict[str, Any] = {}
    for node in ast.parse(cell).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = None
    return out


def did_you_mean(name: str, known: list[str] | set[str]) -> str:
    """`` (did you mean 'flush'?)`` for the closest of ``known``, or ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_names(notebook: str, params: Mapping[str, Any], known: Mapping[str, Any] | None = None) -> None:
    """Refuse a name the notebook does not declare (papermill would add it unused), with the closest one."""
    known = declared(notebook) if known is None else known
    unknown = [n for n in params if n not in known]
    if unknown:
        first = unknown[0]
        more = f" (and {', '.join(repr(u) for u in unknown[1:])})" if len(unknown) > 1 else ""
        raise ConfigError(
            f"unknown parameter {shown(first, 60)}{did_you_mean(first, set(known))}{more} for notebook "
            f"{NOTEBOOKS[notebook]}; its parameters are {', '.join(sorted(known))}"
        )


def _listed(value: Any) -> list[Any]:
    return (
        [value]
        if isinstance(value, (str, int, float))
        else list(value)
        if isinstance(value, (list, tuple))
        else [value]
    )


def _each(check: Callable[[Any], Any]) -> Callable[[Any], None]:
    def run(value: Any) -> None:
        for v in _listed(value):
            check(v)

    return run


def _device(value: Any) -> None:
    from ..devices import parse_device

    if not isinstance(value, str):
        raise ConfigError(f"{value!r} is not a device name; expected auto, host, cuda or hip (optionally ':INDEX')")
    parse_device(value)


def _kernel(value: Any) -> None:
    from ..kernels import catalog

    for name in _listed(value):
        catalog.get(str(name))


def _size(value: Any) -> None:
    from ..bench.spec_checks import parse_size

    if isinstance(value, float):  # parse_size takes text or integers: a YAML 1.5 would pass as '1.5' bytes
        raise ConfigError(f"size {value!r} is not a whole number of bytes; write it as text such as '64KiB'")
    parse_size(value)


def _rotating(value: Any) -> None:
    from ..bench.rotating import parse_rotating

    parse_rotating(value)


def _flush(value: Any) -> None:
    from ..bench.flush import flush_mode

    flush_mode(str(value))


def _counters(value: Any) -> None:
    from ..bench.spec_checks import check_counters

    check_counters(value)


def _compiler(value: Any) -> None:
    from ..compile.request import COMPILERS

    if value != "auto" and value not in COMPILERS:
        raise ConfigError(f"compiler {value!r} is unknown; expected auto or one of {', '.join(COMPILERS)}")


def _problems(value: Any) -> None:
    from ..tuning.lists import select_problems

    if value is not None:
        select_problems(str(value))


def _cache(value: Any) -> None:
    if value not in ("memory", "disk"):
        raise ConfigError(f"cache {value!r} is unknown; expected 'memory' or 'disk'")


def _folder_or(word: str) -> Callable[[Any], None]:
    """``word`` ('live', 'none') or a file or folder that exists (recorded data)."""

    def check(value: Any) -> None:
        if value in ("live", "none", word):
            return
        if not isinstance(value, str) or not Path(value).expanduser().exists():
            raise ConfigError(
                f"{shown(str(value), 120)} does not exist; expected {word!r} or a recorded file or folder"
            )

    return check


def _threshold(value: Any) -> None:
    from ..verdict_rule import check_threshold

    check_threshold(value)


def _flag(value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{value!r} is not true or false")


def _text(value: Any) -> None:
    if not isinstance(value, str):
        raise ConfigError(f"{value!r} is not text")


#: how each parameter of the shipped notebooks is checked (the names both notebooks use mean the same)
CHECKS: dict[str, Callable[[Any], None]] = {
    "device": _device,
    "kernel": _kernel,
    "base_kernel": _text,
    "new_kernel": _text,
    "sizes": _each(_size),
    "rotating": _each(_rotating),
    "flush": _each(_flush),
    "counters": _counters,
    "compiler": _compiler,
    "target": _text,
    "problems": _problems,
    "cache": _cache,
    "data": _folder_or("live"),
    "tuning_data": _folder_or("live"),
    "baseline": _folder_or("live"),
    "candidate": _folder_or("none"),
    "threshold": _threshold,
    "allow_other_device": _flag,
    "command": _text,
}


def check_report_params(notebook: str, params: Mapping[str, Any]) -> None:
    """Every name and value of ``params`` for shipped notebook ``notebook`` (module docstring); a
    ``ConfigError`` line naming the parameter otherwise. Counts (iterations, jobs, candidates) are
    ``notebooks.check_values``'."""
    known = declared(notebook)
    check_names(notebook, params, known)
    for name, value in params.items():
        check = CHECKS.get(name)
        if check is None:
            continue
        try:
            check(value)
        except ConfigError as exc:
            raise ConfigError(f"parameter {name}: {exc}") from None
    live = params.get("baseline", known.get("baseline")) == "live"
    if notebook == "review" and live:  # a live A/B sweeps these two kernels of the catalog
        for name in ("base_kernel", "new_kernel"):
            try:
                _kernel(params.get(name, known.get(name)))
            except ConfigError as exc:
                raise ConfigError(f"parameter {name}: {exc}") from None


__all__ = ["CHECKS", "check_names", "check_report_params", "declared", "did_you_mean"]
