"""Text and JSON that come from files and variables, not from the person at the keyboard: parsed
with bounds, names kept printable, values shown escaped and cut short.

Why a leaf module (beside errors.py): run files (``bench.readback``), tuning lists
(``tuning.listfile``), the settings and the names of problems (``tuning.hxgen``,
``tuning.lists``) all read text someone else wrote. Python's own parser is not bounded: it
recurses once per nesting level (a line nested 100,000 deep ends in a RecursionError traceback),
refuses an integer of more than 4,300 digits with a ValueError that names
``sys.set_int_max_str_digits``, and reads ``NaN``/``Infinity``/``1e999`` as numbers. A name may
hold a newline (a second line in a one-line error), an ANSI escape (it rewrites the terminal it is
printed on), a NUL or a lone surrogate (it cannot be written back as UTF-8). Every check here is
one ``ConfigError`` line naming the value (escaped, cut short) and what was expected.

Bounds: JSON nested at most ``MAX_DEPTH`` levels, integers of at most ``MAX_INT_DIGITS`` digits
(every 64-bit integer fits), numbers finite; names at most ``MAX_NAME`` characters of printable
text. The depth is measured on the text before the parser runs, in time linear in its length.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import ConfigError

MAX_DEPTH = 32
MAX_INT_DIGITS = 19
MAX_NAME = 256
#: characters a name may not hold: C0/C1 controls (newline, NUL, ESC that starts ANSI sequences),
#: DEL, line/paragraph separators, bidirectional overrides and isolates (text that displays in
#: another order than it reads), the byte-order mark, lone surrogates
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_NAMED = {
    "\n": "a newline",
    "\r": "a carriage return",
    "\x00": "a NUL",
    "\t": "a tab",
    "\u2028": "a line separator",
    "\u2029": "a paragraph separator",
    "\ufeff": "a byte-order mark",
}
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.S)
_OPEN = b"[{"
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as a one-line message may print it: text escaped to ASCII (no newline, escape
    or surrogate reaches the terminal) and cut at ``limit`` characters, a container by its size,
    a huge integer by its number of digits."""
    if isinstance(value, str):
        if len(value) <= limit:
            return ascii(value)
        return f"{ascii(value[:limit])}... ({len(value)} characters)"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return (
            repr(value)
            if abs(value) < 10**24
            else f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        )
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"an object of {len(value)} key(s)"
    return f"a {type(value).__name__}"


def escaped(text: str, limit: int | None = None, keep: str = "") -> str:
    """``text`` with every character a name may not hold (``_UNPRINTABLE``: controls, escapes,
    line breaks, bidirectional overrides, lone surrogates) written as its Python escape (``\\x1b``,
    ``\\u202e``), except those in ``keep`` (say ``"\\n\\t"`` for a message of several lines); cut at
    ``limit`` characters. Why beside ``shown``: text another process wrote (a sweep worker's warning,
    its stderr) is shown as it reads, not quoted, yet nothing in it reaches the terminal as a command."""
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"... ({len(text) - limit} more characters)"

    def one(m: re.Match) -> str:
        ch = m.group()
        return ch if ch in keep else ascii(ch)[1:-1]

    return _UNPRINTABLE.sub(one, text)


def _describe(ch: str) -> str:
    if ch == "\x1b":
        return "an escape (U+001B; ANSI terminal sequences start with it)"
    if ch in _NAMED:
        return f"{_NAMED[ch]} (U+{ord(ch):04X})"
    if 0xD800 <= ord(ch) <= 0xDFFF:
        return f"a lone surrogate (U+{ord(ch):04X}, not a character: it cannot be written as UTF-8)"
    if 0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069:
        return f"a bidirectional control (U+{ord(ch):04X}: the text would display in another order than it reads)"
    return f"a control character (U+{ord(ch):04X})"


