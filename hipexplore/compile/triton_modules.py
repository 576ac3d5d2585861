"""The generated modules of a Triton kernel: the kernel and everything it reaches, as texts that are
its compile request (issue 25, item 4: a helper reached as ``import m as H; H.f()`` was not keyed).

**Sources, found the way Python and Triton resolve the kernel's names.** ``kernel_sources()`` walks
the kernel's file with ``ast`` and follows every name the kernel (and, transitively, everything it
keeps) reads, as Triton's ``DependenciesFinder`` and code generator do: module-level functions,
classes and values (every statement that binds or changes the name, in file order, also under
``if``/``try``), imports of any spelling (``import m``, ``import m as H``, ``import pkg.sub``,
``from m import f as g``, ``from pkg import sub``, relative imports, re-exports, ``from m import *``)
and attribute chains on them (``H.f``, ``pkg.sub.f``); a parameter or local hides a global of its
name. Each module reached that is neither Triton nor the standard library (wherever it is: beside
the kernel, in a package, on ``sys.path``, in site-packages) becomes a generated module holding
only what is needed of it, with its own globals, and its imports are rewritten to the other
generated modules. Those texts *are* the request (``source`` and ``headers``) and the worker
compiles exactly them, so what is keyed is what is compiled; an edit to an unrelated function does
not change the key, an edit to anything the kernel reaches does.

What the texts cannot pin makes the request *uncacheable* (compiled every time, never stored; the
reasons are in the ``uncacheable=`` options and the key's ``implicit.error``): a value computed
with a module whose results depend on the machine, environment or time (``os``, ``time``,
``random``: anything outside ``PURE_STDLIB``), with ``open()`` and other impure builtins, with a
module that has no Python source here (an extension), or an import inside a compound statement.

The reading of each file (its bindings and imports, where an import leads) is ``triton_ast``'s;
what is kept of each module, and the texts generated from it, are decided here.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from ..errors import ConfigError
from .request import Source
from .triton_ast import (
    COMPOUND,
    Found,
    SourceFile,
    Uses,
    find_import,
    local_names,
    module_file,
    names_used,
    read_source_file,
    segment,
)

#: Standard-library modules whose values do not depend on the machine, the environment or time:
#: a module-level value computed with them is as keyed as its text. Any other standard module
#: (os, sys, time, random, pathlib, ...) read by a carried statement makes the request uncacheable.
PURE_STDLIB = frozenset(
    {
        "__future__",
        "abc",
        "builtins",
        "cmath",
        "collections",
        "copy",
        "dataclasses",
        "enum",
        "fractions",
        "functools",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "re",
        "string",
        "struct",
        "textwrap",
        "types",
        "typing",
        "typing_extensions",
        "warnings",
    }
)
#: Builtins whose result depends on more than their arguments' text.
IMPURE_BUILTINS = frozenset(
    {
        "open",
        "input",
        "eval",
        "exec",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "id",
        "hash",
        "breakpoint",
        "memoryview",
    }
)


class _Collector:
    """The statements each module's needed names come from, the modules they import (each carried
    as a generated module of its own: names keep their own globals, as in Python), and why the
    result could change without its text changing (then it is not cached)."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.modules: dict[Path, SourceFile] = {}
        self.generated: dict[Path, str] = {}  # module file -> its generated module name (main: "")
        self.keep: dict[Path, set[int]] = {}  # module file -> ids of statements kept
        self.import_lines: dict[Path, list[str]] = {}
        self.seen: set[tuple[Path, str]] = set()
        self.whole: set[Path] = set()
        self.uncacheable: list[str] = []
        self.roots: tuple[Path, ...] = ()

    def module(self, path: Path, name: str = "", main: bool = False) -> SourceFile:
        path = path.resolve()
        if main:
            self.roots = (path.parent,)
        if path not in self.modules:
            self.modules[path] = read_source_file(path, name)
            self.keep[path] = set()
            self.import_lines[path] = []
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            self.generated[path] = "" if main else f"_hx{len(self.generated)}_{re.sub(r'[^A-Za-z0-9_]', '_', stem)}"
        return self.modules[path]

    def _why(self, text: str) -> None:
        if text not in self.uncacheable:
            self.uncacheable.append(text)

    def _line(self, mod: SourceFile, text: str) -> None:
        lines = self.import_lines[mod.path]
        if text not in lines:
            lines.append(text)

    def need(self, mod: SourceFile, name: str) -> None:
        if (mod.path, name) in self.seen:
            return
        self.seen.add((mod.path, name))
        if name in mod.binds:
            for node in mod.binds[name]:
                self._keep(mod, node)
        elif name in mod.imports:
            self._import(mod, name)
        elif mod.is_package and self._submodule(mod, name) is not None:
            sub = self._submodule(mod, name)
            self._line(mod, f"from . import {self.generated[sub.path]} as {name}\n")
        else:
            for star in mod.stars:
                found = find_import(star.module or "", star.level, mod, self.roots)
                if found.kind in ("triton", "stdlib"):
                    self._line(mod, f"from {found.name} import *\n")
                    if found.kind == "stdlib" and found.name.split(".")[0] not in PURE_STDLIB:
                        self._why(f"{mod.name} star-imports {found.name}")
                elif found.kind == "source":
                    sub = self.module(found.path, found.name)
                    if name in sub.binds or name in sub.imports:
                        self._line(mod, f"from .{self.generated[sub.path]} import {name}\n")
                        self.need(sub, name)
                        return
                else:
                    self._why(f"{mod.name} star-imports {found.name}, whose contents are not known here")
            # otherwise a builtin or a local variable: nothing to carry

    def _keep(self, mod: SourceFile, node: ast.stmt) -> None:
        if id(node) in self.keep[mod.path]:
            return
        self.keep[mod.path].add(id(node))
        if isinstance(node, COMPOUND):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    for a in sub.names:
                        found = find_import(
                            a.name if isinstance(sub, ast.Import) else (sub.module or ""),
                            getattr(sub, "level", 0) or 0,
                            mod,
                            self.roots,
                        )
                        if found.kind not in ("triton", "stdlib") or found.name.split(".")[0] not in PURE_STDLIB | {
                            "triton"
                        }:
                            self._why(f"{mod.name} line {node.lineno} imports {found.name} inside a compound statement")
        uses = names_used(node)
        own = {getattr(node, "name", None)}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own |= local_names(node)  # a parameter or local hides the global of that name (as for Triton)
        # what Python itself runs of the statement (a def: its decorators and defaults; a jit body
        # is Triton's, where a name like `input` is a parameter, not the builtin)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            run = Uses()
            for part in [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
                run.visit(part)
        else:
            run = uses
        for n in sorted(run.names | {c[0] for c in run.chains}):
            if n in IMPURE_BUILTINS and n not in mod.binds and n not in mod.imports:
                self._why(f"{mod.name} line {node.lineno} calls {n}()")
        for n in sorted(uses.names):
            if n not in own:
                self._use(mod, n, bare=True)
        for chain in sorted(uses.chains):
            if chain[0] not in own:
                self._use(mod, chain[0], bare=False)
                self._attrs(mod, chain)

    def _use(self, mod: SourceFile, name: str, bare: bool) -> None:
        self.need(mod, name)
        if bare:
            target = self._module_bound(mod, name)
            if target is not None and target.path not in self.whole:  # a module passed around whole
                self.whole.add(target.path)
                for n in list(target.binds) + list(target.imports):
                    self.need(target, n)

    def _attrs(self, mod: SourceFile, chain: tuple[str, ...]) -> None:
        target = self._module_bound(mod, chain[0])
        for attr in chain[1:]:
            if target is None:
                return
            self.need(target, attr)
            target = self._module_bound(target, attr)

    def _submodule(self, pkg: SourceFile, name: str) -> SourceFile | None:
        found = module_file(pkg.path.parent, [name])
        return self.module(found, f"{pkg.name}.{name}") if found is not None else None

    def _module_bound(self, mod: SourceFile, name: str) -> SourceFile | None:
        """The carried module ``name`` stands for in ``mod`` (an import of a module, or a
        submodule of a package); None for anything else."""
        if name in mod.imports:
            stmt, alias = mod.imports[name]
            if isinstance(stmt, ast.Import):
                dotted = alias.name if alias.asname else alias.name.split(".")[0]
                found = find_import(dotted, 0, mod, self.roots)
                return self.module(found.path, found.name) if found.kind == "source" else None
            found = find_import(stmt.module or "", stmt.level or 0, mod, self.roots)
            if found.kind != "source":
                return None
            parent = self.module(found.path, found.name)
            if alias.name not in parent.binds and alias.name not in parent.imports and parent.is_package:
                return self._submodule(parent, alias.name)
            return self._module_bound(parent, alias.name) if alias.name in parent.imports else None
        if name not in mod.binds and mod.is_package:
            return self._submodule(mod, name)
        return None

    def _import(self, mod: SourceFile, name: str) -> None:
        stmt, alias = mod.imports[name]
        if isinstance(stmt, ast.Import):
            dotted = alias.name if alias.asname else alias.name.split(".")[0]
            found = find_import(dotted, 0, mod, self.roots)
            if found.kind == "source":
                target = self.module(found.path, found.name)
                self._line(mod, f"from . import {self.generated[target.path]} as {name}\n")
                return
            self._line(mod, f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "") + "\n")
            self._opaque_or_impure(mod, found, name)
            return
        found = find_import(stmt.module or "", stmt.level or 0, mod, self.roots)
        if found.kind == "source":
            parent = self.module(found.path, found.name)
            if (
                alias.name not in parent.binds
                and alias.name not in parent.imports
                and parent.is_package
                and self._submodule(parent, alias.name) is not None
            ):
                sub = self._submodule(parent, alias.name)
                self._line(mod, f"from . import {self.generated[sub.path]} as {name}\n")
                return
            self._line(
                mod,
                f"from .{self.generated[parent.path]} import {alias.name}"
                + (f" as {alias.asname}" if alias.asname else "")
                + "\n",
            )
            self.need(parent, alias.name)
            return
        if stmt.level:
            raise ConfigError(
                f"{mod.path}: relative import 'from {'.' * stmt.level}{stmt.module or ''} import "
                f"{alias.name}' does not resolve to a Python file"
            )
        self._line(
            mod, f"from {stmt.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "") + "\n"
        )
        self._opaque_or_impure(mod, found, name)

    def _opaque_or_impure(self, mod: SourceFile, found: Found, name: str) -> None:
        if found.kind == "opaque":
            self._why(
                f"{mod.name} uses {name} from {found.name}, a module without Python source here "
                f"(its contents are not in the key)"
            )
        elif found.kind == "stdlib" and found.name.split(".")[0] not in PURE_STDLIB:
            self._why(f"{mod.name} uses {name} from {found.name} (its values can change without the text changing)")

    def text(self, path: Path, header: str) -> str:
        mod = self.modules[path]
        kept = sorted((n for n in mod.tree.body if id(n) in self.keep[path]), key=lambda n: mod.order[id(n)])
        pieces: list[str] = []
        for node in kept:
            seg = segment(mod, node)
            if seg not in pieces:
                pieces.append(seg)
        future = "".join(
            f"from __future__ import {', '.join(a.name for a in n.names)}\n"
            for n in mod.tree.body
            if isinstance(n, ast.ImportFrom) and n.module == "__future__"
        )  # they change how it compiles
        return (
            header
            + future
            + "".join(self.import_lines[path])
            + "\n\n"
            + "\n\n".join(p.rstrip("\n") + "\n" for p in pieces)
        )


