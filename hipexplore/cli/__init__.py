"""The ``hipexplore`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function that sets ``func(args) -> int`` on its parser.

Errors from the library (``HipexploreError``) are printed to stderr as one clear line and give
exit status 2; a traceback only appears for bugs (or with ``HIPEXPLORE_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from typing import Sequence

from .. import settings
from ..errors import CacheWarning, HipexploreError

#: subcommand modules, in the order shown by --help
SUBCOMMANDS = (
    "info",
    "compile_cmd",
    "cache_cmd",
    "bench_cmd",
    "compare_cmd",
    "calibrate_cmd",
    "tune_cmd",
    "report_cmd",
    "lab_cmd",
)
#: subcommands that start another program: what follows the first ``--`` after the subcommand is that
#: program's, unparsed (``args.passthrough``): ``hipexplore lab -- --no-browser`` must not take
#: ``--no-browser`` for its own optional PATH, as argparse's ``--`` handling does
PASSTHROUGH = frozenset({"lab"})


class _Parser(argparse.ArgumentParser):
    """A bad command line is one line on stderr (not the whole usage block) and exit status 2.

    A value that starts with a minus and a digit (``--size -4KiB``, ``--min-time -1e3``) is a value:
    argparse's own rule takes only plain negative numbers as values, so ``-4KiB`` read as an unknown
    option and the one line said "expected one argument" instead of what is wrong with it (no
    option of hipexplore's starts with a digit; Python 3.13's argparse reads them so too)."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - argparse's own signature
        import re

        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``hipexplore`` parser. With ``argv`` (a command line), only the subcommand it names is
    built in full; every other subcommand is its name and one help line. Why: building a parser
    imports what its defaults come from (``bench``'s are ``SweepSpec``'s: the kernel catalog and
    the timing loop's module), and ``hipexplore --help`` or ``hipexplore compile`` must not pay for ``bench``'s.
    Without ``argv`` every subcommand is built (for callers that inspect the whole parser)."""
    from .. import __version__

    chosen = _chosen(argv)
    parser = _Parser(
        prog="hipexplore", description="Compile-cache and benchmark-noise evidence for GPU kernel reviews."
    )
    parser.add_argument("--version", action="version", version=f"hipexplore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a subcommand module not written yet must not break the others
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        if argv is None or mod.COMMAND == chosen:
            mod.register(sub)
        else:
            sub.add_parser(mod.COMMAND, help=mod.HELP)
    return parser


def _chosen(argv: Sequence[str] | None) -> str | None:
    """The subcommand a command line names: its first word that is not an option (the top-level
    parser's only options, --help and --version, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None) if argv is not None else None


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``argv`` up to the first ``--`` after a PASSTHROUGH subcommand, and what follows it (None for
    the other subcommands: their ``--`` is argparse's)."""
    chosen = _chosen(argv)
    if chosen not in PASSTHROUGH:
        return argv, None
    start = argv.index(chosen) + 1
    if "--" not in argv[start:]:
        return argv, []
    cut = argv.index("--", start)
    return argv[:cut], argv[cut + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    argv, passthrough = _split_passthrough(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if passthrough is not None:
        args.passthrough = passthrough
    _clean_leftovers()
    shown_as = warnings.formatwarning
    warnings.formatwarning = _warning_line(args.command)
    try:
        settings.check_all()  # every HIPEXPLORE_* value now, not when a worker first reads it
        return int(args.func(args) or 0)
    except HipexploreError as exc:
        if settings.DEBUG.get():
            raise
        print(f"hipexplore {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hipexplore {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `hipexplore ... --json | head`: the reader left, nothing to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    finally:
        warnings.formatwarning = shown_as


def _warning_line(command: str):
    """How the command line prints a warning: one line, ``hipexplore COMMAND: warning: ...``.
    Python's own format is two lines, the source file and line of the call and the source text
    of that line (``cache.py:321: RuntimeWarning: ...`` then ``  return self._lookup_...``): code,
    not a message. Only the printing changes: a warning is still a warning (filters, ``-W error``,
    and ``warnings.catch_warnings(record=True)`` around ``main()`` see it as before)."""

    def line(message, category, filename, lineno, line=None) -> str:  # noqa: ARG001 - formatwarning's signature
        text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
        kind = "" if category in (UserWarning, RuntimeWarning, CacheWarning) else f" ({category.__name__})"
        return f"hipexplore {command}: warning: {text}{kind}\n"

    line.one_line = True  # type: ignore[attr-defined] - errors.warn_line leaves it as it is
    return line


def _clean_leftovers() -> None:
    """What killed hipexplore processes left in the temp dir (build folders of dead pids, worker
    logs nobody holds): removed at the start of the next command. Never a reason to fail one."""
    try:
        from ..compile.leftovers import clean_dead_build_dirs

        clean_dead_build_dirs()
    except Exception:  # noqa: BLE001 - housekeeping only
        if settings.DEBUG.get():
            raise


def _one_line(exc: HipexploreError) -> str:
    """What the user sees. A crashed compiler worker's stderr (``Fatal Python error: Aborted`` and
    a stack dump) is not a message: it goes to a log file named in the line."""
    from ..errors import CompileError, CompilerCrashed

    if isinstance(exc, CompilerCrashed) and exc.log.strip():
        import tempfile

        fd, path = tempfile.mkstemp(prefix="hipexplore-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(exc.log)
        return f"{exc.headline()} (the worker's crash output is in {path}; HIPEXPLORE_DEBUG=1 shows it here)"
    text = str(exc).strip()
    if isinstance(exc, CompileError):  # the headline, then the compiler's own last diagnostic lines
        return text
    # one line, whatever the message quotes (a YAML parser's error marks, a value with a newline)
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
