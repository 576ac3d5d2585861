"""What to say when a command needs a package that only an extra installs.

Why one module: ``pip install hipexplore`` brings the core (compile cache, host benchmarks); the
report and JupyterLab (``notebook``), the Redis tier (``remote``), Dask workers (``cluster``), the
GPU runtimes (``cuda``, ``hip``) and Triton (``triton``) come with extras. A missing one used to
surface as a raw ``ModuleNotFoundError`` traceback, or worse inside another message ("not valid
YAML: No module named 'yaml'"). Every place that imports an optional package goes through
``require`` / ``require_modules`` (or words its own refusal with ``message``), so the user reads one
line naming the extra and the command that installs it; the CLI prints it with exit status 2.

The lowest floor beside ``errors``: the standard library only, so any module may use it.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Iterable

from .errors import ConfigError, DeviceUnavailable, HipexploreError

#: The import names each extra of pyproject.toml provides (tests/test_extras.py checks the table
#: against the extras' distributions). ``hip``: hip-python 6.x-7.x is ``hip``, >= 10 ``rocm``.
EXTRAS: dict[str, tuple[str, ...]] = {
    "notebook": (
        "jupyterlab",
        "ipywidgets",
        "ipykernel",
        "matplotlib",
        "papermill",
        "nbconvert",
        "nbformat",
        "jupytext",
        "yaml",
    ),
    "remote": ("redis",),
    "cluster": ("dask", "distributed"),
    "triton": ("triton",),
    "cuda": ("cuda",),
    "hip": ("hip", "rocm"),
    "interop": ("pyperf",),
}


class MissingExtra(ConfigError):
    """A package that an extra installs is not importable; the message names the extra."""


def clone_root() -> Path | None:
    """The source tree this hipexplore runs from (a clone: ``pyproject.toml`` beside the package), or
    None for an installed wheel."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "hipexplore").is_dir() else None


def hint(extra: str) -> str:
    """The command that installs ``extra``: from PyPI, and where this runs from a clone, the form
    that installs the clone's own code (``pip install 'hipexplore[X]'`` there would fetch another
    copy, or nothing)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; expected one of {sorted(EXTRAS)}")
    root = clone_root()
    clone = f" (in the clone {root}: pip install -e '.[{extra}]')" if root is not None else ""
    return f"pip install 'hipexplore[{extra}]'{clone}"


def extra_of(module: str) -> str:
    """The extra that provides the top-level package of ``module`` (``yaml`` -> ``notebook``)."""
    top = module.split(".", 1)[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return extra
    raise ValueError(f"module {module!r} belongs to no extra; known: {sorted(m for ms in EXTRAS.values() for m in ms)}")


def message(what: str, extra: str, missing: Iterable[str] = (), detail: str = "") -> str:
    """``WHAT needs the 'EXTRA' extra (MISSING not installed; DETAIL): pip install 'hipexplore[EXTRA]'``:
    one line, whoever raises it."""
    names = ", ".join(missing)
    inner = "; ".join(p for p in (f"{names} not installed" if names else "", detail.strip()) if p)
    return f"{what} needs the '{extra}' extra{f' ({inner})' if inner else ''}: {hint(extra)}"


class DeviceExtraMissing(DeviceUnavailable):
    """A GPU device whose extra is not installed (``message``'s line, a ``DeviceUnavailable``). It keeps
    its parts so that ``also`` can say more inside the parentheses: the install command stays last."""

    def __init__(self, what: str, extra: str, detail: str = "") -> None:
        self.what, self.extra, self.detail = what, extra, detail
        super().__init__(message(what, extra, detail=detail))

    def also(self, more: str) -> "DeviceExtraMissing":
        """The same refusal with ``more`` after its detail (``devices here: ...``)."""
        return DeviceExtraMissing(self.what, self.extra, "; ".join(p for p in (self.detail, more) if p))


def missing_modules(modules: Iterable[str]) -> list[str]:
    """Those of ``modules`` that cannot be found, without importing them (a heavy import such as
    JupyterLab's or matplotlib's is not paid to learn that it is there)."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or sys.modules[name] = None
            found = False
        if not found:
            out.append(name)
    return out


def require_modules(
    modules: Iterable[str], what: str, extra: str | None = None, error: type[HipexploreError] = MissingExtra
) -> None:
    """Refuse, before any work starts, when one of ``modules`` is not installed."""
    modules = list(modules)
    gone = missing_modules(modules)
    if gone:
        raise error(message(what, extra or extra_of(gone[0]), gone))


def require(
    module: str, what: str, extra: str | None = None, error: type[HipexploreError] = MissingExtra
) -> ModuleType:
    """``import module``, or ``error`` naming the extra. A package that is there but fails to import
    (a dependency of its own missing, a broken install) is named with the import's own words."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = extra or extra_of(module)
        gone = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and gone and (module == gone or module.startswith(gone + ".")):
            raise error(message(what, extra, [module])) from None
        raise error(message(what, extra, detail=f"{module} failed to import: {type(exc).__name__}: {exc}")) from None
