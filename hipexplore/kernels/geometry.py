"""Launch geometry as expressions: ``--grid 'cols/32,rows/32' --block 32,32 --shared-bytes 'block_x*4'``.

Why expressions: a 2-D transpose or a stencil swept over sizes needs a grid that follows the size
(and the kernel's own scalar arguments, such as ``rows`` and ``cols``); a row softmax needs dynamic
shared memory sized by its block. A fixed ``grid=`` cannot say that.

User text is never given to ``eval``: ``parse`` reads it with ``ast`` and accepts only numbers,
the names the caller allows, ``+ - * / // % **`` and a short list of functions (``FUNCTIONS``).
Anything else is a ``ConfigError`` naming the expression, what was wrong and what is allowed.

Every evaluation is cheap whatever the text: at most 500 ASCII characters nested at most 50 deep,
every value (constant, name, each intermediate result) a finite real number within ±2**256
(``MAX_BITS``), and the operations that grow faster than their operands (``**``, ``round`` with
``ndigits``) bounded from their operands *before* they run; complex results (``(-1)**0.5``) are
refused. So ``round(1, -99999999)``, ``9**9**9`` or a chain of products is a one-line
``ConfigError`` in microseconds, and no error message ever formats a 4,300-digit integer.
``cdiv(a, b)`` is the exact ceiling of a/b (ints and floats; ``cdiv(-7, 2)`` = -3).

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
import numbers
import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError

#: Every value an expression makes (a constant, a name's value, each operation's result) must be a
#: finite real number of magnitude at most 2**MAX_BITS. Why a bound on every step and not on the
#: result: Python's ints are unbounded, so ``round(1, -99999999)`` (10**99999999 inside ``round``),
#: ``9**9**9`` or a chain of multiplications costs minutes and gigabytes before any result could be
#: checked, and a 4,300-digit int cannot even be formatted into an error message. With operands
#: of at most 256 bits every operation below is a few machine words of work, and the operations that
#: can grow faster than their operands (``**``, ``round``) are bounded by their operands' size
#: *before* they run. 2**256 is far above any element count, byte count or launch dimension.
MAX_BITS = 256
_LIMIT = 2**MAX_BITS
_MAX_LEN = 500
#: the deepest nesting of operations and calls an expression may have (the evaluator recurses)
_MAX_DEPTH = 50
#: the largest ``|ndigits|`` of ``round(x, ndigits)`` (a 257-bit number has 78 digits)
_ROUND_DIGITS = 80


class _Bad(Exception):
    """A value or operation out of the allowed range; becomes a ConfigError naming the expression."""


def _num(v: Any) -> str:
    """A number as error text, safe for any value: a huge int is described, never converted to
    decimal (Python refuses to format ints of more than 4,300 digits, and it would take a while)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return repr(v) if isinstance(v, (complex, str)) and len(repr(v)) < 60 else type(v).__name__
    if isinstance(v, int) and v.bit_length() > 128:
        return f"{'-' if v < 0 else ''}(an integer of {v.bit_length()} bits)"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _real(v: Any, what: str = "the result") -> int | float:
    """``v`` if it is a finite int/float within ±2**MAX_BITS, else ``_Bad``."""
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, (int, float)) and isinstance(v, numbers.Real):  # numpy's int64, float32, ...
        v = int(v) if isinstance(v, numbers.Integral) else float(v)
    if isinstance(v, int):
        if v.bit_length() > MAX_BITS:
            raise _Bad(f"{what} {_num(v)} is out of range (at most 2**{MAX_BITS} in magnitude)")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _Bad(f"{what} is {v} (not a finite number)")
        if abs(v) > _LIMIT:
            raise _Bad(f"{what} {v:g} is out of range (at most 2**{MAX_BITS} in magnitude)")
        return v
    if isinstance(v, complex):
        raise _Bad(f"{what} is not a real number")
    raise _Bad(f"{what} is a {type(v).__name__}, not a number")


def _pow(a: int | float, b: int | float) -> int | float:
    """``a ** b`` with its cost bounded first: an int result may not exceed MAX_BITS (checked from
    the operands' bit lengths before multiplying), a float one goes through ``math.pow`` (no complex
    results: ``(-1)**0.5`` is refused)."""
    if isinstance(a, int) and isinstance(b, int) and b >= 0:
        if abs(a) <= 1:
            return a ** (b if b < 2 else 2 - b % 2)  # 0, 1 or -1 to any power: no need to multiply b times
        if (a.bit_length() - 1) * b >= MAX_BITS:
            raise _Bad(f"power {_num(a)}**{_num(b)} is out of range (at most 2**{MAX_BITS})")
        return a**b
    try:
        return math.pow(float(a), float(b))
    except ZeroDivisionError:
        raise
    except ValueError:
        if a == 0:
            raise ZeroDivisionError("0 to a negative power") from None
        raise _Bad(f"power {_num(a)}**{_num(b)} is not a real number") from None
    except OverflowError:
        raise _Bad(f"power {_num(a)}**{_num(b)} is out of range") from None


