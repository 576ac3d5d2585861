"""The lazy package namespaces (``hipexplore._lazy``): importing a package loads none of what its
names need; every public name still imports from where it always did; ``dir()`` shows them; and a
function exported under the name of its own submodule (``bench.sweep``, ``bench.run``) stays the
function, whichever is imported first."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("hipexplore", "hipexplore.bench", "hipexplore.compile", "hipexplore.devices", "hipexplore.kernels")


def _fresh(code: str) -> str:
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def test_importing_the_packages_loads_no_numpy_pandas_or_compiler():
    out = _fresh(
        f"import sys\nfor p in {PACKAGES!r}: __import__(p)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'pyarrow', 'triton', 'redis', 'dask')"
        " or m in ('hipexplore.bench.sweep', 'hipexplore.kernels.build', 'hipexplore.compile.cache', 'hipexplore.devices.base')))"
    )
    assert out.strip() == "[]", out


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_is_listed(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, (package, name)
        assert name in dir(mod), (package, name)
    namespace: dict = {}
    exec(f"from {package} import *", namespace)  # noqa: S102 - the star import a notebook does
    assert set(mod.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    import hipexplore.bench

    with pytest.raises(AttributeError, match=r"module 'hipexplore.bench' has no attribute 'sweeep'"):
        hipexplore.bench.sweeep  # noqa: B018


@pytest.mark.parametrize(
    "first",
    [
        "import hipexplore.bench.sweep, hipexplore.bench.run",
        "import hipexplore.bench",
        "from hipexplore.bench.sweep import sweep",
        "from hipexplore.bench import run",
    ],
)
def test_an_exported_function_wins_over_its_same_named_submodule(first):
    """The import system binds a loaded submodule to its package's attribute; the eager
    ``from .sweep import sweep`` used to rebind the function over it, the lazy table must too."""
    out = _fresh(
        f"{first}\nimport hipexplore, hipexplore.bench.sweep, hipexplore.bench.run\n"
        "from hipexplore.bench import run, sweep\n"
        "b = hipexplore.bench\n"
        "print(type(b.sweep).__name__, type(b.run).__name__, type(sweep).__name__, type(run).__name__,"
        " hipexplore.sweep is b.sweep, b.sweep.__module__, b.run.__module__)"
    )
    assert out.split() == [
        "function",
        "function",
        "function",
        "function",
        "True",
        "hipexplore.bench.sweep",
        "hipexplore.bench.run",
    ]


def test_a_replaced_name_stays_replaced(monkeypatch):
    """``monkeypatch.setattr(hipexplore.bench, "sweep", fake)`` (a test's or a notebook's) is kept."""
    import hipexplore.bench

    def fake():
        return None

    monkeypatch.setattr(hipexplore.bench, "sweep", fake)
    importlib.import_module("hipexplore.bench.sweep")
    assert hipexplore.bench.sweep is fake
