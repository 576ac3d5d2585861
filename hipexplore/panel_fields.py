"""The sweep panel's text fields read as the sweep's arguments, and the choices its dropdowns
offer: sizes (``"256KiB, 1 MiB"``), rotating counts (``"1, 2, 4, auto"``) and the resolution, each by
the library's own parser, so a field the panel accepts is one the sweep accepts.
"""

from __future__ import annotations

import re
from typing import Sequence

from .errors import ConfigError


def parse_size(text: str | int) -> int:
    """``"16MiB"``, ``"512k"``, ``"1 GiB"`` or a plain byte count -> bytes (the sweep's parser)."""
    from .bench.sweep import parse_size as parse_one

    return parse_one(text)


def parse_sizes(text: str | Sequence[str | int]) -> list[int]:
    """``"256KiB, 1 MiB"`` (comma-separated) or a list of sizes -> byte counts."""
    items = [t.strip() for t in re.split(r"[,;]", text) if t.strip()] if isinstance(text, str) else list(text)
    if not items:
        raise ConfigError("sizes is empty; give at least one size such as '1MiB'")
    return [parse_size(t) for t in items]


def parse_rotating(text: str | Sequence[int | str]) -> list[int | str]:
    """``"1, 2, 4, auto"`` -> ``[1, 2, 4, "auto"]`` (auto: derived from the cache and buffer size)."""
    from .bench.rotating import parse_rotating as parse_one

    items = [t for t in re.split(r"[,\s]+", text) if t] if isinstance(text, str) else list(text)
    if not items:
        raise ConfigError("rotating is empty; give counts such as '1, 2, 4, auto'")
    return [parse_one(t) for t in items]


def _device_choices() -> list[str]:
    from .devices import KINDS

    return list(KINDS)


def _kernel_choices() -> list[str]:
    try:
        from .kernels import names

        # the streaming kernels; flush-* and spin are the harness's own helpers
        return [n for n in names() if not n.startswith(("gemm", "flush-")) and n != "spin"] or ["triad"]
    except Exception:
        return ["triad"]


def _flush_choices() -> tuple[str, ...]:
    from .bench.flush import FLUSH_MODES

    return FLUSH_MODES


def _resolution(text: str) -> float:
    """The resolution field: ``1%`` or ``0.01`` (``SweepSpec``'s own check, one line naming the value)."""
    from .bench.spec_checks import check_resolution

    return check_resolution(text.strip())


__all__ = ["parse_rotating", "parse_size", "parse_sizes"]
