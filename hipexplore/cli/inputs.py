"""Checks of command-line inputs that the library would otherwise meet too late or too crudely.

Why a module of its own: the library reads a kernel source or a params file where it needs it
(``kernels.catalog``, ``report``), and a file that is a directory, unreadable or not UTF-8 then
surfaced as a ``UnicodeDecodeError``/``IsADirectoryError`` traceback. The command line knows
which values are files and which are expressions, so it checks them first: every problem is one
``ConfigError`` line naming the flag and the value, before anything is compiled or written.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import ConfigError

#: what ``--source`` may end in (``kernels.catalog`` reads these as files: any other name would be
#: taken as source *text*)
SOURCE_SUFFIXES = (".cu", ".hip", ".cpp", ".c", ".cc", ".h", ".hpp", ".cuh")


def _shown(value: str) -> str:
    r = repr(value)
    return r if len(r) <= 120 else r[:100] + f"... ({len(value)} characters)"


def read_text_file(path: str, flag: str) -> str:
    """The UTF-8 text of the file ``path`` given to ``flag``; one line for every way it is not one."""
    if not path:
        raise ConfigError(f"{flag} is empty; expected a file name")
    p = Path(path)
    try:
        if not p.exists():
            raise ConfigError(f"{flag} {_shown(path)} does not exist")
        if p.is_dir():
            raise ConfigError(f"{flag} {_shown(path)} is a directory; expected a file")
        data = p.read_bytes()
    except ConfigError:
        raise
    except OSError as exc:
        raise ConfigError(f"{flag} {_shown(path)} cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{flag} {_shown(path)} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}, "
                          f"line {line}: {exc.reason}); save it as UTF-8") from None


def ascii_text(value: str | None, flag: str) -> None:
    """Expressions and argument specs are ASCII: a look-alike character (a full-width digit, an
    Arabic-Indic digit that ``int()`` would take as a number, a zero-width space) is named."""
    if value is None or value.isascii():
        return
    bad = next(ch for ch in value if not ch.isascii())
    raise ConfigError(f"{flag} {_shown(value)} holds the character {bad!r} (U+{ord(bad):04X}); write numbers, names "
                      f"and operators in ASCII")


def check_user_kernel(args: argparse.Namespace) -> None:
    """``hipexplore bench --source/--header/--args/--grid/...``: the files readable UTF-8 text of a
    known kind, the expressions ASCII, before the kernel is built."""
    for flag, value in (("--args", args.args), ("--grid", args.grid), ("--block", args.block),
                        ("--shared-bytes", args.shared_bytes), ("--bytes-per-launch", args.bytes_per_launch),
                        ("--entry", args.entry)):
        ascii_text(value if isinstance(value, str) else None, flag)
    if args.entry is not None and not args.entry.strip():
        raise ConfigError("--entry is empty; expected the kernel's function name (or leave --entry out: KERNEL is used)")
    if args.source is not None:
        if not str(args.source).endswith(SOURCE_SUFFIXES):
            raise ConfigError(f"--source {_shown(args.source)} is not a kernel source file name; expected one ending in "
                              f"{', '.join(SOURCE_SUFFIXES)} (.c is a host kernel)")
        read_text_file(args.source, "--source")
    for h in args.header or ():
        read_text_file(h, "--header")
    for d in args.include_dir or ():
        if not Path(d).is_dir():
            raise ConfigError(f"--include-dir {_shown(d)} is not a directory")
    if args.code_object is not None:
        p = Path(args.code_object)
        if not p.is_file():
            raise ConfigError(f"--code-object {_shown(args.code_object)} is not a file")
        if not os.access(p, os.R_OK):
            raise ConfigError(f"--code-object {_shown(args.code_object)} cannot be read (permission denied)")


def threshold(text: str) -> float:
    """argparse type of ``--threshold``: a fraction (``0.02``) or a percentage (``2%``), in (0, 1).
    Why both: the verdicts and their notes say thresholds as percentages (``±2%``), and ``2%``
    is what a reader of them types."""
    import math

    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02 or a percentage such as 2%, got {_shown(text)}") from None
    if not (math.isfinite(value) and 0 < value < 1):
        fix = (f"for {t}% give --threshold {t}% or {value / 100:g}" if not t.endswith("%") and 1 <= value < 100
               else "give e.g. --threshold 0.02 or --threshold 2%")
        raise argparse.ArgumentTypeError(f"threshold must be a fraction in (0, 1), got {_shown(text)}: {fix}")
    return value