def _round(x: int | float, ndigits: Any = None) -> int | float:
    """``round`` whose ndigits is checked first: ``round(1, -99999999)`` would compute 10**99999999
    inside ``round`` (minutes, gigabytes); no value in range has more than 78 digits, so
    ``|ndigits| <= 80`` loses nothing."""
    if ndigits is None:
        return round(x)
    if isinstance(ndigits, float) and ndigits.is_integer():
        ndigits = int(ndigits)
    if not isinstance(ndigits, int):
        raise _Bad(f"round's ndigits must be a whole number, got {_num(ndigits)}")
    if abs(ndigits) > _ROUND_DIGITS:
        raise _Bad(f"round's ndigits {_num(ndigits)} is out of range (between -{_ROUND_DIGITS} and {_ROUND_DIGITS})")
    return round(x, ndigits)


def _cdiv(a: int | float, b: int | float) -> int:
    """Ceil-division, exact for ints and floats alike: the smallest integer >= a/b (``cdiv(7, 2)``
    = 4, ``cdiv(-7, 2)`` = -3, ``cdiv(6.5, 2)`` = 4); b = 0 divides by zero."""
    if b == 0:
        raise ZeroDivisionError("cdiv by zero")
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return -(-Fraction(a) // Fraction(b))


def _isqrt(x: int | float) -> int:
    if x < 0:
        raise _Bad(f"isqrt of the negative number {_num(x)}")
    return math.isqrt(int(x))


def _domain(fn: Callable[[float], float], name: str) -> Callable[[Any], float]:
    def call(x: Any) -> float:
        try:
            return fn(x)
        except ValueError:
            raise _Bad(f"{name}({_num(x)}) is not defined") from None

    return call


#: the functions an expression may call, with (fewest, most) arguments (None: any number)
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": _domain(math.sqrt, "sqrt"),
    "isqrt": _isqrt,
    "log2": _domain(math.log2, "log2"),
    "min": min,
    "max": max,
    "abs": abs,
    "round": _round,
    "int": int,
    "cdiv": _cdiv,
}
_ARITY: dict[str, tuple[int, int | None]] = {
    "ceil": (1, 1),
    "floor": (1, 1),
    "sqrt": (1, 1),
    "isqrt": (1, 1),
    "log2": (1, 1),
    "min": (2, None),
    "max": (2, None),
    "abs": (1, 1),
    "round": (1, 2),
    "int": (1, 1),
    "cdiv": (2, 2),
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}

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
            for k in self.names:
                if k in env:
                    _real(env[k], k)
            return _real(_eval(self.tree.body, env))
        except ZeroDivisionError:
            raise ConfigError(f"{what}: {self.text!r} divides by zero with {_show(env, self.names)}") from None
        except (_Bad, ValueError, TypeError, OverflowError, ArithmeticError, RecursionError, MemoryError) as exc:
            raise ConfigError(f"{what}: cannot evaluate {self.text!r} with {_show(env, self.names)}: {exc}") from None


def _show(env: Mapping[str, Any], names: frozenset[str]) -> str:
    return ", ".join(f"{k}={_num(env[k])}" for k in sorted(names) if k in env) or "no names"


def _text_of(text: Any) -> str:
    """``repr`` of a user's value for an error line, cut short (a 10 MB argument stays one short line)."""
    r = repr(text) if not isinstance(text, (int, float)) or isinstance(text, bool) else _num(text)
    return r if len(r) <= 120 else r[:100] + f"... ({len(r)} characters)"


