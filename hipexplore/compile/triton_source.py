"""Triton compile requests, built without importing Triton.

Why a module of its own, and why ``ast``: Triton is heavy to import (and its LLVM is process-global),
so the parent process never imports it — compiles run in worker processes. But the cache key must
be decided in the parent, and it must contain exactly what decides the output (issue 25, item 4:
a helper reached as ``import m as H; H.f()`` and ``PTXAS_OPTIONS`` were not keyed).

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

**Environment.** ``triton_environment()`` keys every variable the installed Triton reads
(``triton_env_names``: its ``knobs.py``, its ``getenv`` calls, ``GetEnv.h``) but the neutral ones,
by value, plus the contents of the files ``FILE_ENV`` variables name (ptxas, libdevice, ...);
``UNCACHEABLE_ENV`` (IR overrides) and a variable Triton reads that these tables do not know make
the request uncacheable.

Request layout (``compiler="triton"``): ``source`` = the generated kernel module, ``headers`` = the
generated modules it imports (``_hx<N>_<name>.py``), ``kernels`` = (name,), ``options`` =
``signature=a:*fp32,n:i32``, ``constexpr=NAME:VALUE`` (one each), ``env=NAME=VALUE`` (sorted), then
``NAME=VALUE`` Triton options (``num_warps=4``...), then ``uncacheable=WHY`` (one per reason).
``mode`` is ``binary`` (hsaco for gfx targets, cubin for sm targets) or ``asm`` (AMDGCN / PTX).
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import ConfigError
from .request import CompileRequest, Source
from .triton_args import NAME_RX, SCALAR_TYPES, check_target, parse_signature, parse_value, parse_assignments  # noqa: F401 - public here too
from .triton_env import FILE_ENV, UNCACHEABLE_ENV, triton_env_names, triton_environment  # noqa: F401 - public here too
from .triton_env import NEUTRAL_ENV, NON_CODEGEN_ENV, VALUE_ENV, knob_names, codegen_env  # noqa: F401 - public here too

# -- the kernel's sources, found the way Python and Triton resolve its names ---------------------
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
_COMPOUND = (
    (ast.If, ast.Try, ast.With, ast.For, ast.While)
    + ((ast.Match,) if hasattr(ast, "Match") else ())
    + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
)


@dataclass
class _Module:
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


def _load(path: Path, name: str = "") -> _Module:
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
        elif isinstance(node, _COMPOUND):  # names bound under if/try/with/for: the whole statement carries them
            for n in _bound_anywhere(node):
                bind(n, node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # `register(f)`, `f.x.update(...)`
            for root in _target_roots(node.value.func):
                if root in binds:
                    bind(root, node)
    order = {id(n): i for i, n in enumerate(tree.body)}
    return _Module(path, name or path.stem, tree, text.splitlines(keepends=True), binds, imports, stars, order)


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


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
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


def _segment(mod: _Module, node: ast.AST) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(mod.lines[start - 1 : node.end_lineno])


class _Uses(ast.NodeVisitor):
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


def _uses(node: ast.AST) -> _Uses:
    u = _Uses()
    u.visit(node)
    return u


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    site = {os.path.realpath(paths[k]) for k in ("purelib", "platlib")}
    return tuple(
        os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if os.path.realpath(paths[k]) not in site
    )


class _Found:
    """Where an imported module is: ``kind`` triton / stdlib / source (a Python file we carry) /
    opaque (found without Python source, or not found: its contents are not known)."""

    def __init__(self, kind: str, name: str, path: Path | None = None) -> None:
        self.kind, self.name, self.path = kind, name, path


def _module_file(base: Path, parts: list[str]) -> Path | None:
    cand = base.joinpath(*parts) if parts else base
    for p in (cand / "__init__.py", cand.with_suffix(".py")) if parts else (cand / "__init__.py",):
        if p.is_file():
            return p
    return None


def _find(dotted: str, level: int, importer: _Module, roots: tuple[Path, ...] = ()) -> _Found:
    """The module ``dotted`` (``level`` dots of relative import) as imported from ``importer``:
    relative to its package; else in ``roots`` (the kernel's folder: it is first on the path when
    the kernel's script runs) or beside the importer; else on ``sys.path`` (no import: a package's
    ``__init__`` is never executed to look)."""
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = importer.path.parent
        for _ in range(level - 1):
            base = base.parent
        found = _module_file(base, parts)
        return _Found("source", dotted, found) if found else _Found("opaque", "." * level + dotted)
    top = parts[0]
    if top == "triton":
        return _Found("triton", dotted)
    if top in sys.builtin_module_names:
        return _Found("stdlib", dotted)
    for folder in (*roots, importer.path.parent):
        beside = _module_file(folder, parts)
        if beside is not None:
            return _Found("source", dotted, beside)
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, sys.path)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return _Found("opaque", dotted)
    origin = spec.origin if spec.origin not in (None, "built-in", "frozen") else None
    if origin and os.path.realpath(origin).startswith(_stdlib_dirs()):
        return _Found("stdlib", dotted)
    locations = list(spec.submodule_search_locations or [])
    if len(parts) == 1:
        if origin and origin.endswith(".py"):
            return _Found("source", dotted, Path(origin))
        return _Found("opaque", dotted)
    for loc in locations:
        found = _module_file(Path(loc), parts[1:])
        if found is not None:
            return _Found("source", dotted, found)
    return _Found("opaque", dotted)


class _Collector:
    """The statements each module's needed names come from, the modules they import (each carried
    as a generated module of its own: names keep their own globals, as in Python), and why the
    result could change without its text changing (then it is not cached)."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.modules: dict[Path, _Module] = {}
        self.generated: dict[Path, str] = {}  # module file -> its generated module name (main: "")
        self.keep: dict[Path, set[int]] = {}  # module file -> ids of statements kept
        self.import_lines: dict[Path, list[str]] = {}
        self.seen: set[tuple[Path, str]] = set()
        self.whole: set[Path] = set()
        self.uncacheable: list[str] = []
        self.roots: tuple[Path, ...] = ()

    def module(self, path: Path, name: str = "", main: bool = False) -> _Module:
        path = path.resolve()
        if main:
            self.roots = (path.parent,)
        if path not in self.modules:
            self.modules[path] = _load(path, name)
            self.keep[path] = set()
            self.import_lines[path] = []
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            self.generated[path] = "" if main else f"_hx{len(self.generated)}_{re.sub(r'[^A-Za-z0-9_]', '_', stem)}"
        return self.modules[path]

    def _why(self, text: str) -> None:
        if text not in self.uncacheable:
            self.uncacheable.append(text)

    def _line(self, mod: _Module, text: str) -> None:
        lines = self.import_lines[mod.path]
        if text not in lines:
            lines.append(text)

    def need(self, mod: _Module, name: str) -> None:
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
                found = _find(star.module or "", star.level, mod, self.roots)
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

    def _keep(self, mod: _Module, node: ast.stmt) -> None:
        if id(node) in self.keep[mod.path]:
            return
        self.keep[mod.path].add(id(node))
        if isinstance(node, _COMPOUND):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    for a in sub.names:
                        found = _find(
                            a.name if isinstance(sub, ast.Import) else (sub.module or ""),
                            getattr(sub, "level", 0) or 0,
                            mod,
                            self.roots,
                        )
                        if found.kind not in ("triton", "stdlib") or found.name.split(".")[0] not in PURE_STDLIB | {
                            "triton"
                        }:
                            self._why(f"{mod.name} line {node.lineno} imports {found.name} inside a compound statement")
        uses = _uses(node)
        own = {getattr(node, "name", None)}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own |= _local_names(node)  # a parameter or local hides the global of that name (as for Triton)
        # what Python itself runs of the statement (a def: its decorators and defaults; a jit body
        # is Triton's, where a name like `input` is a parameter, not the builtin)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            run = _Uses()
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

    def _use(self, mod: _Module, name: str, bare: bool) -> None:
        self.need(mod, name)
        if bare:
            target = self._module_bound(mod, name)
            if target is not None and target.path not in self.whole:  # a module passed around whole
                self.whole.add(target.path)
                for n in list(target.binds) + list(target.imports):
                    self.need(target, n)

    def _attrs(self, mod: _Module, chain: tuple[str, ...]) -> None:
        target = self._module_bound(mod, chain[0])
        for attr in chain[1:]:
            if target is None:
                return
            self.need(target, attr)
            target = self._module_bound(target, attr)

    def _submodule(self, pkg: _Module, name: str) -> _Module | None:
        found = _module_file(pkg.path.parent, [name])
        return self.module(found, f"{pkg.name}.{name}") if found is not None else None

    def _module_bound(self, mod: _Module, name: str) -> _Module | None:
        """The carried module ``name`` stands for in ``mod`` (an import of a module, or a
        submodule of a package); None for anything else."""
        if name in mod.imports:
            stmt, alias = mod.imports[name]
            if isinstance(stmt, ast.Import):
                dotted = alias.name if alias.asname else alias.name.split(".")[0]
                found = _find(dotted, 0, mod, self.roots)
                return self.module(found.path, found.name) if found.kind == "source" else None
            found = _find(stmt.module or "", stmt.level or 0, mod, self.roots)
            if found.kind != "source":
                return None
            parent = self.module(found.path, found.name)
            if alias.name not in parent.binds and alias.name not in parent.imports and parent.is_package:
                return self._submodule(parent, alias.name)
            return self._module_bound(parent, alias.name) if alias.name in parent.imports else None
        if name not in mod.binds and mod.is_package:
            return self._submodule(mod, name)
        return None

    def _import(self, mod: _Module, name: str) -> None:
        stmt, alias = mod.imports[name]
        if isinstance(stmt, ast.Import):
            dotted = alias.name if alias.asname else alias.name.split(".")[0]
            found = _find(dotted, 0, mod, self.roots)
            if found.kind == "source":
                target = self.module(found.path, found.name)
                self._line(mod, f"from . import {self.generated[target.path]} as {name}\n")
                return
            self._line(mod, f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "") + "\n")
            self._opaque_or_impure(mod, found, name)
            return
        found = _find(stmt.module or "", stmt.level or 0, mod, self.roots)
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

    def _opaque_or_impure(self, mod: _Module, found: _Found, name: str) -> None:
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
            seg = _segment(mod, node)
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


