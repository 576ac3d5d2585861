"""Launch geometry as expressions: ``--grid 'cols/32,rows/32' --block 32,32 --shared-bytes 'block_x*4'``.

Why expressions: a 2-D transpose or a stencil swept over sizes needs a grid that follows the size
(and the kernel's own scalar arguments, such as ``rows`` and ``cols``); a row softmax needs dynamic
shared memory sized by its block. A fixed ``grid=`` cannot say that.

User text is never given to ``eval``: ``parse`` reads it with ``ast`` and accepts only numbers,
the names the caller allows, ``+ - * / // % **`` and a short list of functions (``FUNCTIONS``).
Anything else is a ``ConfigError`` naming the expression, what was wrong and what is allowed.

Names, in the order they become known for one configuration (``ExprGeometry``):
``n`` (elements per array) and ``compute_units``; the kernel's scalar arguments (each may use the
ones before it: ``rows:i32=isqrt(n), cols:i32=n//rows``); ``block_x, block_y, block_z`` (for the grid
and shared bytes); ``grid_x, grid_y, grid_z`` (for shared bytes). A fractional grid dimension or
shared-byte count rounds *up* (the usual ceil-division, so ``cols/32`` covers every column); a
block dimension must come out a whole number.
"""
from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError

#: the functions an expression may call
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt, "isqrt": lambda x: math.isqrt(int(x)),
    "log2": math.log2, "min": min, "max": max, "abs": abs, "round": round, "int": int,
    "cdiv": lambda a, b: -(-int(a) // int(b)),
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_MAX_POW = 64
_MAX_LEN = 500

BLOCK_NAMES = ("block_x", "block_y", "block_z")
GRID_NAMES = ("grid_x", "grid_y", "grid_z")


@dataclass(frozen=True)
class Expr:
    """One parsed expression: its text and the names it uses (checked against the allowed ones)."""

    text: str
    tree: ast.Expression
    names: frozenset[str]

    def __call__(self, env: Mapping[str, Any], *, what: str) -> int | float:
        try:
            return _eval(self.tree.body, env)
        except ZeroDivisionError:
            raise ConfigError(f"{what}: {self.text!r} divides by zero with {_show(env, self.names)}") from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise ConfigError(f"{what}: cannot evaluate {self.text!r} with {_show(env, self.names)}: {exc}") from None


def _show(env: Mapping[str, Any], names: frozenset[str]) -> str:
    return ", ".join(f"{k}={env[k]}" for k in sorted(names) if k in env) or "no names"


def parse(text: int | float | str, allowed: Sequence[str], *, what: str) -> Expr:
    """Parse ``text`` (a number or an arithmetic expression over ``allowed`` names); ``ConfigError`` if bad."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise ConfigError(f"{what}: expected a number or an expression in {', '.join(allowed)}; got {text!r}")
    src = str(text).strip()
    if not src or len(src) > _MAX_LEN:
        raise ConfigError(f"{what}: expected a number or an expression in {', '.join(allowed)}; got {text!r}")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"{what}: {src!r} is not an arithmetic expression ({exc.msg})") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                fn = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ConfigError(f"{what}: {src!r} is not an allowed arithmetic expression: it calls {fn!r}; allowed functions: {', '.join(sorted(FUNCTIONS))}")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ConfigError(f"{what}: {src!r} is not an allowed arithmetic expression: it holds {node.value!r}; only numbers are allowed")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Load, *_BINOPS, *_UNARY)):
            raise ConfigError(f"{what}: {src!r} is not an allowed arithmetic expression: it uses {type(node).__name__}; allowed: numbers, names, "
                              f"+ - * / // % **, and {', '.join(sorted(FUNCTIONS))}")
    unknown = sorted(names - set(allowed) - set(FUNCTIONS))
    if unknown:
        raise ConfigError(f"{what}: arithmetic expression {src!r} uses {', '.join(repr(u) for u in unknown)}, which is not one of "
                          f"{', '.join(allowed)}")
    return Expr(src, tree, frozenset(names - set(FUNCTIONS)))


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_POW or abs(left) > 2 ** 32):
            raise ValueError(f"power {left}**{right} is out of range")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args])  # type: ignore[union-attr]
    raise ValueError(f"unexpected {type(node).__name__}")  # pragma: no cover - parse() refused it


def evaluate(text: int | float | str, env: Mapping[str, Any], *, what: str) -> int | float:
    """Parse and evaluate once: a number, or an expression over the names in ``env``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    val = parse(text, tuple(env), what=what)(env, what=what)
    if isinstance(val, float) and val.is_integer() and "." not in str(text):
        val = int(val)
    return val


def _dims(spec: int | str | Sequence[int | str], what: str) -> tuple[int | str, ...]:
    if isinstance(spec, str):
        parts = split_top_level(spec)
    elif isinstance(spec, (int, float)) and not isinstance(spec, bool):
        parts = [spec]
    else:
        parts = list(spec)
    if not 1 <= len(parts) <= 3:
        raise ConfigError(f"{what} must be 1 to 3 comma separated numbers or expressions, got {spec!r}")
    return tuple(parts)


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside parentheses/brackets (``'max(n,1),4'`` -> ``['max(n,1)', '4']``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [p for p in out if p]


def _whole(val: int | float, expr: str, what: str, env: Mapping[str, Any], *, round_up: bool, least: int) -> int:
    if isinstance(val, float):
        if not math.isfinite(val):
            raise ConfigError(f"{what}: {expr!r} is {val} with {_show(env, frozenset(env))}")
        if not val.is_integer() and not round_up:
            raise ConfigError(f"{what}: {expr!r} is {val:g}, not a whole number")
        val = math.ceil(val)
    if int(val) < least:
        raise ConfigError(f"{what}: {expr!r} is {val}; expected at least {least}")
    return int(val)


class ExprGeometry:
    """Grid, block and dynamic shared bytes from expressions; picklable (it keeps only text).

    ``scalar_names`` are the kernel's scalar arguments, allowed in every expression. Every
    expression is parsed (and its names checked) when the geometry is built, so a bad one fails at
    once, not in the middle of a sweep.
    """

    def __init__(self, grid: int | str | Sequence[int | str], block: int | str | Sequence[int | str] = 256,
                 shared_bytes: int | str = 0, scalar_names: Sequence[str] = ()) -> None:
        self.grid_text = _dims(grid, "grid")
        self.block_text = _dims(block, "block")
        self.shared_text = shared_bytes
        self.scalar_names = tuple(scalar_names)
        base = ("n", "compute_units", *self.scalar_names)
        self._block = [parse(t, base, what=f"block[{i}]") for i, t in enumerate(self.block_text)]
        self._grid = [parse(t, (*base, *BLOCK_NAMES), what=f"grid[{i}]") for i, t in enumerate(self.grid_text)]
        self._shared = parse(shared_bytes, (*base, *BLOCK_NAMES, *GRID_NAMES), what="shared_bytes")

    def __getstate__(self) -> dict[str, Any]:
        return {"grid": self.grid_text, "block": self.block_text, "shared": self.shared_text, "scalars": self.scalar_names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["grid"], state["block"], state["shared"], state["scalars"])  # type: ignore[misc]

    def launch(self, n: int, device: Any, scalars: Mapping[str, Any] | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, shared_bytes) for ``n`` elements on ``device`` with these scalar values."""
        env: dict[str, Any] = {"n": n, "compute_units": max(1, int(getattr(device, "compute_units", 1) or 1))}
        env.update({k: v for k, v in (scalars or {}).items() if k in self.scalar_names})
        missing = [s for s in self.scalar_names if s not in env]
        if missing:
            raise ConfigError(f"launch geometry needs scalar argument(s) {missing}, which have no value")
        block = [_whole(e(env, what=f"block[{i}]"), e.text, f"block[{i}]", env, round_up=False, least=1)
                 for i, e in enumerate(self._block)]
        block += [1] * (3 - len(block))
        env.update(zip(BLOCK_NAMES, block))
        grid = [_whole(e(env, what=f"grid[{i}]"), e.text, f"grid[{i}]", env, round_up=True, least=1)
                for i, e in enumerate(self._grid)]
        grid += [1] * (3 - len(grid))
        env.update(zip(GRID_NAMES, grid))
        shared = _whole(self._shared(env, what="shared_bytes"), self._shared.text, "shared_bytes", env, round_up=True, least=0)
        return tuple(grid), tuple(block), shared  # type: ignore[return-value]

    def __call__(self, n: int, device: Any, scalars: Mapping[str, Any] | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        grid, block, _ = self.launch(n, device, scalars)
        return grid, block

    def __repr__(self) -> str:
        return (f"ExprGeometry(grid={','.join(map(str, self.grid_text))!r}, block={','.join(map(str, self.block_text))!r}, "
                f"shared_bytes={self.shared_text!r})")



def launch_of(geometry: Any, n: int, device: Any, scalars: Mapping[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, shared_bytes) of any geometry: an ``ExprGeometry`` sees the scalars, a plain
    ``geometry(n, device)`` function launches without dynamic shared memory."""
    if isinstance(geometry, ExprGeometry):
        return geometry.launch(n, device, scalars)
    grid, block = geometry(n, device)
    return grid, block, 0


__all__ = ["ExprGeometry", "FUNCTIONS", "evaluate", "launch_of", "parse", "split_top_level"]
