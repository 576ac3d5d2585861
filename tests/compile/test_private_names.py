"""No module of hipexplore/compile/ takes another module's private names (issue 48, item 5).

Why: ``compile/disk.py`` and ``disk_maint.py`` once imported about 30 names with a leading
underscore from ``disk_files.py``, so nothing said which of that module's names others may rely
on, and a rename there broke its neighbours silently. A module's API is its public names; what
starts with an underscore is the module's own. Read from each file's syntax tree (nothing is
imported), so the check also holds for modules whose imports need optional packages.

Checked: ``from X import _name`` (any X, inside the package or not) and ``module._name`` on a
module imported by name (``settings._redis_url``). Not checked: a package-private module such as
``_common.py`` (the underscore on a *module* says "this package's own", and only compile/ uses it)
and ``self._attr`` (a class's own state, mixins included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import hipexplore.compile

COMPILE = Path(hipexplore.compile.__file__).resolve().parent


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(source: str) -> list[str]:
    """``line: what`` for every private name ``source`` takes from another module."""
    tree = ast.parse(source)
    found: list[str] = []
    modules: set[str] = set()  # names bound to imported modules (import x, import x as y, from . import m)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = "." * node.level + (node.module or "")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: from {origin} import {alias.name}")
                else:
                    modules.add(alias.asname or alias.name)  # may be a module: its private attributes count too
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_check_finds_each_form_it_names():
    """Each form the rule forbids is found, and what it allows is not (the check can fail)."""
    source = (
        "from .disk_files import _classify, lock_id\n"
        "from .. import settings\n"
        "import os\n"
        "from ._common import join_log\n"
        "class A:\n"
        "    def f(self):\n"
        "        return settings._redis_url(os._exit), self._lock, lock_id.__name__\n"
    )
    assert private_imports(source) == ["1: from .disk_files import _classify", "7: settings._redis_url", "7: os._exit"]


def test_no_module_in_compile_imports_a_private_name_from_another():
    modules = sorted(COMPILE.glob("*.py"))
    assert len(modules) > 20 and COMPILE / "disk_files.py" in modules
    problems = {p.name: found for p in modules if (found := private_imports(p.read_text(encoding="utf-8")))}
    assert problems == {}, (
        "private names taken across modules (make them public where they are defined, "
        f"or keep them in the module that uses them): {problems}"
    )