def kernel_sources(path: str | os.PathLike, kernel: str) -> tuple[str, tuple[Source, ...], tuple[str, ...]]:
    """The generated module for ``kernel`` in the Python file ``path``, the generated modules of
    the (non-Triton, non-standard) modules it reaches, and the reasons the result could change
    without these texts changing (empty when it cannot): see the module doc."""
    c = _Collector(kernel)
    mod = c.module(Path(path), main=True)
    nodes = mod.binds.get(kernel, [])
    node = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        found = sorted(n for n, ds in mod.binds.items() for d in ds if isinstance(d, ast.FunctionDef) and _is_jit(d))
        raise ConfigError(
            f"no function {kernel!r} in {str(path)!r}; @triton.jit functions there: {', '.join(found) or 'none'}"
        )
    if not _is_jit(node):
        raise ConfigError(f"{kernel!r} in {str(path)!r} is not decorated with @triton.jit")
    c.need(mod, kernel)
    main = c.text(
        mod.path, f'"""Kernel {kernel!r} and what it needs, extracted from {Path(path).name} by hipexplore."""\n'
    )
    headers = tuple(
        Source(
            f"{gen}.py",
            c.text(p, f'"""{c.modules[p].name} ({p.name}) as kernel {kernel!r} needs it, carried by hipexplore."""\n'),
        )
        for p, gen in c.generated.items()
        if gen
    )
    return main, headers, tuple(c.uncacheable)


def kernel_module(path: str | os.PathLike, kernel: str) -> str:
    """The generated module text for ``kernel`` in the Python file ``path`` (``kernel_sources``
    gives the modules it imports as well)."""
    return kernel_sources(path, kernel)[0]


def _is_jit(node: ast.AST) -> bool:
    for d in getattr(node, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("jit", "autotune", "heuristics"):
            return True
    return False
