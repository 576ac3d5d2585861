"""Triton compile requests, built without importing Triton.

Why a module of its own, and why ``ast``: Triton is heavy to import (and its LLVM is process-global),
so the parent process never imports it — compiles run in worker processes. But the cache key must
be decided in the parent, and it must contain exactly what decides the output: the kernel's source,
the sources of the ``@triton.jit`` functions it calls (transitively, also from local modules it
imports), the module-level values it reads, its signature, constexprs, options, target, and the
environment variables Triton's code generation reads. ``kernel_module()`` walks the kernel's file
with ``ast`` and writes a self-contained module holding only those pieces; that text *is* the
request's source, and the worker compiles exactly that text, so what is keyed is what is compiled
(an edit to an unrelated function in the same file does not change the key; an edit to a called
helper, in this file or a local module, does).

Request layout (``compiler="triton"``): ``source`` = the generated module, ``kernels`` = (name,),
``options`` = ``signature=a:*fp32,n:i32``, ``constexpr=NAME:VALUE`` (one each), ``env=NAME=VALUE``
(code-generating knobs set in the environment, sorted), then ``NAME=VALUE`` Triton options
(``num_warps=4``...). ``mode`` is ``binary`` (hsaco for gfx targets, cubin for sm targets) or
``asm`` (the AMDGCN / PTX listing).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import ConfigError
from .request import CompileRequest, Source

#: Triton environment variables that do NOT change generated code (paths of caches, printing,
#: profiling, runtime libraries). Every other TRITON_* / AMDGCN_* / MLIR_* / LLVM_* / NVPTX_* one
#: that is set enters the key: keying one too many costs a miss, one too few serves stale code.
NON_CODEGEN_ENV = frozenset({
    "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_CACHE_MANAGER", "TRITON_REMOTE_CACHE_BACKEND",
    "TRITON_REDIS_HOST", "TRITON_REDIS_PORT", "TRITON_REDIS_KEY_FORMAT", "TRITON_PRINT_AUTOTUNING",
    "TRITON_CACHE_AUTOTUNING", "TRITON_ALWAYS_COMPILE", "TRITON_KERNEL_DUMP", "TRITON_STORE_BINARY_ONLY",
    "TRITON_INTERPRET", "TRITON_ENABLE_NVTX", "TRITON_LIBCUDA_PATH", "TRITON_LIBHIP_PATH", "TRITON_PROTON_DISABLE",
    "TRITON_DUMP_PTXAS_LOG", "TRITON_HSA_RUNTIME_PATH", "TRITON_HSA_RUNTIME_LIBRARY", "TRITON_ENABLE_HW_TRACE",
    "TRITON_ROCPROFILER_SDK_INCLUDE_PATH", "TRITON_ROCPROFILER_SDK_LIB_PATH", "TRITON_ROCPROFILER_SDK_LIBRARY",
    "TRITON_ROCTRACER_LIB_PATH", "TRITON_ROCTRACER_LIBRARY", "TRITON_ROCTX_LIB_PATH", "TRITON_ROCTX_LIBRARY",
    "LLVM_SYMBOLIZER_PATH", "LLVM_DISABLE_SYMBOLIZATION", "LLVM_ENABLE_SYMBOLIZER_MARKUP",
})
_KNOB_RX = re.compile(r"^(TRITON|AMDGCN|MLIR|LLVM|NVPTX)_[A-Z0-9_]+$|^(DISABLE_LLVM_OPT|DISABLE_PTXAS_OPT|USE_IR_LOC)$")
_NAME_RX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: arg types Triton's signature accepts (pointers are ``*`` + a scalar type)
SCALAR_TYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e5", "fp8e4b8",
                "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
_TARGET_RX = re.compile(r"^(gfx[0-9a-f]{3,4}[a-z]?|sm_[0-9]{2,3}[af]?)$")


def codegen_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The code-generating Triton knobs set in ``environ`` (default: this process's)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if _KNOB_RX.match(k) and k not in NON_CODEGEN_ENV}


def check_target(target: str) -> str:
    if not isinstance(target, str) or not _TARGET_RX.match(target):
        raise ConfigError(f"triton target must look like 'gfx942', 'gfx950', 'gfx90a' or 'sm_90'; got {target!r}")
    return target


def parse_signature(text: str | Mapping[str, str]) -> dict[str, str]:
    """``'x_ptr:*fp32,n:i32'`` (or a mapping) -> {"x_ptr": "*fp32", "n": "i32"}, checked."""
    items = list(text.items()) if isinstance(text, Mapping) else [
        tuple(p.split(":", 1)) if ":" in p else (p, "") for p in str(text).split(",") if p.strip()]
    out: dict[str, str] = {}
    for name, ty in items:
        name, ty = name.strip(), ty.strip()
        if not _NAME_RX.match(name) or not (ty.lstrip("*") in SCALAR_TYPES):
            raise ConfigError(f"signature entry {name}:{ty!r} is not NAME:TYPE with TYPE one of {', '.join(SCALAR_TYPES)} "
                              f"or a pointer '*TYPE' (e.g. 'x_ptr:*fp32,n:i32')")
        out[name] = ty
    if not out:
        raise ConfigError(f"signature {text!r} is empty; expected e.g. 'x_ptr:*fp32,n:i32'")
    return out


def parse_value(text: str) -> int | float | bool | str:
    """A constexpr/option value from the command line: int, float, bool, else the string."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: Mapping[str, object] | list[str] | tuple[str, ...] | None, what: str) -> dict[str, object]:
    """``["BLOCK=256", ...]`` (or a mapping) -> {"BLOCK": 256}; a bad item names itself."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for item in items:
            if "=" not in str(item):
                raise ConfigError(f"{what} {item!r} is not NAME=VALUE (e.g. BLOCK=256)")
            k, v = str(item).split("=", 1)
            pairs.append((k.strip(), parse_value(v.strip())))
    for k, v in pairs:
        if not _NAME_RX.match(str(k)) or not isinstance(v, (int, float, bool, str)):
            raise ConfigError(f"{what} {k}={v!r}: expected an identifier and an int, float, bool or string value")
    return dict(pairs)


# ---------------------------------------------------------------------------------------------
@dataclass
class _Module:
    path: Path
    tree: ast.Module
    lines: list[str]
    defs: dict[str, ast.AST]  # module-level function/class defs and assignments by bound name
    imports: dict[str, ast.AST]  # bound name -> the import statement binding it


def _load(path: Path) -> _Module:
    try:
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read Triton source {str(path)!r}: {exc}") from exc
    except SyntaxError as exc:
        raise ConfigError(f"Triton source {str(path)!r} does not parse: line {exc.lineno}: {exc.msg}") from exc
    defs: dict[str, ast.AST] = {}
    imports: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defs[n.id] = node
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports[(a.asname or a.name).split(".")[0]] = node
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                imports[a.asname or a.name] = node
    return _Module(path, tree, text.splitlines(keepends=True), defs, imports)


def _segment(mod: _Module, node: ast.AST) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(mod.lines[start - 1:node.end_lineno])


def _names(node: ast.AST) -> list[str]:
    return sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)})


def _is_installed(origin: str) -> bool:
    """True for modules of the standard library or site-packages (their code is versioned elsewhere)."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    origin = os.path.realpath(origin)
    return any(origin.startswith(os.path.realpath(p) + os.sep) for p in paths)


