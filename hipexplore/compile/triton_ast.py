"""One Python file as Triton's dependency finder reads it, and where its imports lead, with ``ast``
alone (nothing is imported: not Triton, not a module the kernel imports, not a package's ``__init__``).

Why a module of its own: ``triton_modules`` decides what a kernel reaches, and so what its cache key
holds, from these readings: the top-level statements that bind or change each name, in file order
(also under ``if``/``try``: the whole statement), the imports of any spelling (``import m as H``,
``from pkg import sub``, relative, ``*``), the names a statement reads (attribute chains such as
``H.sub.f`` included), a function's locals (which hide globals of their names), and where an import
resolves: Triton, the standard library, a Python file to carry, or *opaque* (no Python source here,
or not found: its contents cannot be in the key).
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

#: statements that may bind names in their bodies (``if``/``try``/``with``/loops/``match``): carried whole
COMPOUND = (
    (ast.If, ast.Try, ast.With, ast.For, ast.While)
    + ((ast.Match,) if hasattr(ast, "Match") else ())
    + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
)


@dataclass
class SourceFile:
    """One Python file read (``read_source_file``): what binds each of its top-level names."""

    path: Path
    name: str  # the dotted name it was imported as (for messages and the header)
    tree: ast.Module
    lines: list[str]
    binds: dict[str, list[ast.stmt]]  # name -> the top-level statements that bind or change it, in file order
    imports: dict[str, tuple[ast.stmt, ast.alias]]  # bound name -> the import binding it
    stars: list[ast.ImportFrom]  # ``from m import *``
    order: dict[int, int]  # id(statement) -> position in the file

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def read_source_file(path: Path, name: str = "") -> SourceFile:
    """``path`` parsed and indexed (``name``: the dotted name it was imported as). ConfigError when it
    cannot be read or does not parse."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read Triton source {str(path)!r}: {exc}") from exc
    except SyntaxError as exc:
        raise ConfigError(f"Triton source {str(path)!r} does not parse: line {exc.lineno}: {exc.msg}") from exc
    binds: dict[str, list[ast.stmt]] = {}
    imports: dict[str, tuple[ast.stmt, ast.alias]] = {}
    stars: list[ast.ImportFrom] = []

    def bind(n: str, node: ast.stmt) -> None:
        binds.setdefault(n, []).append(node)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for root in _target_roots(t):
                    bind(root, node)  # `X = ...` binds X; `f.attr = ...` / `X[0] += 1` change f / X
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports[(a.asname or a.name).split(".")[0] if not a.asname else a.asname] = (node, a)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "*":
                    stars.append(node)
                else:
                    imports[a.asname or a.name] = (node, a)
        elif isinstance(node, COMPOUND):  # names bound under if/try/with/for: the whole statement carries them
            for n in _bound_anywhere(node):
                bind(n, node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # `register(f)`, `f.x.update(...)`
            for root in _target_roots(node.value.func):
                if root in binds:
                    bind(root, node)
    order = {id(n): i for i, n in enumerate(tree.body)}
    return SourceFile(path, name or path.stem, tree, text.splitlines(keepends=True), binds, imports, stars, order)


def _target_roots(t: ast.AST) -> list[str]:
    """The names an assignment target binds or changes (tuple targets: each element's)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_roots(e)]
    if isinstance(t, ast.Starred):
        return _target_roots(t.value)
    if isinstance(t, (ast.Attribute, ast.Subscript)):
        return _target_roots(t.value)
    return []


def _bound_anywhere(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in n.names if a.name != "*")
    return out


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The function's parameters and the names it assigns (Python's locals), minus ``global`` ones."""
    a = fn.args
    names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(v for v in (a.vararg, a.kwarg) if v))}
    declared: set[str] = set()
    for stmt in fn.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
    return names - declared


def segment(mod: SourceFile, node: ast.AST) -> str:
    """The statement's text as written, decorators included (what a generated module carries)."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(mod.lines[start - 1 : node.end_lineno])


class Uses(ast.NodeVisitor):
    """The names a statement reads: plain names, and attribute chains on a name (``H.sub.f``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.chains: set[tuple[str, ...]] = set()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain: list[str] = []
        value: ast.AST = node
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name):
            self.chains.add((value.id, *reversed(chain)))
        else:
            self.visit(value)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.add(node.id)


def names_used(node: ast.AST) -> Uses:
    """What ``node`` reads (``Uses``)."""
    u = Uses()
    u.visit(node)
    return u


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    site = {os.path.realpath(paths[k]) for k in ("purelib", "platlib")}
    return tuple(
        os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if os.path.realpath(paths[k]) not in site
    )


class Found:
    """Where an imported module is: ``kind`` triton / stdlib / source (a Python file we carry) /
    opaque (found without Python source, or not found: its contents are not known)."""

    def __init__(self, kind: str, name: str, path: Path | None = None) -> None:
        self.kind, self.name, self.path = kind, name, path


def module_file(base: Path, parts: list[str]) -> Path | None:
    """The file of module ``parts`` under ``base`` (a package's ``__init__.py``, else ``.py``); None if neither."""
    cand = base.joinpath(*parts) if parts else base
    for p in (cand / "__init__.py", cand.with_suffix(".py")) if parts else (cand / "__init__.py",):
        if p.is_file():
            return p
    return None


def find_import(dotted: str, level: int, importer: SourceFile, roots: tuple[Path, ...] = ()) -> Found:
    """The module ``dotted`` (``level`` dots of relative import) as imported from ``importer``:
    relative to its package; else in ``roots`` (the kernel's folder: it is first on the path when
    the kernel's script runs) or beside the importer; else on ``sys.path`` (no import: a package's
    ``__init__`` is never executed to look)."""
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = importer.path.parent
        for _ in range(level - 1):
            base = base.parent
        found = module_file(base, parts)
        return Found("source", dotted, found) if found else Found("opaque", "." * level + dotted)
    top = parts[0]
    if top == "triton":
        return Found("triton", dotted)
    if top in sys.builtin_module_names:
        return Found("stdlib", dotted)
    for folder in (*roots, importer.path.parent):
        beside = module_file(folder, parts)
        if beside is not None:
            return Found("source", dotted, beside)
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, sys.path)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return Found("opaque", dotted)
    origin = spec.origin if spec.origin not in (None, "built-in", "frozen") else None
    if origin and os.path.realpath(origin).startswith(_stdlib_dirs()):
        return Found("stdlib", dotted)
    locations = list(spec.submodule_search_locations or [])
    if len(parts) == 1:
        if origin and origin.endswith(".py"):
            return Found("source", dotted, Path(origin))
        return Found("opaque", dotted)
    for loc in locations:
        found = module_file(Path(loc), parts[1:])
        if found is not None:
            return Found("source", dotted, found)
    return Found("opaque", dotted)