def check_name(value: Any, what: str, *, allow_empty: bool = False, limit: int = MAX_NAME) -> str:
    """``value`` if it is printable text of at most ``limit`` characters (module docstring); else
    one ConfigError line that starts with ``what`` and names the value and the character."""
    if not isinstance(value, str):
        raise ConfigError(f"{what} must be text; got {shown(value)}")
    if not value and not allow_empty:
        raise ConfigError(f"{what} is empty; expected a name")
    if len(value) > limit:
        raise ConfigError(f"{what} {shown(value)} is longer than {limit} characters")
    bad = _UNPRINTABLE.search(value)
    if bad:
        raise ConfigError(
            f"{what} {shown(value)} holds {_describe(bad.group())} at character {bad.start() + 1}; "
            f"expected printable text (no control characters, escapes, line breaks or lone surrogates)"
        )
    return value


def nesting_depth(text: str, stop_after: int = MAX_DEPTH) -> int:
    """How deep JSON ``text`` nests arrays and objects (strings skipped), counted up to one past
    ``stop_after``: linear in the text, no recursion, so it runs before the parser does."""
    brackets = _STRING.sub("", text).encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKET)
    if len(brackets) > 4096:  # many brackets: a running sum in NumPy, not a Python loop per bracket
        import numpy as np

        codes = np.frombuffer(brackets, dtype=np.uint8)
        return int(np.cumsum(np.where((codes == _OPEN[0]) | (codes == _OPEN[1]), 1, -1)).max())
    depth = deepest = 0
    for code in brackets:
        if code in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_after:
                    break
        else:
            depth -= 1
    return deepest


class _Unfit:
    """A number the bounded parser would not take: kept in place so the caller's message can name
    where in the document it stands."""

    def __init__(self, why: str) -> None:
        self.why = why


def _path_to(obj: Any, target: _Unfit) -> str:
    """Where ``target`` stands in ``obj`` (``'meta' -> 'a' -> [3]``), found without recursion."""
    stack: list[tuple[Any, str]] = [(obj, "")]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, dict):
            stack.extend((v, f"{path} -> {shown(k)}" if path else shown(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path} -> [{i}]" if path else f"[{i}]") for i, v in enumerate(node))
    return ""


def load_json(text: str, where: str, *, hint: str = "", max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)`` bounded (module docstring). Every failure is one ConfigError line that
    starts with ``where`` (the file, or the file and line); ``hint`` follows a syntax error."""
    tail = f"; {hint}" if hint else ""
    depth = nesting_depth(text, max_depth)
    if depth > max_depth:
        raise ConfigError(f"{where}: JSON nested more than {max_depth} levels deep; expected at most {max_depth}")
    unfit: list[_Unfit] = []

    def integer(s: str) -> Any:
        digits = len(s) - s.startswith("-")
        if digits > MAX_INT_DIGITS:
            unfit.append(
                _Unfit(
                    f"an integer of {digits} digits ({shown(s, 24)}); expected at most {MAX_INT_DIGITS} "
                    f"digits (a 64-bit integer)"
                )
            )
            return unfit[-1]
        return int(s)

    def number(s: str) -> Any:
        v = float(s)
        if not math.isfinite(v):
            unfit.append(_Unfit(f"{shown(s, 24)}, not a finite number; expected a finite number"))
            return unfit[-1]
        return v

    def constant(s: str) -> Any:
        unfit.append(_Unfit(f"{s}, not a JSON number; expected a finite number"))
        return unfit[-1]

    try:
        obj = json.loads(text, parse_int=integer, parse_float=number, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON ({exc.msg} at column {exc.colno}){tail}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # not expected after the checks above: still one line
        raise ConfigError(f"{where}: not readable JSON ({type(exc).__name__}){tail}") from None
    if unfit:
        path = _path_to(obj, unfit[0])
        raise ConfigError(f"{where}: {path + ': ' if path else ''}{unfit[0].why}")
    return obj


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NAME", "check_name", "escaped", "load_json", "nesting_depth", "shown"]