def _local_module(stmt: ast.ImportFrom, mod: _Module) -> Path | None:
    """The file of ``from X import y`` when X is a local (not installed) Python file."""
    if stmt.level:
        base = mod.path.parent
        for _ in range(stmt.level - 1):
            base = base.parent
        cand = base.joinpath(*(stmt.module or "").split(".")) if stmt.module else base
        for p in (cand.with_suffix(".py"), cand / "__init__.py"):
            if p.is_file():
                return p
        return None
    if not stmt.module:
        return None
    cand = mod.path.parent.joinpath(*stmt.module.split(".")).with_suffix(".py")
    if cand.is_file():
        return cand
    try:
        spec = importlib.util.find_spec(stmt.module.split(".")[0]) and importlib.util.find_spec(stmt.module)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec else None
    if origin and origin.endswith(".py") and not _is_installed(origin):
        return Path(origin)
    return None


class _Collector:
    """Gathers the pieces a kernel needs, in dependency order, across local modules."""

    def __init__(self) -> None:
        self.imports: list[str] = []
        self.pieces: list[str] = []
        self.bound: dict[str, str] = {}  # name -> where it came from (clash detection)
        self.seen: set[tuple[str, str]] = set()
        self.modules: dict[Path, _Module] = {}

    def module(self, path: Path) -> _Module:
        path = path.resolve()
        if path not in self.modules:
            self.modules[path] = _load(path)
        return self.modules[path]

    def need(self, mod: _Module, name: str) -> None:
        if (str(mod.path), name) in self.seen:
            return
        self.seen.add((str(mod.path), name))
        if name in mod.defs:
            node = mod.defs[name]
            for dep in _names(node):
                if dep != name:
                    self.need(mod, dep)
            self._bind(name, f"{mod.path}:{node.lineno}")
            text = _segment(mod, node)
            if text not in self.pieces:
                self.pieces.append(text)
        elif name in mod.imports:
            stmt = mod.imports[name]
            local = _local_module(stmt, mod) if isinstance(stmt, ast.ImportFrom) else None
            if local is not None:
                sub = self.module(local)
                for a in stmt.names:
                    if (a.asname or a.name) == name:
                        if a.asname and a.asname != a.name:
                            raise ConfigError(f"{mod.path}: 'from {stmt.module} import {a.name} as {a.asname}': a renamed "
                                              f"local Triton helper is not supported; import it under its own name")
                        self.need(sub, a.name)
                return
            text = _import_text(stmt, name)
            self._bind(name, text)
            if text not in self.imports:
                self.imports.append(text)
        # otherwise a builtin or a local variable: nothing to carry

    def _bind(self, name: str, where: str) -> None:
        if self.bound.setdefault(name, where) != where and not where.startswith(("import", "from")):
            raise ConfigError(f"the name {name!r} is defined twice among the kernel's dependencies "
                              f"({self.bound[name]} and {where}); rename one")