def parse(text: int | float | str, allowed: Sequence[str], *, what: str) -> Expr:
    """Parse ``text`` (a number or an arithmetic expression over ``allowed`` names); ``ConfigError`` if bad."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise ConfigError(f"{what}: expected a number or an expression in {', '.join(allowed)}; got {_text_of(text)}")
    if not isinstance(text, str):
        try:
            _real(text, "the number")
        except _Bad as exc:
            raise ConfigError(f"{what}: {exc}") from None
    src = str(text).strip()
    if not src or len(src) > _MAX_LEN:
        raise ConfigError(
            f"{what}: expected a number or an expression in {', '.join(allowed)} of at most {_MAX_LEN} "
            f"characters; got {_text_of(text)}"
        )
    if not src.isascii():
        bad = next(ch for ch in src if not ch.isascii())
        raise ConfigError(
            f"{what}: {_text_of(src)} is not an arithmetic expression: it holds the character {bad!r} "
            f"(U+{ord(bad):04X}); write numbers and names in ASCII"
        )
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"{what}: {src!r} is not an arithmetic expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ConfigError(f"{what}: {src!r} is not an arithmetic expression (nested too deeply)") from None
    if _depth(tree.body) > _MAX_DEPTH:
        raise ConfigError(f"{what}: {src!r} nests operations more than {_MAX_DEPTH} deep")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                fn = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                if isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
                    raise ConfigError(
                        f"{what}: {src!r} is not an allowed arithmetic expression: {fn}() takes no keyword arguments"
                    )
                raise ConfigError(
                    f"{what}: {src!r} is not an allowed arithmetic expression: it calls {fn!r}; allowed functions: {', '.join(sorted(FUNCTIONS))}"
                )
            low, high = _ARITY[node.func.id]
            if any(isinstance(a, ast.Starred) for a in node.args) or not (
                low <= len(node.args) <= (high or len(node.args))
            ):
                takes = f"{low}" if low == high else f"{low} to {high}" if high else f"at least {low}"
                raise ConfigError(f"{what}: {src!r}: {node.func.id}() takes {takes} argument(s), got {len(node.args)}")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ConfigError(
                    f"{what}: {src!r} is not an allowed arithmetic expression: it holds {_text_of(node.value)}; only numbers are allowed"
                )
            try:
                _real(node.value, "the number")
            except _Bad as exc:
                raise ConfigError(f"{what}: {src!r}: {exc}") from None
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Load, *_BINOPS, *_UNARY)):
            raise ConfigError(
                f"{what}: {src!r} is not an allowed arithmetic expression: it uses {type(node).__name__}; allowed: numbers, names, "
                f"+ - * / // % **, and {', '.join(sorted(FUNCTIONS))}"
            )
    unknown = sorted(names - set(allowed) - set(FUNCTIONS))
    if unknown:
        raise ConfigError(
            f"{what}: arithmetic expression {src!r} uses {', '.join(repr(u) for u in unknown)}, which is not one of "
            f"{', '.join(allowed)}"
        )
    return Expr(src, tree, frozenset(names - set(FUNCTIONS)))


def _depth(node: ast.AST) -> int:
    """Nesting depth of an expression tree, without recursion (the tree may be deep)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        cur, d = stack.pop()
        deepest = max(deepest, d)
        if d > _MAX_DEPTH:
            break
        stack.extend(
            (child, d + 1)
            for child in ast.iter_child_nodes(cur)
            if not isinstance(child, (ast.Load, ast.operator, ast.unaryop))
        )
    return deepest


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """Every result passes ``_real`` before it is used by the next operation, so no operation ever
    sees an operand larger than 2**MAX_BITS (or a complex, infinite or NaN one)."""
    if isinstance(node, ast.Constant):
        return _real(node.value, "the number")
    if isinstance(node, ast.Name):
        return _real(env[node.id], node.id)
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        return _real(_BINOPS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        return _real(_UNARY[type(node.op)](_eval(node.operand, env)))
    if isinstance(node, ast.Call):
        return _real(FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args]), f"{node.func.id}()")  # type: ignore[union-attr]
    raise ValueError(f"unexpected {type(node).__name__}")  # pragma: no cover - parse() refused it


