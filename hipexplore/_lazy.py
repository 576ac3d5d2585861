"""Lazy package namespaces: a package's public name imports its module on first use.

Why: the CLI reaches one light module through its package (``bench.spec`` for the argparse
defaults, ``compile.request`` for the compiler names); a package ``__init__`` that imported every
public name eagerly would load pandas, numpy and the compiler libraries for ``hipexplore --help``.
Every name stays importable from its package (``from hipexplore.bench import sweep``), is listed in
``__all__`` and shows in ``dir()`` (tab completion), and is bound in the package once resolved.

One wrinkle the eager imports hid: a package may export a function under the name of one of its
own submodules (``hipexplore.bench.sweep`` is the ``sweep`` function, ``bench/sweep.py`` its
module). The import system binds a loaded submodule to that package attribute; ``lazy`` keeps the
exported object there instead, as the eager ``from .sweep import sweep`` did.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Callable, Mapping


class _LazyPackage(types.ModuleType):
    """A package whose exported names win over same-named submodules (see the module docstring)."""

    def __setattr__(self, name: str, value: Any) -> None:
        table = self.__dict__.get("_LAZY", {})
        if name in table and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return  # the name resolves from the table: the exported object, not the module
        super().__setattr__(name, value)


def lazy(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose lazy ``name -> module`` table is ``table``
    (a module relative to the package, ``".sweep"``, or absolute). Call it at the end of the
    package's ``__init__`` and assign both; the table must be the package's ``_LAZY``."""
    mod = sys.modules[package]
    if mod.__dict__.get("_LAZY") is not table:
        raise RuntimeError(f"{package}: lazy() needs the package's own _LAZY table")  # pragma: no cover - a wiring bug
    mod.__class__ = _LazyPackage

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name], package), name)
        mod.__dict__[name] = value  # once: later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted(set(mod.__dict__) | set(table))

    return __getattr__, __dir__
