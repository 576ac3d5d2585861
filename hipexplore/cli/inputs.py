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
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{flag} {_shown(path)} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}, "
            f"line {line}: {exc.reason}); save it as UTF-8"
        ) from None


def ascii_text(value: str | None, flag: str) -> None:
    """Expressions and argument specs are ASCII: a look-alike character (a full-width digit, an
    Arabic-Indic digit that ``int()`` would take as a number, a zero-width space) is named."""
    if value is None or value.isascii():
        return
    bad = next(ch for ch in value if not ch.isascii())
    raise ConfigError(
        f"{flag} {_shown(value)} holds the character {bad!r} (U+{ord(bad):04X}); write numbers, names "
        f"and operators in ASCII"
    )


def check_user_kernel(args: argparse.Namespace) -> None:
    """``hipexplore bench --source/--header/--args/--grid/...``: the files readable UTF-8 text of a
    known kind, the expressions ASCII, before the kernel is built."""
    for flag, value in (
        ("--args", args.args),
        ("--grid", args.grid),
        ("--block", args.block),
        ("--shared-bytes", args.shared_bytes),
        ("--bytes-per-launch", args.bytes_per_launch),
        ("--entry", args.entry),
    ):
        ascii_text(value if isinstance(value, str) else None, flag)
    if args.entry is not None and not args.entry.strip():
        raise ConfigError(
            "--entry is empty; expected the kernel's function name (or leave --entry out: KERNEL is used)"
        )
    if args.source is not None:
        if not str(args.source).endswith(SOURCE_SUFFIXES):
            raise ConfigError(
                f"--source {_shown(args.source)} is not a kernel source file name; expected one ending in "
                f"{', '.join(SOURCE_SUFFIXES)} (.c is a host kernel)"
            )
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
        raise argparse.ArgumentTypeError(
            f"expected a fraction such as 0.02 or a percentage such as 2%, got {_shown(text)}"
        ) from None
    if not (math.isfinite(value) and 0 < value < 1):
        fix = (
            f"for {t}% give --threshold {t}% or {value / 100:g}"
            if not t.endswith("%") and 1 <= value < 100
            else "give e.g. --threshold 0.02 or --threshold 2%"
        )
        raise argparse.ArgumentTypeError(f"threshold must be a fraction in (0, 1), got {_shown(text)}: {fix}")
    return value


#: size units that are powers of ten (``parse_size``): ``1MB`` is 1,000,000 bytes, ``1MiB`` 1,048,576
DECIMAL_UNITS = {"kb": "KiB", "mb": "MiB", "gb": "GiB", "tb": "TiB"}


def decimal_sizes_line(sizes: list[str], flag: str = "--size") -> str | None:
    """One line naming the sizes given in decimal units (``1MB`` = 10**6 bytes) and their binary
    spelling, or None. Why: ``1MB`` was taken as 1,000,000 bytes without a word, and a reader of the
    table (which prints binary units) saw 976.6KiB where they meant 1 MiB."""
    import re

    from ..bench.spec_checks import parse_size

    said = []
    for text in sizes:
        m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT][bB])\s*", str(text))
        if m and m.group(2).lower() in DECIMAL_UNITS:
            binary = f"{m.group(1)}{DECIMAL_UNITS[m.group(2).lower()]}"
            said.append(f"{text.strip()} is {parse_size(text):,} bytes (not {binary}, {parse_size(binary):,})")
    if not said:
        return None
    return (
        f"{flag}: {'; '.join(said)}: kB, MB, GB and TB are powers of 10, KiB, MiB, GiB and TiB powers of 2 "
        f"(the table shows binary units)"
    )


def check_bench_values(args: argparse.Namespace, kernels: list, sizes: list[str], stop: object, fields: dict) -> None:
    """Every value of a ``bench`` command line, checked before a device opens or a compiler starts:
    the sweep's own spec is built from them (sizes, rotating counts, flush modes, units, every
    option: ``SweepSpec``'s one-line errors), and a GPU-only kernel asked to run on the host is
    named with its fix. A size in decimal units is said (``decimal_sizes_line``)."""
    import sys

    from ..bench.spec import spec_from_arguments
    from ..devices import parse_device

    parse_device(args.device)  # the name only: no device opens here

    rotating = [p.strip() for p in str(args.rotating).split(",") if p.strip()]
    flush = [p.strip() for p in str(args.flush).split(",") if p.strip()]
    spec = spec_from_arguments(
        kernels,
        sizes,
        rotating,
        flush,
        iterations=args.iterations,
        stop=stop if args.iterations is None else None,
        **fields,
    )
    counts = [r for r in spec.rotating if isinstance(r, int)]
    if args.iterations is not None and counts:  # 'auto' needs the device's LLC: the sweep checks it
        from ..bench.rotating import check_iterations

        check_iterations(int(args.iterations), max(counts))
    if args.cluster is None and str(args.device).partition(":")[0] == "host":
        for k in kernels:
            k.source_for("host")  # a .cu/.hip kernel on the host: one line that says what to do
    line = decimal_sizes_line(sizes)
    if line:
        print(f"hipexplore bench: {line}", file=sys.stderr)


def check_out_owner(out: str, resume: bool, others: bool, force: bool) -> None:
    """``bench --out`` in a folder others write too, before anything runs: resuming from another
    user's files needs ``--resume-from-others`` (``bench.io.check_owner``), and ``--no-resume`` does
    not replace another user's results (regular files: a link at the name is replaced, never
    followed, as any writer here does) without ``--force``."""
    import stat as st_mod

    from ..bench.io import check_owner, output_paths, units_path, user_name

    paths = output_paths(out)
    if resume:
        check_owner(paths, others)
        return
    if force:
        return
    for path in (*paths, units_path(paths)):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != os.geteuid() and st_mod.S_ISREG(st.st_mode):
            raise ConfigError(
                f"--out {_shown(out)}: {path.name} there is another user's ({user_name(st.st_uid)}) result, "
                f"and --no-resume would replace it; nothing was changed: use another out file, or pass "
                f"--force to replace their results"
            )