def evaluate(text: int | float | str, env: Mapping[str, Any], *, what: str) -> int | float:
    """Parse and evaluate once: a number, or an expression over the names in ``env``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            return _real(text, "the number")
        except _Bad as exc:
            raise ConfigError(f"{what}: {exc}") from None
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
    """Split on ``sep`` outside parentheses/brackets (``'max(n,1),4'`` -> ``['max(n,1)', '4']``).

    Brackets must balance: an unclosed ``[`` (``'out:a:f32[n'``) or a stray ``)`` is a
    ``ConfigError``, never a part that quietly runs to the end of the text."""
    out, stack, cur = [], [], []
    pairs = {")": "(", "]": "["}
    for pos, ch in enumerate(text):
        if ch in "([":
            stack.append((ch, pos))
        elif ch in ")]":
            if not stack or stack[-1][0] != pairs[ch]:
                raise ConfigError(
                    f"{_text_of(text)}: {ch!r} at character {pos + 1} closes nothing "
                    f"({'unbalanced brackets' if stack else 'no bracket is open there'})"
                )
            stack.pop()
        if ch == sep and not stack:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if stack:
        ch, pos = stack[-1]
        raise ConfigError(
            f"{_text_of(text)}: the {ch!r} at character {pos + 1} is never closed "
            f"(expected {')' if ch == '(' else ']'})"
        )
    out.append("".join(cur).strip())
    return [p for p in out if p]


#: the largest launch dimension (CUDA and HIP: grid x up to 2**31 - 1) and dynamic shared memory
#: per block any device accepts; a larger value is a mistake in the expression, said before launching
MAX_DIM = 2**31 - 1


def _whole(
    val: int | float, expr: str, what: str, env: Mapping[str, Any], *, round_up: bool, least: int, most: int = MAX_DIM
) -> int:
    if isinstance(val, float):
        if not math.isfinite(val):
            raise ConfigError(f"{what}: {expr!r} is {val} with {_show(env, frozenset(env))}")
        if not val.is_integer() and not round_up:
            raise ConfigError(f"{what}: {expr!r} is {val:g}, not a whole number")
        val = math.ceil(val)
    if int(val) < least:
        raise ConfigError(f"{what}: {expr!r} is {_num(val)}; expected at least {least}")
    if int(val) > most:
        raise ConfigError(f"{what}: {expr!r} is {_num(val)}; expected at most {most:,}")
    return int(val)


def compute_units_of(device: Any) -> int:
    """The compute units a launch scales with: the device's own count (a device that has none
    refuses: ``DeviceBase.compute_units``), or 1 for a geometry asked without a device (a size
    check, the docs). Never a guess: a GPU's count is its runtime's answer."""
    return 1 if device is None else max(1, int(device.compute_units))


class ExprGeometry:
    """Grid, block and dynamic shared bytes from expressions; picklable (it keeps only text).

    ``scalar_names`` are the kernel's scalar arguments, allowed in every expression. Every
    expression is parsed (and its names checked) when the geometry is built, so a bad one fails at
    once, not in the middle of a sweep.
    """

    def __init__(
        self,
        grid: int | str | Sequence[int | str],
        block: int | str | Sequence[int | str] = 256,
        shared_bytes: int | str = 0,
        scalar_names: Sequence[str] = (),
    ) -> None:
        self.grid_text = _dims(grid, "grid")
        self.block_text = _dims(block, "block")
        self.shared_text = shared_bytes
        self.scalar_names = tuple(scalar_names)
        base = ("n", "compute_units", *self.scalar_names)
        self._block = [parse(t, base, what=f"block[{i}]") for i, t in enumerate(self.block_text)]
        self._grid = [parse(t, (*base, *BLOCK_NAMES), what=f"grid[{i}]") for i, t in enumerate(self.grid_text)]
        self._shared = parse(shared_bytes, (*base, *BLOCK_NAMES, *GRID_NAMES), what="shared_bytes")

    def __getstate__(self) -> dict[str, Any]:
        return {
            "grid": self.grid_text,
            "block": self.block_text,
            "shared": self.shared_text,
            "scalars": self.scalar_names,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["grid"], state["block"], state["shared"], state["scalars"])  # type: ignore[misc]

    def launch(
        self, n: int, device: Any, scalars: Mapping[str, Any] | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, shared_bytes) for ``n`` elements on ``device`` with these scalar values."""
        env: dict[str, Any] = {"n": n, "compute_units": compute_units_of(device)}
        env.update({k: v for k, v in (scalars or {}).items() if k in self.scalar_names})
        missing = [s for s in self.scalar_names if s not in env]
        if missing:
            raise ConfigError(f"launch geometry needs scalar argument(s) {missing}, which have no value")
        block = [
            _whole(e(env, what=f"block[{i}]"), e.text, f"block[{i}]", env, round_up=False, least=1)
            for i, e in enumerate(self._block)
        ]
        block += [1] * (3 - len(block))
        env.update(zip(BLOCK_NAMES, block))
        grid = [
            _whole(e(env, what=f"grid[{i}]"), e.text, f"grid[{i}]", env, round_up=True, least=1)
            for i, e in enumerate(self._grid)
        ]
        grid += [1] * (3 - len(grid))
        env.update(zip(GRID_NAMES, grid))
        shared = _whole(
            self._shared(env, what="shared_bytes"), self._shared.text, "shared_bytes", env, round_up=True, least=0
        )
        return tuple(grid), tuple(block), shared  # type: ignore[return-value]

    def __call__(
        self, n: int, device: Any, scalars: Mapping[str, Any] | None = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        grid, block, _ = self.launch(n, device, scalars)
        return grid, block

    def __repr__(self) -> str:
        return (
            f"ExprGeometry(grid={','.join(map(str, self.grid_text))!r}, block={','.join(map(str, self.block_text))!r}, "
            f"shared_bytes={self.shared_text!r})"
        )


def launch_of(
    geometry: Any, n: int, device: Any, scalars: Mapping[str, Any]
) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, shared_bytes) of any geometry: an ``ExprGeometry`` sees the scalars, a plain
    ``geometry(n, device)`` function launches without dynamic shared memory."""
    if isinstance(geometry, ExprGeometry):
        return geometry.launch(n, device, scalars)
    grid, block = geometry(n, device)
    return grid, block, 0


__all__ = ["ExprGeometry", "FUNCTIONS", "evaluate", "launch_of", "parse", "split_top_level"]