def _import_text(stmt: ast.AST, name: str) -> str:
    if isinstance(stmt, ast.Import):
        alias = next(a for a in stmt.names if (a.asname or a.name).split(".")[0] == name)
        return f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "") + "\n"
    assert isinstance(stmt, ast.ImportFrom)
    alias = next(a for a in stmt.names if (a.asname or a.name) == name)
    if stmt.level:
        raise ConfigError(f"relative import 'from {'.' * stmt.level}{stmt.module or ''} import {alias.name}' does not "
                          f"resolve to a local file next to the kernel")
    return f"from {stmt.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "") + "\n"


def kernel_module(path: str | os.PathLike, kernel: str) -> str:
    """The self-contained module text for ``kernel`` in the Python file ``path`` (see module doc)."""
    c = _Collector()
    mod = c.module(Path(path))
    node = mod.defs.get(kernel)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found = sorted(n for n, d in mod.defs.items() if isinstance(d, ast.FunctionDef) and _is_jit(d))
        raise ConfigError(f"no function {kernel!r} in {str(path)!r}; @triton.jit functions there: "
                          f"{', '.join(found) or 'none'}")
    if not _is_jit(node):
        raise ConfigError(f"{kernel!r} in {str(path)!r} is not decorated with @triton.jit")
    c.need(mod, kernel)
    header = f'"""Kernel {kernel!r} and what it needs, extracted from {Path(path).name} by hipexplore."""\n'
    return header + "".join(c.imports) + "\n\n" + "\n\n".join(p.rstrip("\n") + "\n" for p in c.pieces)


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
    text = kernel_module(path, kernel)
    encoded = [f"signature={','.join(f'{k}:{v}' for k, v in sig.items())}"]
    encoded += [f"constexpr={k}:{v!r}" for k, v in sorted(consts.items())]
    encoded += [f"env={k}={v}" for k, v in codegen_env(environ).items()]
    encoded += [f"{k}={v!r}" for k, v in sorted(opts.items())]
    return CompileRequest(source=Source(f"{kernel}.py", text), compiler="triton", target=target, kernels=(kernel,),
                          options=tuple(encoded), mode=mode, label=label or kernel)


def decode_options(options: tuple[str, ...]) -> tuple[dict[str, str], dict[str, object], dict[str, str], dict[str, object]]:
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
        elif _NAME_RX.match(key) and value:
            try:
                opts[key] = _ast.literal_eval(value)
            except (ValueError, SyntaxError):
                opts[key] = value
        else:
            raise ConfigError(f"triton request option {o!r} is not NAME=VALUE")
    if not sig:
        raise ConfigError("triton request has no 'signature=' option; build it with triton_request()")
    return sig, consts, env, opts
