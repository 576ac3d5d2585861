"""How ``hipexplore bench`` reads its options' text: the argparse ``type=`` of each option, whose
error names what was expected (argparse alone would say "invalid value"), and how a default is shown
in the help.

Why a module of its own: ``cli/bench_options.py`` builds the parser from these for every
``bench --help``, and ``cli/bench_cmd.py`` and ``cli/bench_kernels.py`` split the same comma lists
when the command runs. Imports nothing heavy at the top: ``bench --help`` loads this module, and what
a value is checked against (``kernels.geometry``, ``bench.spec``) is imported when a value is read.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError

#: the most samples ``--iterations`` may ask for per configuration (each is a row in the samples file)
MAX_ITERATIONS = 1_000_000


#: the most untimed launches --chunk-lead / --chunk-trail may add to each chunk (the default chunk is 4)
MAX_UNTIMED = 1024


def csv_items(text: str) -> list[str]:
    """The parts of a comma separated option, stripped; empty parts are dropped."""
    return [p.strip() for p in text.split(",") if p.strip()]


def _over_maximum(text: str, maximum: int) -> argparse.ArgumentTypeError:
    """The error of a number over ``maximum``: a very long one is shortened (it is not echoed whole)."""
    return argparse.ArgumentTypeError(
        f"{text if len(text) <= 40 else text[:20] + f'... ({len(text)} digits)'} is more than the maximum, {maximum:,}"
    )


def floor_mode(text: str) -> bool | None:
    """argparse type of --floor: auto (on a GPU only), on, off."""
    got = {"auto": None, "on": True, "off": False}.get(text.strip().lower(), "bad")
    if got == "bad":
        raise argparse.ArgumentTypeError(f"expected auto, on or off, got {text!r}")
    return got  # type: ignore[return-value]


def lead_count(text: str) -> int | str:
    """argparse type of --chunk-lead: random, or an integer >= 0."""
    t = text.strip().lower()
    if t == "random":
        return t
    try:
        value = int(t)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected random or an integer >= 0, got {text!r}")
    if value > MAX_UNTIMED:  # each chunk would run that many untimed launches: a hang, not a measurement
        raise _over_maximum(text, MAX_UNTIMED)
    return value


def trail_count(text: str) -> int:
    """argparse type of --chunk-trail: an integer >= 0."""
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    if value > MAX_UNTIMED:
        raise _over_maximum(text, MAX_UNTIMED)
    return value


def positive_count(flag: str, maximum: int | None = None):
    """argparse type: a positive integer, at most ``maximum``; the error names the flag."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
        if maximum is not None and value > maximum:
            raise _over_maximum(text, maximum)
        return value

    return parse


def launch_dims(flag: str):
    """argparse type for --grid/--block: 1-3 comma separated parts; a part that is a plain number
    must be a positive integer (the error names the flag); expressions are checked by
    ``kernels.geometry`` when the kernel is built."""

    def parse(text: str) -> str:
        import re

        from ..kernels.geometry import split_top_level  # when a value is read, not when --help is built

        try:
            parts = split_top_level(text) or [text]
        except ConfigError as exc:  # an unbalanced bracket: argparse would only say "invalid value"
            raise argparse.ArgumentTypeError(str(exc)) from None
        for part in parts:
            if re.fullmatch(r"\s*[-+]?[0-9_.]+\s*", part):
                positive_count(flag)(part)
        return text

    return parse


def size_bytes(flag: str):
    """argparse type of a size option (--llc-bytes): 32MiB or 33554432, in bytes."""

    def parse(text: str) -> int:
        from ..bench.spec_checks import parse_size

        try:
            return parse_size(text)
        except ConfigError:
            raise argparse.ArgumentTypeError(
                f"expected a positive size such as 32MiB or 33554432, got {text!r}"
            ) from None

    return parse


def field_type(f: Any) -> Any:
    """The argparse type of a ``SweepSpec`` option, from its annotation (errors name the expected value)."""
    least, most, kind = f.metadata.get("least"), f.metadata.get("most"), str(f.type).replace(" ", "")
    if f.metadata.get("check") is not None:  # the field reads its own text
        check = f.metadata["check"]

        def parse(text: str) -> Any:
            try:
                return check(text)
            except ConfigError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        return parse
    if kind == "bool|None":
        return floor_mode
    if kind == "int|str":
        return lead_count
    if kind == "int":
        return trail_count if least == 0 else positive_count(f.name, most)
    if kind.startswith("float"):
        return float
    if kind == "tuple[str,...]":
        return csv_items
    if kind.startswith("tuple[tuple[str,float]"):
        return mode_factors
    raise TypeError(
        f"SweepSpec.{f.name}: no command-line form for a {f.type}"
    )  # pragma: no cover - a new kind of field


def mode_factors(text: str) -> dict[str, float]:
    """argparse type of MODE=X,...: flush modes and factors."""
    out: dict[str, float] = {}
    for part in csv_items(text):
        mode, _, value = part.partition("=")
        try:
            out[mode.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected MODE=FACTOR pairs such as l2-read=3,l2-write=1, got {text!r}"
            ) from None
    return out


def shown(value: Any) -> str:
    """A ``SweepSpec`` default as the help shows it: on/off, auto (None), a comma list (or none)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "auto"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "none"
    return str(value)
