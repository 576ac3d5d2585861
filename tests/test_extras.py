"""hipexplore/extras.py: the one way a missing extra is said. The real commands of an install
without extras are run in tests/e2e/test_install.py; here the table and the words."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from hipexplore import extras
from hipexplore.errors import CompilerUnavailable, ConfigError

ROOT = Path(__file__).resolve().parents[1]
#: what a hint adds when hipexplore runs from a clone (the tests run from this checkout)
CLONE = f" (in the clone {ROOT}: pip install -e '.[{{extra}}]')"


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_table_matches_pyprojects_extras():
    """Every extra of pyproject.toml that brings importable packages is in the table, and every
    module the table names is provided by a distribution of that extra (where installed here)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras.EXTRAS) <= set(declared)
    assert set(declared) - set(extras.EXTRAS) == {"dev", "docs"}  # tools, nothing hipexplore imports
    providers = importlib.metadata.packages_distributions()
    for extra, modules in extras.EXTRAS.items():
        wanted = {_dist_name(r) for r in declared[extra]}
        for module in modules:
            dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
            if dists:  # installed here: one of the extra's distributions provides it
                assert dists & wanted, (extra, module, dists, wanted)
    for module in ("jupyterlab", "papermill", "yaml", "redis", "distributed", "triton", "cuda"):
        assert module in providers, f"{module} is not installed here (setup.sh --dev installs every extra)"


def test_message_is_one_line_naming_the_extra_and_the_command():
    text = extras.message("hipexplore report", "notebook", ["papermill", "yaml"])
    assert text == (
        "hipexplore report needs the 'notebook' extra (papermill, yaml not installed): "
        f"pip install 'hipexplore[notebook]'{CLONE.format(extra='notebook')}"
    )
    assert "\n" not in extras.message("x", "cuda", detail="a\nb".replace("\n", " "))
    assert extras.message("hiprtc", "hip", detail="looked for hip.chiprtc").endswith(
        f"pip install 'hipexplore[hip]'{CLONE.format(extra='hip')}"
    )
    with pytest.raises(ValueError):
        extras.hint("gpu")


def test_require_refuses_a_missing_module_with_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # what Python does for a package that is not there
    with pytest.raises(extras.MissingExtra) as err:
        extras.require("yaml", "a YAML file")
    assert str(err.value) == (
        "a YAML file needs the 'notebook' extra (yaml not installed): pip install 'hipexplore[notebook]'"
        + CLONE.format(extra="notebook")
    )
    assert isinstance(err.value, ConfigError)  # the CLI's one line and exit status 2
    with pytest.raises(CompilerUnavailable, match=r"the Triton compiler needs the 'triton' extra"):
        extras.require("triton.nonexistent_module_here", "the Triton compiler", error=CompilerUnavailable)
    assert extras.require("json", "x", "notebook") is sys.modules["json"]


def test_require_modules_checks_without_importing(monkeypatch):
    monkeypatch.delitem(sys.modules, "papermill", raising=False)
    extras.require_modules(["papermill", "nbconvert"], "hipexplore report", "notebook")
    assert "papermill" not in sys.modules  # found, not imported
    with pytest.raises(
        extras.MissingExtra, match=r"\(hipexplore_nothing_such not installed\): pip install 'hipexplore\[cluster\]'"
    ):
        extras.require_modules(["dask", "hipexplore_nothing_such"], "a cluster run", "cluster")


def test_load_params_without_yaml_names_the_extra_not_a_yaml_error(tmp_path, monkeypatch):
    from hipexplore.report import load_params

    (tmp_path / "p.yaml").write_text("sizes: ['4KiB']\n")
    (tmp_path / "p.json").write_text('{"sizes": ["4KiB"]}\n')
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(extras.MissingExtra) as err:
        load_params(tmp_path / "p.yaml")
    assert "not valid YAML" not in str(err.value) and "pip install 'hipexplore[notebook]'" in str(err.value)
    assert load_params(tmp_path / "p.json") == {"sizes": ["4KiB"]}  # JSON needs nothing more


def test_the_hint_names_the_clone_form_in_a_clone_only(tmp_path):
    """In a clone, ``pip install 'hipexplore[notebook]'`` would fetch another copy (or nothing): the
    hint also says the command that installs this clone's code; an installed wheel has no clone."""
    assert extras.clone_root() == ROOT
    assert (
        extras.hint("notebook")
        == f"pip install 'hipexplore[notebook]' (in the clone {ROOT}: pip install -e '.[notebook]')"
    )
    import shutil
    import subprocess

    pkg = tmp_path / "site" / "hipexplore"
    pkg.mkdir(parents=True)
    for name in ("__init__.py", "extras.py", "errors.py", "_lazy.py"):
        shutil.copy(ROOT / "hipexplore" / name, pkg / name)
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from hipexplore import extras; print(extras.hint('notebook'))",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "pip install 'hipexplore[notebook]'", out.stderr