def triton_request(
    path: str | os.PathLike,
    kernel: str,
    signature: str | Mapping[str, str],
    target: str,
    constexprs: Mapping[str, object] | list[str] | None = None,
    options: Mapping[str, object] | list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    label: str = "",
    mode: str = "binary",
) -> CompileRequest:
    """A ``CompileRequest`` for ``kernel`` in the file ``path`` (see the module doc for the layout)."""
    check_target(target)
    sig = parse_signature(signature)
    consts = parse_assignments(constexprs, "constexpr")
    opts = parse_assignments(options, "option")
    for name in ("signature", "constexpr", "env"):
        if name in opts:
            raise ConfigError(f"option {name!r} is reserved; pass it as its own argument")
    clash = sorted(set(sig) & set(consts))
    if clash:
        raise ConfigError(f"{', '.join(clash)} given both in the signature and as constexprs; give each once")
    for name in ("uncacheable",):
        if name in opts:
            raise ConfigError(f"option {name!r} is reserved (hipexplore sets it)")
    text, modules, why = kernel_sources(path, kernel)
    env, env_why = triton_environment(environ)
    encoded = [f"signature={','.join(f'{k}:{v}' for k, v in sig.items())}"]
    encoded += [f"constexpr={k}:{v!r}" for k, v in sorted(consts.items())]
    encoded += [f"env={k}={v}" for k, v in env.items()]
    encoded += [f"{k}={v!r}" for k, v in sorted(opts.items())]
    encoded += [f"uncacheable={w}" for w in (*why, *env_why)]  # TritonCompiler.implicit_inputs: never cached
    return CompileRequest(
        source=Source(f"{kernel}.py", text),
        compiler="triton",
        target=target,
        kernels=(kernel,),
        headers=modules,
        options=tuple(encoded),
        mode=mode,
        label=label or kernel,
    )


def decode_options(
    options: tuple[str, ...],
) -> tuple[dict[str, str], dict[str, object], dict[str, str], dict[str, object]]:
    """(signature, constexprs, env, triton options) from a request's encoded options."""
    import ast as _ast

    sig: dict[str, str] = {}
    consts: dict[str, object] = {}
    env: dict[str, str] = {}
    opts: dict[str, object] = {}
    for o in options:
        key, _, value = o.partition("=")
        if key == "signature":
            sig = parse_signature(value)
        elif key == "constexpr":
            name, _, lit = value.partition(":")
            consts[name] = _ast.literal_eval(lit)
        elif key == "env":
            name, _, v = value.partition("=")
            env[name] = v
        elif key == "uncacheable":
            continue
        elif NAME_RX.match(key) and value:
            try:
                opts[key] = _ast.literal_eval(value)
            except (ValueError, SyntaxError):
                opts[key] = value
        else:
            raise ConfigError(f"triton request option {o!r} is not NAME=VALUE")
    if not sig:
        raise ConfigError("triton request has no 'signature=' option; build it with triton_request()")
    return sig, consts, env, opts
