"""What one value in a ``bench.wire`` frame may be, and the one error a reader raises.

Why apart from the frames: every part of a frame (a message's fields, a table's text columns, a
result's parts, a counting unit's entry) is read with the same few checks, and written with the
same cleaning, so that a value a writer sends is one a reader takes and nothing else is. A reader
takes text that is printable (no control character: no terminal escape or second line gets
through) and bounded, integers within their range (64-bit by default), numbers or ``null`` for
NaN (JSON has no NaN), booleans only as ``true``/``false`` (not 0 or 1), objects of exactly their
declared keys and lists of at most their bound. Each failure is one ``WireError`` line naming the
value (escaped, cut short) and what was expected.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..errors import BenchmarkError, ConfigError
from ..untrusted import check_name, escaped, shown

#: one text value (a warning, a metadata entry, an error message); a compiler log may be longer
MAX_TEXT = 1 << 16
MAX_LOG = 1 << 18
#: a name: a kernel's, a configuration's, a metadata key, a counter (a kernel may be named at length)
MAX_KEY = 4096
MAX_ITEMS = 4096


class WireError(BenchmarkError):
    """A frame that is not one ``bench.wire`` writes (the message says what was wrong, in one line)."""


# -- the writer's side ------------------------------------------------------------------------------
def clean(value: Any, limit: int = MAX_TEXT, lines: bool = False) -> str:
    """``value`` as text a reader takes: control characters escaped (newlines and tabs kept with
    ``lines``), cut to ``limit``. The writer's side of ``text_of``."""
    text = escaped(str(value), keep="\n\t" if lines else "")
    return text if len(text) <= limit else text[: limit - 48] + f"... ({len(text)} characters)"


def finite(v: Any) -> Any:
    """``v``, or None (JSON's null) for a float that is not finite: the writer's side of ``number_of``."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


# -- the reader's side ------------------------------------------------------------------------------
def text_of(value: Any, what: str, limit: int = MAX_TEXT, *, lines: bool = False, empty: bool = True) -> str:
    """``value`` if it is printable text of at most ``limit`` characters (newlines and tabs too
    with ``lines``); else one ``WireError`` line naming it."""
    probe = value.replace("\n", "").replace("\t", "") if lines and isinstance(value, str) else value
    try:
        check_name(probe, what, allow_empty=empty, limit=limit)
    except ConfigError as exc:
        raise WireError(str(exc)) from None
    return value


def int_of(value: Any, what: str, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> int:
    """``value`` if it is an integer (not a boolean) in [``lo``, ``hi``]."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise WireError(f"{what} must be an integer in [{lo}, {hi}]; got {shown(value)}")
    return value


def number_of(value: Any, what: str) -> float:
    """A JSON number, or null for NaN (JSON has no NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireError(f"{what} must be a number or null; got {shown(value)}")
    return float(value)


def bool_of(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{what} must be true or false; got {shown(value)}")
    return value


def object_of(value: Any, what: str, keys: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Any]:
    """``value`` if it is an object of exactly ``keys`` (and any of ``optional``)."""
    if not isinstance(value, dict):
        raise WireError(f"{what} must be an object; got {shown(value)}")
    missing = [k for k in keys if k not in value]
    extra = [k for k in value if k not in keys and k not in optional]
    if missing or extra:
        raise WireError(
            f"{what} has keys {shown(sorted(map(str, value)), 200)}; expected {list(keys)}"
            + (f" (optional {list(optional)})" if optional else "")
        )
    return value


def list_of(value: Any, what: str, limit: int = MAX_ITEMS) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise WireError(f"{what} must be a list of at most {limit} items; got {shown(value)}")
    return value


def strings_of(value: Any, what: str) -> dict[str, str]:
    """An object of at most ``MAX_ITEMS`` text entries (metadata), keys non-empty names."""
    if not isinstance(value, dict) or len(value) > MAX_ITEMS:
        raise WireError(f"{what} must be an object of at most {MAX_ITEMS} text entries; got {shown(value)}")
    return {text_of(k, f"{what} key", MAX_KEY, empty=False): text_of(v, f"{what} {shown(k)}") for k, v in value.items()}


__all__ = [
    "MAX_ITEMS",
    "MAX_KEY",
    "MAX_LOG",
    "MAX_TEXT",
    "WireError",
    "bool_of",
    "clean",
    "finite",
    "int_of",
    "list_of",
    "number_of",
    "object_of",
    "strings_of",
    "text_of",
]
